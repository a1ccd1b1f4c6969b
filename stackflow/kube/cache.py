"""The informer cache: objects by (namespace, name) with a namespace index, and what it keeps.

Pure and synchronous. Only the owning informer task mutates a cache (``upsert``/``remove``), and
no method awaits, so readers on the same event loop always see a consistent state. Objects are
shared, not copied: treat what the cache returns as read-only.

What an informer keeps of each object is its ``Projection``, applied by ``project`` before the
object enters the cache or reaches a handler:

* ``WHOLE``: the object without ``metadata.managedFields`` (nobody reads them);
* ``METADATA``: ``apiVersion``, ``kind``, the metadata (without ``managedFields`` and the
  ``kubectl.kubernetes.io/last-applied-configuration`` annotation) and, under ``DIGEST_KEY``, a
  digest of everything else (the dropped annotation included). Two projections of an object differ
  exactly when the objects differ in something but ``managedFields``, so "did it meaningfully
  change" (``watchers.triggers``) reads the same on projections as on whole objects.

Both forms intern dictionary keys and the names, namespaces, labels and timestamps of the
metadata, so the thousands of objects of one kind share those strings.
"""

from __future__ import annotations

import enum
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from stackflow.models.keys import NamespacedName
from stackflow.models.objects import view

__all__ = [
    "DIGEST_KEY",
    "LAST_APPLIED_ANNOTATION",
    "CacheEvent",
    "EventType",
    "NamespaceView",
    "ObjectCache",
    "Projection",
    "content_digest",
    "is_projected",
    "metadata_projection",
    "object_key",
    "project",
    "relist_events",
    "whole_object",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
CacheEvent = tuple[EventType, dict[str, Any] | None, dict[str, Any] | None]
"""(event type, old, new): ADDED has no old, DELETED has no new."""

ObjectList = list[dict[str, Any]]


def object_key(obj: Mapping[str, Any]) -> NamespacedName:
    """The cache key of an object."""
    meta = view(obj)
    return NamespacedName(meta.namespace, meta.name)


# --- projections (pure) -------------------------------------------------------------------------


class Projection(enum.Enum):
    """What an informer keeps of each object (see the module docstring)."""

    WHOLE = "whole"
    METADATA = "metadata"


#: The top-level key under which a ``METADATA`` projection holds the digest of the rest.
DIGEST_KEY = "stackflow/digest"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
#: Set by the API server on every write; read by nobody here.
_MANAGED_FIELDS = "managedFields"
#: Metadata values shared by many objects (interned); uids and resourceVersions are unique.
_SHARED_METADATA_VALUES = frozenset(
    {"name", "namespace", "generateName", "creationTimestamp", "deletionTimestamp"}
)
_OWNER_SHARED_VALUES = frozenset({"apiVersion", "kind", "name"})
#: Strings up to this length inside whole objects are interned (versions, phases, names).
_INTERN_MAX_LENGTH = 64
_UNIQUE_METADATA_VALUES = frozenset({"uid", "resourceVersion"})
#: The top-level fields a ``METADATA`` projection keeps as they are (the rest goes in the digest).
_PROJECTION_KEEPS = frozenset({"apiVersion", "kind", "metadata"})


def _intern(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _interned_tree(value: Any) -> Any:
    """``value`` with every dict key, and every short string, interned (a copy)."""
    if isinstance(value, dict):
        return {_intern(key): _interned_tree(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interned_tree(item) for item in value]
    if type(value) is str and len(value) <= _INTERN_MAX_LENGTH:
        return sys.intern(value)
    return value


def _compact_metadata(metadata: Mapping[str, Any], *, keep_last_applied: bool) -> dict[str, Any]:
    """``metadata`` without ``managedFields`` (and, unless kept, the last-applied annotation),
    keys and shared values interned."""
    compact: dict[str, Any] = {}
    for key, value in metadata.items():
        if key == _MANAGED_FIELDS:
            continue
        if key in _SHARED_METADATA_VALUES:
            value = _intern(value)
        elif key == "labels" and isinstance(value, dict):
            value = {_intern(k): _intern(v) for k, v in value.items()}
        elif key == "annotations" and isinstance(value, dict):
            value = {
                _intern(k): v
                for k, v in value.items()
                if keep_last_applied or k != LAST_APPLIED_ANNOTATION
            }
            if not value:
                continue
        elif key == "ownerReferences" and isinstance(value, list):
            value = [
                {
                    _intern(k): _intern(v) if k in _OWNER_SHARED_VALUES else v
                    for k, v in owner.items()
                }
                if isinstance(owner, dict)
                else owner
                for owner in value
            ]
        elif key == "finalizers" and isinstance(value, list):
            value = [_intern(item) for item in value]
        elif key not in _UNIQUE_METADATA_VALUES:
            value = _interned_tree(value)
        compact[_intern(key)] = value
    return compact


def whole_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ``WHOLE`` form: ``obj`` without ``metadata.managedFields``, interned (a copy)."""
    whole: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "metadata" and isinstance(value, Mapping):
            whole["metadata"] = _compact_metadata(value, keep_last_applied=True)
        else:
            whole[_intern(key)] = _interned_tree(value)
    return whole


def content_digest(obj: Mapping[str, Any]) -> str:
    """A digest of everything of ``obj`` a ``METADATA`` projection drops: every top-level field
    but ``apiVersion``, ``kind`` and ``metadata``, and the last-applied annotation (pure)."""
    rest = {key: value for key, value in obj.items() if key not in _PROJECTION_KEEPS}
    last_applied = view(obj).annotations.get(LAST_APPLIED_ANNOTATION)
    if last_applied is not None:
        rest[LAST_APPLIED_ANNOTATION] = last_applied
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def metadata_projection(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ``METADATA`` form of ``obj``: identity, metadata and ``DIGEST_KEY`` (pure)."""
    projection: dict[str, Any] = {
        _intern(key): _intern(value)
        for key, value in obj.items()
        if key in _PROJECTION_KEEPS and key != "metadata"
    }
    projection["metadata"] = _compact_metadata(view(obj).metadata, keep_last_applied=False)
    projection[DIGEST_KEY] = content_digest(obj)
    return projection


def project(obj: Mapping[str, Any], projection: Projection) -> dict[str, Any]:
    """``obj`` in the form ``projection`` keeps (a new dict; ``obj`` is not changed)."""
    if projection is Projection.METADATA:
        return metadata_projection(obj)
    return whole_object(obj)


def is_projected(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is a ``METADATA`` projection rather than a whole object."""
    return DIGEST_KEY in obj


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return view(obj).labels


def _owner_uids(obj: Mapping[str, Any]) -> set[str]:
    return {owner.uid for owner in view(obj).owner_references if owner.uid}


def _resource_version(obj: Mapping[str, Any] | None) -> str:
    return view(obj).resource_version


def _add_to(index: dict[Any, set[NamespacedName]], index_key: Any, key: NamespacedName) -> None:
    index.setdefault(index_key, set()).add(key)


def _discard_from(
    index: dict[Any, set[NamespacedName]], index_key: Any, key: NamespacedName
) -> None:
    keys = index.get(index_key)
    if keys is None:
        return
    keys.discard(key)
    if not keys:
        # Empty buckets are dropped so that 10,000 short-lived namespaces don't leak memory.
        del index[index_key]


#: Namespace → its one key, or the set of its keys: most namespaces hold one object of a kind
#: (one Elasticsearch, one Kibana), and a set per namespace costs 216 bytes.
_NamespaceIndex = dict[str, NamespacedName | set[NamespacedName]]


def _add_to_namespace(index: _NamespaceIndex, namespace: str, key: NamespacedName) -> None:
    present = index.get(namespace)
    if present is None:
        index[namespace] = key
    elif isinstance(present, set):
        present.add(key)
    elif present != key:
        index[namespace] = {present, key}


def _discard_from_namespace(index: _NamespaceIndex, namespace: str, key: NamespacedName) -> None:
    present = index.get(namespace)
    if present is None:
        return
    if not isinstance(present, set):
        if present == key:
            del index[namespace]
        return
    present.discard(key)
    if len(present) == 1:
        index[namespace] = next(iter(present))
    elif not present:
        del index[namespace]


def _keys_of_namespace(index: _NamespaceIndex, namespace: str) -> Iterable[NamespacedName]:
    present = index.get(namespace)
    if present is None:
        return ()
    return present if isinstance(present, set) else (present,)


class ObjectCache:
    """Objects of one resource, indexed by namespace; by label (key=value) and by owner uid on
    demand (those two indexes are built at their first use and kept up to date from then on: the
    operator itself never asks, so they cost nothing)."""

    def __init__(self) -> None:
        """Start empty."""
        self._objects: dict[NamespacedName, dict[str, Any]] = {}
        self._by_namespace: _NamespaceIndex = {}
        self._by_label: dict[tuple[str, str], set[NamespacedName]] | None = None
        self._by_owner: dict[str, set[NamespacedName]] | None = None

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
        return self._objects.get(NamespacedName(namespace or "", name))

    def list(self, *, namespace: str | None = None) -> ObjectList:
        """All cached objects, or those of one namespace, sorted by (namespace, name)."""
        if namespace is None:
            keys: Iterable[NamespacedName] = self._objects.keys()
        else:
            keys = _keys_of_namespace(self._by_namespace, namespace)
        return [self._objects[key] for key in sorted(keys)]

    def by_label(self, key: str, value: str, *, namespace: str | None = None) -> ObjectList:
        """Objects labelled ``key=value`` (optionally in one namespace), sorted."""
        if self._by_label is None:
            self._by_label = {}
            for object_key_, obj in self._objects.items():
                self._index_labels(object_key_, obj)
        keys = self._by_label.get((key, value), set())
        return [
            self._objects[object_key_]
            for object_key_ in sorted(keys)
            if namespace is None or object_key_[0] == namespace
        ]

    def by_owner(self, uid: str) -> ObjectList:
        """Objects with an ownerReference to ``uid``, sorted."""
        if self._by_owner is None:
            self._by_owner = {}
            for object_key_, obj in self._objects.items():
                self._index_owners(object_key_, obj)
        return [self._objects[key] for key in sorted(self._by_owner.get(uid, set()))]

    def namespaces(self) -> set[str]:
        """Namespaces that hold at least one cached object."""
        return set(self._by_namespace)

    def snapshot(self) -> dict[NamespacedName, dict[str, Any]]:
        """A shallow copy of the key → object map."""
        return dict(self._objects)

    # Mutations: the owning informer only.

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store ``obj``, re-indexing it; returns the object it replaced."""
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        else:
            # A replaced object keeps its entry (and the dict its first key tuple, shared).
            _add_to_namespace(self._by_namespace, key[0], key)
        self._objects[key] = obj
        if self._by_label is not None:
            self._index_labels(key, obj)
        if self._by_owner is not None:
            self._index_owners(key, obj)
        return old

    def remove(self, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Drop an object; returns it, or None if it was not cached."""
        key = NamespacedName(namespace or "", name)
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            _discard_from_namespace(self._by_namespace, key[0], key)
        return old

    def _index_labels(self, key: NamespacedName, obj: Mapping[str, Any]) -> None:
        assert self._by_label is not None
        for label_key, label_value in _labels(obj).items():
            _add_to(self._by_label, (label_key, str(label_value)), key)

    def _index_owners(self, key: NamespacedName, obj: Mapping[str, Any]) -> None:
        assert self._by_owner is not None
        for uid in _owner_uids(obj):
            _add_to(self._by_owner, uid, key)

    def _unindex(self, key: NamespacedName, obj: Mapping[str, Any]) -> None:
        if self._by_label is not None:
            for label_key, label_value in _labels(obj).items():
                _discard_from(self._by_label, (label_key, str(label_value)), key)
        if self._by_owner is not None:
            for uid in _owner_uids(obj):
                _discard_from(self._by_owner, uid, key)


def relist_events(
    cached: Mapping[NamespacedName, dict[str, Any]], listed: Iterable[dict[str, Any]]
) -> list[CacheEvent]:
    """The events that turn the cached state into the listed one (after a relist).

    New objects → ADDED, a different resourceVersion → MODIFIED, gone → DELETED; unchanged
    objects yield nothing, so a relist neither loses nor duplicates a change. An object
    deleted and re-created under the same name (new uid) is a DELETED then an ADDED.
    """
    events: list[CacheEvent] = []
    seen: set[NamespacedName] = set()
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
