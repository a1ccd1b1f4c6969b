"""The informer cache: objects by (namespace, name) with namespace, label and owner indexes.

Pure and synchronous. Only the owning informer task mutates a cache (``upsert``/``remove``), and
no method awaits, so readers on the same event loop always see a consistent state. Objects are
shared, not copied: treat what the cache returns as read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from stackflow.models.objects import view

__all__ = [
    "CacheEvent",
    "EventType",
    "NamespaceView",
    "ObjectCache",
    "ObjectKey",
    "object_key",
    "relist_events",
]

ObjectKey = tuple[str, str]
"""(namespace, name); namespace ``""`` for cluster-scoped objects."""

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
CacheEvent = tuple[EventType, dict[str, Any] | None, dict[str, Any] | None]
"""(event type, old, new): ADDED has no old, DELETED has no new."""

ObjectList = list[dict[str, Any]]


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """The cache key of an object."""
    meta = view(obj)
    return (meta.namespace, meta.name)


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return view(obj).labels


def _owner_uids(obj: Mapping[str, Any]) -> set[str]:
    return {owner.uid for owner in view(obj).owner_references if owner.uid}


def _resource_version(obj: Mapping[str, Any] | None) -> str:
    return view(obj).resource_version


def _add_to(index: dict[Any, set[ObjectKey]], index_key: Any, key: ObjectKey) -> None:
    index.setdefault(index_key, set()).add(key)


def _discard_from(index: dict[Any, set[ObjectKey]], index_key: Any, key: ObjectKey) -> None:
    keys = index.get(index_key)
    if keys is None:
        return
    keys.discard(key)
    if not keys:
        # Empty buckets are dropped so that 10,000 short-lived namespaces don't leak memory.
        del index[index_key]


class ObjectCache:
    """Objects of one resource, indexed by namespace, by label (key=value) and by owner uid."""

    def __init__(self) -> None:
        """Start empty."""
        self._objects: dict[ObjectKey, dict[str, Any]] = {}
        self._by_namespace: dict[str, set[ObjectKey]] = {}
        self._by_label: dict[tuple[str, str], set[ObjectKey]] = {}
        self._by_owner: dict[str, set[ObjectKey]] = {}

    def __len__(self) -> int:
        """Number of cached objects."""
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        """Whether an object with this (namespace, name) key is cached."""
        return key in self._objects

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Iterate over a snapshot of the cached objects."""
        return iter(list(self._objects.values()))

    def get(self, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The cached object, or None."""
        return self._objects.get((namespace or "", name))

    def list(self, *, namespace: str | None = None) -> ObjectList:
        """All cached objects, or those of one namespace, sorted by (namespace, name)."""
        if namespace is None:
            keys: Iterable[ObjectKey] = self._objects.keys()
        else:
            keys = self._by_namespace.get(namespace, set())
        return [self._objects[key] for key in sorted(keys)]

    def by_label(self, key: str, value: str, *, namespace: str | None = None) -> ObjectList:
        """Objects labelled ``key=value`` (optionally in one namespace), sorted."""
        keys = self._by_label.get((key, value), set())
        return [
            self._objects[object_key_]
            for object_key_ in sorted(keys)
            if namespace is None or object_key_[0] == namespace
        ]

    def by_owner(self, uid: str) -> ObjectList:
        """Objects with an ownerReference to ``uid``, sorted."""
        return [self._objects[key] for key in sorted(self._by_owner.get(uid, set()))]

    def namespaces(self) -> set[str]:
        """Namespaces that hold at least one cached object."""
        return set(self._by_namespace)

    def snapshot(self) -> dict[ObjectKey, dict[str, Any]]:
        """A shallow copy of the key → object map."""
        return dict(self._objects)

    # Mutations: the owning informer only.

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store ``obj``, re-indexing it; returns the object it replaced."""
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        _add_to(self._by_namespace, key[0], key)
        for label_key, label_value in _labels(obj).items():
            _add_to(self._by_label, (label_key, str(label_value)), key)
        for uid in _owner_uids(obj):
            _add_to(self._by_owner, uid, key)
        return old

    def remove(self, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Drop an object; returns it, or None if it was not cached."""
        key = (namespace or "", name)
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: ObjectKey, obj: Mapping[str, Any]) -> None:
        _discard_from(self._by_namespace, key[0], key)
        for label_key, label_value in _labels(obj).items():
            _discard_from(self._by_label, (label_key, str(label_value)), key)
        for uid in _owner_uids(obj):
            _discard_from(self._by_owner, uid, key)


def relist_events(
    cached: Mapping[ObjectKey, dict[str, Any]], listed: Iterable[dict[str, Any]]
) -> list[CacheEvent]:
    """The events that turn the cached state into the listed one (after a relist).

    New objects → ADDED, a different resourceVersion → MODIFIED, gone → DELETED; unchanged
    objects yield nothing, so a relist neither loses nor duplicates a change. An object
    deleted and re-created under the same name (new uid) is a DELETED then an ADDED.
    """
    events: list[CacheEvent] = []
    seen: set[ObjectKey] = set()
    for obj in listed:
        key = object_key(obj)
        seen.add(key)
        old = cached.get(key)
        if old is None:
            events.append(("ADDED", None, obj))
        elif _uid(old) != _uid(obj):
            events.append(("DELETED", old, None))
            events.append(("ADDED", None, obj))
        elif _resource_version(old) != _resource_version(obj):
            events.append(("MODIFIED", old, obj))
    for key in sorted(set(cached) - seen):
        events.append(("DELETED", cached[key], None))
    return events


def _uid(obj: Mapping[str, Any]) -> str:
    return view(obj).uid


class NamespaceView:
    """A Namespace cache seen as ``stackflow.scope``'s ``NamespaceSource``."""

    def __init__(self, cache: ObjectCache) -> None:
        """Read namespaces from ``cache`` (fed by the cluster-wide Namespace informer)."""
        self._cache = cache

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of a cached Namespace, or None if it is unknown (or gone)."""
        namespace = self._cache.get(namespace=None, name=name)
        if namespace is None:
            return None
        return dict(_labels(namespace))

    def namespace_names(self) -> Iterable[str]:
        """Names of every cached Namespace, sorted."""
        return [key[1] for key in sorted(self._cache.snapshot())]
