"""Event history and watch fan-out of the store (reference §4.3).

The store calls :meth:`WatchHub.record` once per persisted write; the hub appends the change to a
bounded history (so a watch can start from an older resourceVersion) and hands it to every open
:class:`Watch` of the same storage key, translating selector transitions into ADDED/DELETED.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesim import errors
from kubesim.meta import ResourceTypeLike, json_copy, with_type_meta

StorageKey = tuple[str, str]
WatchEvent = dict[str, Any]


class LabelMatcher(Protocol):
    """What the watch needs of :class:`kubesim.selectors.LabelSelector`."""

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether the labels satisfy the selector."""
        ...


class FieldMatcher(Protocol):
    """What the watch needs of :class:`kubesim.selectors.FieldSelector`."""

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object satisfies the selector."""
        ...


@dataclass(frozen=True)
class Event:
    """A persisted change as listeners (controllers) see it; ``obj`` carries TypeMeta."""

    type: str
    rt: ResourceTypeLike
    obj: dict[str, Any]
    old: dict[str, Any] | None


class SharedEvent(dict[str, Any]):
    """A watch event queued to every watch that sees the same change; encoded at most once."""

    __slots__ = ("line",)

    def __init__(self, event_type: str, obj: dict[str, Any]) -> None:
        """``{"type": event_type, "object": obj}``."""
        super().__init__(type=event_type, object=obj)
        self.line: bytes | None = None


def event_line(event: WatchEvent, encode: Callable[[Any], bytes]) -> bytes:
    """``encode(event)`` plus a newline: one line of a watch stream.

    A :class:`SharedEvent` is encoded once and the bytes are reused by every watch stream.
    """
    if isinstance(event, SharedEvent):
        if event.line is None:
            event.line = encode(event) + b"\n"
        return event.line
    return encode(event) + b"\n"


@dataclass(frozen=True)
class HistoryEntry:
    """One retained change: stored (TypeMeta-less) object states and the RV of the write."""

    rv: int
    type: str
    key: StorageKey
    obj: dict[str, Any]
    old: dict[str, Any] | None
    # Served events built from this change, shared by every watch that receives the same one:
    # (event type, apiVersion, kind) → event. Fan-out then copies an object once, not per watch.
    served: dict[tuple[str, str, str], SharedEvent] = field(
        default_factory=dict, compare=False, repr=False
    )

    def event(self, event_type: str, rt: ResourceTypeLike) -> WatchEvent:
        """The ``event_type`` event of ``obj`` as served through ``rt`` (built once, then shared)."""
        cache_key = (event_type, rt.api_version, rt.kind)
        found = self.served.get(cache_key)
        if found is None:
            found = SharedEvent(event_type, with_type_meta(rt, self.obj))
            self.served[cache_key] = found
        return found


def object_matches(
    obj: Mapping[str, Any] | None,
    *,
    namespace: str | None,
    label_selector: LabelMatcher | None,
    field_selector: FieldMatcher | None,
) -> bool:
    """Whether a stored object is in a watch's or list's scope (namespace + selectors)."""
    if obj is None:
        return False
    meta = obj.get("metadata") or {}
    if namespace and meta.get("namespace") != namespace:
        return False
    if label_selector is not None and not label_selector.matches(meta.get("labels") or {}):
        return False
    return field_selector is None or field_selector.matches(obj)


def bookmark_event(
    rt: ResourceTypeLike, rv: int, *, initial_events_end: bool = False
) -> WatchEvent:
    """A BOOKMARK event; ``initial_events_end`` marks the end of a streaming list's snapshot."""
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {
        "type": "BOOKMARK",
        "object": {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata},
    }


