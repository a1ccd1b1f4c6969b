"""The namespace lifecycle controller (reference §6): empty a Terminating namespace, then finalize it.

Objects are deleted normally, so ones with finalizers wait for their controllers; while anything is
left, ``status.conditions`` say what (as the real namespace controller words it).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    is_deleting,
    merged_condition,
    meta,
    name_of,
    namespace_of,
)
from kubesim.controllers.store_access import get_or_none, list_objects, namespaced_types, type_for
from kubesim.errors import StatusError
from kubesim.meta import now_rfc3339
from kubesim.resources import Registry
from kubesim.store import Store
from kubesim.store_kinds import NAMESPACE_FINALIZER

log = logging.getLogger(__name__)


def remaining_summary(
    remaining: Mapping[str, list[dict[str, Any]]],
) -> tuple[dict[str, int], dict[str, int]]:
    """Count leftover objects per group-resource and leftover finalizers per finalizer name."""
    counts = {resource: len(objs) for resource, objs in remaining.items() if objs}
    finalizers: dict[str, int] = {}
    for objs in remaining.values():
        for obj in objs:
            for finalizer in meta(obj).get("finalizers") or []:
                finalizers[str(finalizer)] = finalizers.get(str(finalizer), 0) + 1
    return counts, finalizers


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": "",
        "reason": reason,
        "message": message,
    }


def namespace_conditions(
    *,
    counts: Mapping[str, int],
    finalizers: Mapping[str, int],
    previous: list[dict[str, Any]],
    now: str,
) -> list[dict[str, Any]]:
    """The five deletion conditions the real namespace controller maintains while it works.

    ``counts`` keys are group-resources as the controller prints them (``configmaps.`` for core).
    """
    if counts:
        content = _condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: "
            + ", ".join(f"{r} has {n} resource instances" for r, n in sorted(counts.items())),
        )
    else:
        content = _condition(
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
        )
    if finalizers:
        finalizing = _condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: "
            + ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items())),
        )
    else:
        finalizing = _condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        )
    wanted = [
        _condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        _condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        _condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        content,
        finalizing,
    ]
    by_type = {c.get("type"): c for c in previous if isinstance(c, dict)}
    return [merged_condition(by_type.get(c["type"]), c, now=now) for c in wanted]


def printed_resource(rt: Any) -> str:
    """A group-resource as the namespace controller prints it: ``configmaps.`` / ``widgets.example.com``."""
    return f"{rt.plural}.{rt.group}"


class NamespaceController:
    """Reconciler keyed by namespace name."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self._terminating: set[str] = set()

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Namespaces being deleted, and Terminating namespaces whose content changed."""
        rt = event.rt
        if (rt.group, rt.plural) == ("", "namespaces"):
            name = name_of(event.obj)
            if event.type != "DELETED" and is_deleting(event.obj):
                self._terminating.add(name)
                return [name]
            self._terminating.discard(name)
            return []
        namespace = namespace_of(event.obj)
        if namespace in self._terminating and (event.type == "DELETED" or is_deleting(event.obj)):
            return [namespace]
        return []

    def reconcile(self, key: Hashable) -> None:
        """Delete what is left in the namespace; finalize it once nothing is."""
        name = str(key)
        ns_type = type_for(self._registry, "", "namespaces")
        if ns_type is None:
            return
        namespace = get_or_none(self._store, ns_type, None, name)
        if namespace is None or not is_deleting(namespace):
            return
        if NAMESPACE_FINALIZER not in ((namespace.get("spec") or {}).get("finalizers") or []):
            # Not (or no longer) this controller's to finalize: the real controller leaves such
            # a namespace Terminating until a second DELETE removes it.
            return
        remaining: dict[str, list[dict[str, Any]]] = {}
        for rt in namespaced_types(self._registry):
            for obj in list_objects(self._store, rt, name):
                if not is_deleting(obj):
                    self._delete(rt, name, name_of(obj))
            left = list_objects(self._store, rt, name)
            if left:
                remaining[printed_resource(rt)] = left
        if not remaining:
            self._store.finalize_namespace(name)
            return
        counts, finalizers = remaining_summary(remaining)
        status = namespace.setdefault("status", {})
        previous = list(status.get("conditions") or [])
        conditions = namespace_conditions(
            counts=counts, finalizers=finalizers, previous=previous, now=now_rfc3339()
        )
        if conditions != previous:
            status["conditions"] = conditions
            self._store.update(ns_type, namespace, namespace=None, name=name, subresource="status")

    def _delete(self, rt: Any, namespace: str, name: str) -> None:
        try:
            self._store.delete(rt, namespace, name, propagation=None, preconditions=None)
        except StatusError as err:
            if err.code != 404:
                log.warning("namespace controller: delete %s/%s: %s", namespace, name, err)
