"""Versioned object storage under the store: what etcd and the watch cache are to the real server.

:class:`ObjectStorage` keeps the stored objects per storage key (version-independent, without
TypeMeta), the global resourceVersion counter, the event history with the open watches, the write
listeners, the server-side apply configurations and the state file. It applies no object rule:
:class:`kubesim.store.Store` decides what to write and calls :meth:`ObjectStorage.commit`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubesim.meta import ResourceTypeLike, json_copy, with_type_meta
from kubesim.store_index import SortedKeys
from kubesim.watch import Event, HistoryEntry, StorageKey, Watch, WatchHub

_log = logging.getLogger(__name__)
ObjectKey = tuple[str, str]
Listener = Callable[[Event], None]
# (group, plural, namespace, name, field manager) of an applied configuration.
AppliedKey = tuple[str, str, str, str, str]


def storage_key(rt: ResourceTypeLike) -> StorageKey:
    """Where objects of ``rt`` live: ``rt.storage_key`` when the type defines one."""
    key = getattr(rt, "storage_key", None)
    if key:
        return (str(key[0]), str(key[1]))
    return (rt.group, rt.plural)


def rv_of(obj: dict[str, Any]) -> str:
    """The ``metadata.resourceVersion`` of an object ("" when unset)."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class ObjectStorage:
    """Objects per storage key, the global resourceVersion, history, watches and listeners."""

    def __init__(self, *, history_window: int = 1000) -> None:
        """Empty storage keeping ``history_window`` changes for watches started from an old RV."""
        self._objects: dict[StorageKey, dict[ObjectKey, dict[str, Any]]] = {}
        self._sorted_keys = SortedKeys()
        self._rv = 0
        self._hub = WatchHub(history_window=history_window)
        self._listeners: list[Listener] = []
        # Server-side apply: each field manager's last applied configuration, per object.
        self._applied: dict[AppliedKey, dict[str, Any]] = {}

    # ----------------------------------------------------------------- reads

    @property
    def resource_version(self) -> int:
        """The RV of the last committed write."""
        return self._rv

    def bucket(self, key: StorageKey) -> Mapping[ObjectKey, dict[str, Any]]:
        """The stored objects of ``key`` by (namespace, name): live objects, never to be mutated."""
        return self._objects.get(key, {})

    def keys_in_order(self, key: StorageKey, namespace: str | None) -> list[ObjectKey]:
        """The bucket's object keys sorted by (namespace, name); only ``namespace``'s when given."""
        return self._sorted_keys.in_order(key, self._objects.get(key, {}), namespace)

    # --------------------------------------------------------------- watches

    def open_watch(self, watch: Watch, *, since_rv: int | None) -> Watch:
        """Register ``watch`` (see :meth:`kubesim.watch.WatchHub.open`) over its key's objects."""
        bucket = self._objects.get(watch.key, {})
        current = [bucket[k] for k in self.keys_in_order(watch.key, watch.namespace)]
        return self._hub.open(watch, since_rv=since_rv, current=current)

    def end_watches(self, key: StorageKey) -> None:
        """End every open watch of ``key`` (its kind is no longer served)."""
        self._hub.end_key(key)

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` synchronously after every committed write."""
        self._listeners.append(listener)

    # ---------------------------------------------------------------- writes

    def commit(
        self,
        rt: ResourceTypeLike,
        key: StorageKey,
        new: dict[str, Any],
        old: dict[str, Any] | None,
        event_type: str,
    ) -> dict[str, Any]:
        """Persist ``new`` (keep it, or remove it for ``DELETED``) at the next resourceVersion.

        The change goes to the history and the open watches, then to the listeners. ``new`` is
        kept as is (the caller hands over its copy) and returned with its new resourceVersion.
        """
        self._rv += 1
        meta = new["metadata"]
        meta["resourceVersion"] = str(self._rv)
        object_key = (str(meta.get("namespace") or ""), str(meta["name"]))
        bucket = self._objects.setdefault(key, {})
        if event_type == "DELETED":
            bucket.pop(object_key, None)
            self._sorted_keys.invalidate(key)
            if self._applied:
                self._applied = {
                    k: v
                    for k, v in self._applied.items()
                    if (k[0], k[1], k[2], k[3]) != (*key, *object_key)
                }
        else:
            if object_key not in bucket:
                self._sorted_keys.invalidate(key)
            bucket[object_key] = new
        self._hub.record(HistoryEntry(self._rv, event_type, key, new, old))
        if self._listeners:
            event = Event(
                event_type,
                rt,
                with_type_meta(rt, new),
                with_type_meta(rt, old) if old is not None else None,
            )
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:  # a broken controller must not undo a persisted write
                    _log.exception("store listener failed")
        return new

    def drop_bucket(self, key: StorageKey) -> None:
        """Forget every object of ``key`` without events (the CRD serving them is going away)."""
        self._objects.pop(key, None)
        self._sorted_keys.invalidate(key)

    # ---------------------------------------------------- applied configurations

    def last_applied(self, key: AppliedKey) -> dict[str, Any] | None:
        """A copy of the configuration stored under ``key``, or None."""
        found = self._applied.get(key)
        return json_copy(found) if found is not None else None

    def set_last_applied(self, key: AppliedKey, applied: dict[str, Any]) -> None:
        """Keep a copy of ``applied`` under ``key`` until the object is deleted."""
        self._applied[key] = json_copy(applied)

    # ------------------------------------------------------------ state file

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every object and the RV counter to a JSON state file (atomically), readable by
        its owner only: it holds every Secret's data."""
        state = {
            "resourceVersion": self._rv,
            "objects": [
                {"group": key[0], "plural": key[1], "object": obj}
                for key, bucket in sorted(self._objects.items())
                for _, obj in sorted(bucket.items())
            ],
            "lastApplied": [
                [*k, v] for k, v in sorted(self._applied.items(), key=lambda kv: kv[0])
            ],
        }
        target = Path(path)
        temporary = target.with_name(target.name + ".tmp")
        _write_owner_only(temporary, json.dumps(state, separators=(",", ":")))
        os.replace(temporary, target)

    def forget_history(self) -> None:
        """Drop the event history: watches may only start from the current resourceVersion on."""
        self._hub.reset(floor=self._rv)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Replace the state with a state file's.

        The event history is not saved: watches may only start from the loaded RV on.
        """
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        self._objects = {}
        self._sorted_keys.clear()
        for entry in state["objects"]:
            obj = entry["object"]
            meta = obj.get("metadata") or {}
            bucket = self._objects.setdefault((entry["group"], entry["plural"]), {})
            bucket[(meta.get("namespace") or "", meta["name"])] = obj
        self._applied = {
            (str(g), str(p), str(ns), str(n), str(m)): applied
            for g, p, ns, n, m, applied in state.get("lastApplied", [])
        }
        self._rv = int(state["resourceVersion"])
        self._hub.reset(floor=self._rv)


def _write_owner_only(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` with mode 0600, also when ``path`` exists with a wider mode
    (a leftover temporary file): the mode is set on the open descriptor before any byte."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(text)