@dataclass(eq=False)
class Watch:
    """One open watch: events are ``{"type", "object"}`` dicts in ``queue``; ``None`` ends it.

    Events of a change are shared by all the watches that receive them: consumers must treat
    queued events as read-only (serialize or copy them, never mutate).

    ``start_rv`` is the store's resourceVersion when the watch was opened (the RV of the
    initial-events bookmark of a streaming list).
    """

    rt: ResourceTypeLike
    key: StorageKey
    namespace: str | None
    label_selector: LabelMatcher | None
    field_selector: FieldMatcher | None
    start_rv: int
    #: Changes up to this resourceVersion are not delivered (a watch from a future RV).
    min_rv: int = 0
    hub: WatchHub | None = None
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)
    closed: bool = False

    def close(self) -> None:
        """Stop receiving events and wake a reader blocked on the queue."""
        if self.closed:
            return
        self.closed = True
        if self.hub is not None:
            self.hub.detach(self)
        self.queue.put_nowait(None)

    def take_ready(self, limit: int = 512) -> list[WatchEvent | None]:
        """Up to ``limit`` events already queued, without waiting (a stream writes them at once)."""
        ready: list[WatchEvent | None] = []
        while len(ready) < limit and not self.queue.empty():
            ready.append(self.queue.get_nowait())
        return ready

    def offer(self, entry: HistoryEntry) -> None:
        """Queue the event this change means for the watch, if any (selector transitions)."""
        if self.closed or entry.rv <= self.min_rv:
            return
        event = self.translate(entry)
        if event is not None:
            self.queue.put_nowait(event)

    def translate(self, entry: HistoryEntry) -> WatchEvent | None:
        """ADDED/MODIFIED/DELETED as seen through this watch's scope, or None when invisible."""
        if entry.type == "DELETED":
            return entry.event("DELETED", self.rt) if self._in_scope(entry.obj) else None
        now_in = self._in_scope(entry.obj)
        was_in = self._in_scope(entry.old)
        if now_in and was_in:
            return entry.event("MODIFIED", self.rt)
        if now_in:
            return entry.event("ADDED", self.rt)
        if was_in:
            # Stopped matching: the last matching state, stamped with the RV of this change.
            last = json_copy(entry.old) if entry.old is not None else {}
            last.setdefault("metadata", {})["resourceVersion"] = str(entry.rv)
            return self._event("DELETED", last)
        return None

    def _in_scope(self, obj: Mapping[str, Any] | None) -> bool:
        return object_matches(
            obj,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )

    def _event(self, event_type: str, obj: dict[str, Any]) -> WatchEvent:
        return {"type": event_type, "object": with_type_meta(self.rt, obj)}


class WatchHub:
    """Bounded event history plus the set of open watches, per storage key."""

    def __init__(self, *, history_window: int) -> None:
        """Keep at most ``history_window`` changes for watches that start from an older RV."""
        self._history: deque[HistoryEntry] = deque()
        self._window = max(1, history_window)
        # Every change with an RV above the floor is retained.
        self._floor = 0
        self._watches: dict[StorageKey, list[Watch]] = {}

    @property
    def floor(self) -> int:
        """The oldest resourceVersion a watch can still start from."""
        return self._floor

    def reset(self, *, floor: int) -> None:
        """Drop the history (after loading a state file): only RVs ≥ ``floor`` remain watchable."""
        self._history.clear()
        self._floor = floor

    def record(self, entry: HistoryEntry) -> None:
        """Retain a persisted change and fan it out to the open watches of its key."""
        if len(self._history) >= self._window:
            self._floor = self._history.popleft().rv
        self._history.append(entry)
        for watch in list(self._watches.get(entry.key, ())):
            watch.offer(entry)

    def open(
        self,
        watch: Watch,
        *,
        since_rv: int | None,
        current: Iterable[dict[str, Any]],
    ) -> Watch:
        """Fill ``watch`` with its start events and register it for live changes.

        ``since_rv`` None/0 → synthetic ADDED for the ``current`` objects; N → every retained
        change after N, or 410 Expired when changes after N are no longer retained.
        """
        if since_rv:
            if since_rv < self._floor:
                raise errors.expired(f"too old resource version: {since_rv} ({self._floor})")
            for entry in self._history:
                if entry.key == watch.key and entry.rv > since_rv:
                    watch.offer(entry)
        else:
            for obj in current:
                if watch._in_scope(obj):
                    watch.queue.put_nowait(watch._event("ADDED", obj))
        watch.hub = self
        self._watches.setdefault(watch.key, []).append(watch)
        return watch

    def detach(self, watch: Watch) -> None:
        """Forget a watch (it was closed)."""
        watches = self._watches.get(watch.key, [])
        if watch in watches:
            watches.remove(watch)

    def end_key(self, key: StorageKey) -> None:
        """End every watch of a storage key (its CRD was removed)."""
        for watch in list(self._watches.get(key, ())):
            watch.close()
        self._watches.pop(key, None)
