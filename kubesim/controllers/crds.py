"""CRD cleanup (reference §7): a deleted CRD first deletes its custom resources, then goes away.

The store marks the CRD (finalizer ``customresourcecleanup.apiextensions.k8s.io``, condition
``Terminating``); this controller deletes every CR normally — ones with finalizers wait for their
controllers — and calls ``store.finish_crd_deletion`` once none is left.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from kubesim.controllers.base import EventLike, is_deleting, meta, name_of, namespace_of
from kubesim.controllers.store_access import get_or_none, list_objects, type_for
from kubesim.errors import StatusError
from kubesim.resources import Registry
from kubesim.store import Store
from kubesim.store_kinds import CRD_CLEANUP_FINALIZER

log = logging.getLogger(__name__)

CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


def crd_name_for(rt: Any) -> str:
    """The name of the CRD serving a custom resource type: ``<plural>.<group>``."""
    return f"{rt.plural}.{rt.group}"


def crd_needs_cleanup(crd: Mapping[str, Any]) -> bool:
    """True for a CRD being deleted that still holds the cleanup finalizer."""
    return is_deleting(crd) and CRD_CLEANUP_FINALIZER in (meta(crd).get("finalizers") or [])


class CrdCleanupController:
    """Reconciler keyed by CRD name."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self._terminating: set[str] = set()

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Terminating CRDs, and the CRD of a custom resource that went away or is being deleted."""
        rt = event.rt
        if (rt.group, rt.plural) == CRDS:
            name = name_of(event.obj)
            if event.type != "DELETED" and crd_needs_cleanup(event.obj):
                self._terminating.add(name)
                return [name]
            self._terminating.discard(name)
            return []
        if getattr(rt, "custom", False) and crd_name_for(rt) in self._terminating:
            return [crd_name_for(rt)]
        return []

    def reconcile(self, key: Hashable) -> None:
        """Delete the CRD's remaining custom resources; finish the CRD once none is left."""
        name = str(key)
        crd_type = type_for(self._registry, *CRDS)
        if crd_type is None:
            return
        crd = get_or_none(self._store, crd_type, None, name)
        if crd is None or not crd_needs_cleanup(crd):
            return
        group = str((crd.get("spec") or {}).get("group", ""))
        plural = str(((crd.get("spec") or {}).get("names") or {}).get("plural", ""))
        cr_type = type_for(self._registry, group, plural)
        if cr_type is not None:
            for obj in list_objects(self._store, cr_type, None):
                if not is_deleting(obj):
                    self._delete(cr_type, namespace_of(obj), name_of(obj))
            if list_objects(self._store, cr_type, None):
                return
        self._store.finish_crd_deletion(name)

    def _delete(self, rt: Any, namespace: str | None, name: str) -> None:
        try:
            self._store.delete(rt, namespace, name, propagation=None, preconditions=None)
        except StatusError as err:
            if err.code != 404:
                log.warning("crd cleanup: delete %s/%s: %s", namespace, name, err)
