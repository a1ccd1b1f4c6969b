"""The garbage collector (reference §10.2.3): ownerReference-driven cascading deletion.

Owner identity is the uid. The collector keeps an in-memory graph (uid → object, owner uid →
dependents) updated synchronously from store events, and decides per dependent with the pure
:func:`classify_ref` / :func:`decide_dependent`; the thin :class:`GarbageCollector` applies those
decisions through the store.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    is_deleting,
    meta,
    name_of,
    namespace_of,
    owner_refs,
    uid_of,
)
from kubesim.controllers.store_access import get_or_none
from kubesim.errors import StatusError
from kubesim.resources import Registry
from kubesim.store import Store

log = logging.getLogger(__name__)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


class RefState(StrEnum):
    """How one ownerReference of a dependent resolves."""

    LIVE = "live"  # the owner exists and is not waiting for its dependents
    DANGLING = "dangling"  # no object with that uid (or it has another name / namespace)
    WAITING = "waiting"  # the owner is being deleted in the foreground
    UNRESOLVABLE = (
        "unresolvable"  # unknown kind, or a cluster-scoped dependent of a namespaced kind
    )


@dataclass(frozen=True)
class Owner:
    """What the collector knows about a live object that others may reference."""

    name: str
    namespace: str | None
    foreground: bool


@dataclass(frozen=True)
class DependentAction:
    """What to do with one dependent: nothing, delete it, or keep only some references."""

    action: str  # "none" | "delete" | "strip"
    propagation: str | None = None
    keep_refs: tuple[dict[str, Any], ...] = ()


NOTHING = DependentAction("none")


def classify_ref(
    ref: Mapping[str, Any],
    *,
    dependent_namespace: str | None,
    owner_namespaced: bool | None,
    owner: Owner | None,
) -> RefState:
    """Resolve one ownerReference; ``owner_namespaced`` is None when the kind is unknown."""
    if owner_namespaced is None:
        return RefState.UNRESOLVABLE
    if dependent_namespace is None and owner_namespaced:
        # The real collector emits OwnerRefInvalidNamespace and deletes nothing.
        return RefState.UNRESOLVABLE
    if owner is None or owner.name != ref.get("name"):
        return RefState.DANGLING
    if owner_namespaced and owner.namespace != dependent_namespace:
        return RefState.DANGLING
    return RefState.WAITING if owner.foreground else RefState.LIVE


def decide_dependent(
    refs: list[dict[str, Any]], states: list[RefState], *, has_dependents: bool
) -> DependentAction:
    """The collector's verdict for a dependent whose references resolve to ``states``.

    Solid owners (live or unresolvable) keep it: only dangling / waiting references are stripped.
    Without solid owners it is deleted — in the foreground when an owner waits for it and it has
    dependents of its own, otherwise with its own policy (background by default).
    """
    if not refs:
        return NOTHING
    solid = [
        r for r, s in zip(refs, states, strict=True) if s in (RefState.LIVE, RefState.UNRESOLVABLE)
    ]
    if solid:
        if len(solid) == len(refs):
            return NOTHING
        return DependentAction("strip", keep_refs=tuple(solid))
    if RefState.WAITING in states and has_dependents:
        return DependentAction("delete", propagation="Foreground")
    return DependentAction("delete")


def without_owner(refs: list[dict[str, Any]], owner_uid: str) -> list[dict[str, Any]]:
    """``refs`` minus every reference to ``owner_uid`` (orphaning)."""
    return [r for r in refs if r.get("uid") != owner_uid]


def blocks_owner(ref: Mapping[str, Any]) -> bool:
    """True when the reference has ``blockOwnerDeletion: true``."""
    return ref.get("blockOwnerDeletion") is True


@dataclass
class _Node:
    rt: Any
    namespace: str | None
    name: str
    owners: frozenset[str]
    foreground: bool = False
    orphan: bool = False
    dependents: set[str] = field(default_factory=set)


class GarbageCollector:
    """Reconciler keyed by ``("dependent", uid)`` and ``("owner", uid)``."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        self._nodes: dict[str, _Node] = {}
        # Dependents may be seen before their owner's node exists (or after it is gone).
        self._dependents: dict[str, set[str]] = {}

    def prime(self, objects: Iterable[tuple[Any, dict[str, Any]]]) -> list[Hashable]:
        """Index already-stored objects at start; returns the keys that need a first look."""
        keys: list[Hashable] = []
        for rt, obj in objects:
            keys.extend(self._upsert(rt, obj, None))
        return keys

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Update the graph and name the dependents / owners affected by ``event``."""
        uid = uid_of(event.obj)
        if event.type == "DELETED":
            node = self._nodes.pop(uid, None)
            keys: list[Hashable] = [("dependent", d) for d in sorted(self._dependents.get(uid, ()))]
            if node is not None:
                for owner_uid in node.owners:
                    self._dependents.get(owner_uid, set()).discard(uid)
                    keys.extend(self._waiting_owner_key(owner_uid))
            return keys
        return self._upsert(event.rt, event.obj, event.old)

    def _upsert(self, rt: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Hashable]:
        uid = uid_of(obj)
        finalizers = meta(obj).get("finalizers") or []
        deleting = is_deleting(obj)
        owners = frozenset(str(r.get("uid", "")) for r in owner_refs(obj))
        previous = self._nodes.get(uid)
        node = _Node(
            rt=rt,
            namespace=namespace_of(obj),
            name=name_of(obj),
            owners=owners,
            foreground=deleting and FOREGROUND in finalizers,
            orphan=deleting and ORPHAN in finalizers,
        )
        self._nodes[uid] = node
        keys: list[Hashable] = []
        removed_owners = (previous.owners - owners) if previous is not None else frozenset()
        for owner_uid in owners:
            self._dependents.setdefault(owner_uid, set()).add(uid)
        for owner_uid in removed_owners:
            self._dependents.get(owner_uid, set()).discard(uid)
            keys.extend(self._waiting_owner_key(owner_uid))
        if owners and (previous is None or previous.owners != owners or old is None):
            keys.append(("dependent", uid))
        if node.foreground or node.orphan:
            keys.append(("owner", uid))
        if node.foreground and (previous is None or not previous.foreground):
            # Dependents now see a waiting owner: they may have to go.
            keys.extend(("dependent", d) for d in sorted(self._dependents.get(uid, ())))
        return keys

    def _waiting_owner_key(self, owner_uid: str) -> list[Hashable]:
        owner = self._nodes.get(owner_uid)
        return [("owner", owner_uid)] if owner and (owner.foreground or owner.orphan) else []

    def reconcile(self, key: Hashable) -> None:
        """Handle one dependent or one owner in foreground / orphan deletion."""
        assert isinstance(key, tuple)
        role, uid = key
        if role == "dependent":
            self._reconcile_dependent(uid)
        else:
            self._reconcile_owner(uid)

    def _live(self, uid: str) -> dict[str, Any] | None:
        node = self._nodes.get(uid)
        if node is None:
            return None
        obj = get_or_none(self._store, node.rt, node.namespace, node.name)
        return obj if obj is not None and uid_of(obj) == uid else None

    def _states(self, obj: dict[str, Any]) -> list[RefState]:
        registry = self._registry
        states = []
        for ref in owner_refs(obj):
            rt = registry.by_kind(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
            node = self._nodes.get(str(ref.get("uid", "")))
            owner = Owner(node.name, node.namespace, node.foreground) if node else None
            states.append(
                classify_ref(
                    ref,
                    dependent_namespace=namespace_of(obj),
                    owner_namespaced=None if rt is None else bool(rt.namespaced),
                    owner=owner,
                )
            )
        return states

    def _reconcile_dependent(self, uid: str) -> None:
        obj = self._live(uid)
        if obj is None:
            return
        node = self._nodes[uid]
        refs = owner_refs(obj)
        verdict = decide_dependent(
            refs, self._states(obj), has_dependents=bool(self._dependents.get(uid))
        )
        if verdict.action == "strip":
            kept = list(verdict.keep_refs)
            self._write_refs(node, obj, kept)
        elif verdict.action == "delete" and not is_deleting(obj):
            log.debug("gc: deleting %s/%s", node.namespace, node.name)
            self._delete(node, uid, propagation=verdict.propagation)

    def _delete(self, node: _Node, uid: str, *, propagation: str | None) -> None:
        try:
            self._store.delete(
                node.rt,
                node.namespace,
                node.name,
                propagation=propagation,
                preconditions={"uid": uid},
            )
        except StatusError as err:
            if err.code not in (404, 409):
                raise

    def _write_refs(self, node: _Node, obj: dict[str, Any], refs: list[dict[str, Any]]) -> None:
        metadata = obj.setdefault("metadata", {})
        if refs:
            metadata["ownerReferences"] = refs
        else:
            metadata.pop("ownerReferences", None)
        self._store.update(node.rt, obj, namespace=node.namespace, name=node.name)

    def _reconcile_owner(self, uid: str) -> None:
        owner = self._live(uid)
        if owner is None or not is_deleting(owner):
            return
        node = self._nodes[uid]
        finalizers: list[str] = list(meta(owner).get("finalizers") or [])
        if ORPHAN in finalizers:
            for dependent_uid in sorted(self._dependents.get(uid, ())):
                dependent = self._live(dependent_uid)
                if dependent is not None and any(
                    r.get("uid") == uid for r in owner_refs(dependent)
                ):
                    self._write_refs(
                        self._nodes[dependent_uid],
                        dependent,
                        without_owner(owner_refs(dependent), uid),
                    )
            self._remove_finalizer(node, uid, ORPHAN)
        elif FOREGROUND in finalizers:
            for dependent_uid in sorted(self._dependents.get(uid, ())):
                self._reconcile_dependent(dependent_uid)
            if not self._blocking_dependents(uid):
                self._remove_finalizer(node, uid, FOREGROUND)

    def _blocking_dependents(self, owner_uid: str) -> list[str]:
        blocking = []
        for dependent_uid in sorted(self._dependents.get(owner_uid, ())):
            dependent = self._live(dependent_uid)
            if dependent is None:
                continue
            for ref, state in zip(owner_refs(dependent), self._states(dependent), strict=True):
                if ref.get("uid") == owner_uid and state is RefState.WAITING and blocks_owner(ref):
                    blocking.append(dependent_uid)
        return blocking

    def _remove_finalizer(self, node: _Node, uid: str, finalizer: str) -> None:
        owner = self._live(uid)
        if owner is None:
            return
        metadata = owner["metadata"]
        metadata["finalizers"] = [f for f in metadata.get("finalizers") or [] if f != finalizer]
        self._store.update(node.rt, owner, namespace=node.namespace, name=node.name)
