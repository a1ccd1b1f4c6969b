"""Informers: list, then watch, keeping an ``ObjectCache`` and calling handlers in order.

One informer per (resource, optional namespace) — or per resource over a fixed set of namespaces
(``namespaces``: one namespaced list and watch per namespace feeding one cache, as ECK's
multi-namespace cache does for a static ``namespaces`` list). The loop, per watched namespace:

1. LIST (all pages); diff against the cache and apply the differences as synthetic events
   (the first list is all ADDED; a relist emits only what changed, so nothing is lost or
   duplicated); remember the list's resourceVersion; mark the informer synced.
2. WATCH from that resourceVersion with bookmarks; apply each event, then call the handlers.
   A stream the server ends normally is re-opened from the last seen resourceVersion.
3. 410 Expired → back to 1. A dropped connection, a server that is down, any other error →
   wait (exponential backoff, capped) and re-watch from the last resourceVersion (or relist
   when the list itself failed).

Only the informer's tasks mutate its cache, and handlers run one after the other (the
namespaces' tasks take turns through a lock), so a handler sees events of each object in
resourceVersion order. A slow handler slows
the informer: hand work off to a queue rather than doing I/O inline.

Every listed or watched object is turned into the informer's ``projection``
(``stackflow.kube.cache.project``) before it is cached or handed to a handler, so handlers see
old and new states in the same form: whole objects (without ``managedFields``) or, for informers
that need no more, metadata and a digest. The Namespace informer keeps metadata only.

An informer with a label selector can ``follow`` the informer of every object of its kind
instead of listing and watching on its own: it then keeps the objects of that source the
selector matches (the same dicts: nothing is decoded or held twice) and turns the source's
events into its own, as the API server does for a selector watch (ADDED when an object starts
matching, DELETED when it stops).

A narrowed informer (``narrow``) still lists and watches every object of its kind (no label
selector can say what it needs), but caches and hands on only the objects its ``keeps`` predicate
accepts, decided on each object as it arrives: an object that stops being kept leaves as DELETED,
one that starts being kept (its next event) arrives as ADDED, and a kept object deleted before it
was ever cached is still handed on as DELETED (its owners learn it is gone). The unfiltered Secret
informer is narrowed so (``watchers.informers``): a cluster's unrelated Secrets are decoded as
they pass and dropped, not held.

An object that cannot be used (``stackflow.kube.decoding``: nested too deep, wrong shape, a watch
line too large) is quarantined: never cached nor handed on, reported once per version with one
log line (``informer.quarantined``) and one Warning event on it (reason ``Quarantined``), and the
watch resumes after it, so it is never replayed. A cached object that turns poison keeps its
cached state (it still exists); its deletion is still handed on; its next usable version arrives
as any change does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import structlog

from stackflow.kube import errors
from stackflow.kube.backoff import Backoff
from stackflow.kube.cache import (
    CacheEvent,
    EventType,
    NamespaceView,
    ObjectCache,
    Projection,
    object_key,
    project,
    relist_events,
)
from stackflow.kube.client import mark_informer_task
from stackflow.kube.decoding import QUARANTINED_KEY, Quarantined
from stackflow.kube.events import EventRecorder, InvolvedObject
from stackflow.kube.resources import ResourceClient
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import NAMESPACES, Kind
from stackflow.models.objects import view

__all__ = ["Backoff", "EventHandler", "Informer", "NamespaceInformer", "Projection", "Selects"]

EventHandler = Callable[
    [EventType, dict[str, Any] | None, dict[str, Any] | None], Awaitable[None] | None
]
"""``handler(event_type, old, new)``; may be sync or async."""

Selects = Callable[[Mapping[str, Any]], bool]
"""Whether an object belongs to a following informer (its label selector, evaluated locally)."""

_log = structlog.get_logger(__name__)

#: The reason of the Warning event recorded on an object the informers skip (``Quarantined``).
QUARANTINED_REASON = "Quarantined"

# One recorder per API client: two informers of one kind that skip the same object add to one
# Event's count rather than creating two.
_RECORDERS: weakref.WeakKeyDictionary[ResourceClient, EventRecorder] = weakref.WeakKeyDictionary()


def quarantine_message(quarantined: Quarantined) -> str:
    """The Warning event's message: what is wrong, and that the operator skips the object (pure)."""
    kind = quarantined.kind or "object"
    return (
        f"The operator cannot read this {kind} and skips it until it is fixed: "
        f"{quarantined.problem}"
    )


def _resource_version(obj: Mapping[str, Any] | None) -> str:
    return view(obj).resource_version


class Informer:
    """Keeps a cache of one resource (in one namespace or all) and dispatches its changes."""

    def __init__(
        self,
        client: ResourceClient,
        resource: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        watch_timeout_seconds: int = 300,
        backoff: Backoff | None = None,
        projection: Projection = Projection.WHOLE,
        namespaces: tuple[str, ...] | None = None,
    ) -> None:
        """Configure the informer; nothing runs until ``start()``.

        ``projection`` is what the cache keeps of each object (and what handlers receive); it
        may be changed until the informer starts. ``namespaces`` (of a namespaced kind, without
        ``namespace``) watches each of those namespaces instead of the whole cluster.
        """
        self.client = client
        self.resource = resource
        self.namespace = namespace if resource.namespaced else None
        self.namespaces = (
            tuple(sorted(set(namespaces)))
            if namespaces is not None and resource.namespaced and namespace is None
            else None
        )
        # The resourceVersion each watched namespace resumes from (a multi-namespace informer).
        self._namespace_versions: dict[str, str | None] = {}
        self._dispatching = asyncio.Lock()
        self.label_selector = label_selector
        self._projection = projection
        self.watch_timeout_seconds = watch_timeout_seconds
        self.backoff = backoff or Backoff()
        self.cache = ObjectCache()
        self.resource_version: str | None = None
        self.relist_count = 0
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._source: Informer | None = None
        self._selects: Selects | None = None
        self._keeps: Selects | None = None
        # Objects skipped as unusable: the resourceVersion and problem reported for each, so a
        # replayed event or a relist reports nothing twice.
        self._quarantined: dict[NamespacedName, tuple[str, str]] = {}
        self._log = _log.bind(resource=resource.group_resource, namespace=self.namespace or "")

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; add handlers before ``start()`` to see the initial ADDs."""
        self._handlers.append(handler)

    @property
    def projection(self) -> Projection:
        """What the cache keeps of each object."""
        return self._projection

    @projection.setter
    def projection(self, projection: Projection) -> None:
        if projection is self._projection:
            return
        if self._began or self._source is not None:
            raise RuntimeError(
                f"the {self.resource.group_resource} informer caches {self._projection.value}"
                f" objects already; ask for {projection.value} objects before it starts"
            )
        self._projection = projection

    @property
    def _began(self) -> bool:
        """Whether objects may have entered the cache already (its form is fixed then)."""
        return self._task is not None or self.resource_version is not None or self.has_synced

    @property
    def source(self) -> Informer | None:
        """The informer this one follows, if any."""
        return self._source

    def follow(self, source: Informer, selects: Selects) -> bool:
        """Take this informer's objects from ``source``, keeping those ``selects`` accepts,
        instead of listing and watching. False (and nothing changes) unless both watch the same
        kind in the same namespace (or all), keep the same projection, neither has started and
        the source follows nobody.

        A follower is synced when its source is; starting it starts the source; stopping it
        stops nothing (its source feeds it as long as it runs).
        """
        if (
            source is self
            or source.source is not None
            or self._source is not None
            or source.resource != self.resource
            or source.namespace != self.namespace
            or source.namespaces != self.namespaces
            or source.projection is not self._projection
            or self._began
            or source._began
        ):
            return False
        self._source, self._selects = source, selects
        source.add_handler(self._on_source_event)
        return True

    @property
    def narrowed(self) -> bool:
        """Whether the informer keeps only the objects a predicate accepts (``narrow``)."""
        return self._keeps is not None

    def narrow(self, keeps: Selects) -> bool:
        """Cache and hand on only the objects ``keeps`` accepts (read on each object as it is
        listed or watched; it may change its mind as what it depends on changes). False (and
        nothing changes) once the informer started or when it follows another.

        Its cache then cannot tell that an object does not exist: only an unnarrowed cache of
        every object can (``stackflow.kube.reader``).
        """
        if self._began or self._source is not None:
            return False
        self._keeps = keeps
        return True

    def _kept(self, obj: Mapping[str, Any]) -> bool:
        if self._keeps is None:
            return True
        try:
            return self._keeps(obj)
        except Exception:
            # Holding one object too many is harmless; missing a change is not.
            self._log.exception("informer.keeps_failed")
            return True

    @property
    def has_synced(self) -> bool:
        """Whether the first LIST has been applied to the cache (the source's, for a follower)."""
        if self._source is not None:
            return self._source.has_synced
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until the first LIST is applied (bound it with ``asyncio.timeout``)."""
        if self._source is not None:
            await self._source.wait_synced()
            return
        await self._synced.wait()

    def start(self) -> None:
        """Start the list/watch task (idempotent); after ``stop()`` it resumes the watch.

        A follower starts its source instead.
        """
        if self._source is not None:
            self._source.start()
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(
                self._run(), name=f"informer:{self.resource.group_resource}"
            )

    async def stop(self) -> None:
        """Stop the task and wait for it to end; the cache stays readable."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise

    async def __aenter__(self) -> Informer:
        """Start the informer."""
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop the informer."""
        await self.stop()

    def covers(self, namespace: str | None) -> bool:
        """Whether this informer's cache can tell about objects of ``namespace`` (None: all the
        namespaces the operator may see, which a multi-namespace informer watches every one of,
        as ECK's multi-namespace cache answers a cluster-wide list); a namespaced informer only
        knows its own."""
        if self.namespace is not None:
            return namespace == self.namespace
        if self.namespaces is not None:
            # Only once listed: a namespace just added has an empty cache that proves nothing.
            if namespace is None:
                return self._listed_all()
            return namespace in self.namespaces and namespace in self._namespace_versions
        return True

    async def change_namespaces(self, namespaces: tuple[str, ...]) -> None:
        """Watch ``namespaces`` from now on (a multi-namespace informer whose static list
        changed): the namespaces that stay resume their watches; an added one is listed (its
        objects arrive as ADDED events); a removed one's objects leave the cache without events
        (they were not deleted, the operator stops seeing them)."""
        if self.namespaces is None:
            raise ValueError("only a multi-namespace informer watches a list of namespaces")
        wanted = tuple(sorted(set(namespaces)))
        if wanted == self.namespaces:
            return
        running = self._task is not None
        await self.stop()
        for namespace in set(self.namespaces) - set(wanted):
            self._namespace_versions.pop(namespace, None)
            for obj in self.cache.list(namespace=namespace):
                key = object_key(obj)
                self.cache.remove(namespace=key[0], name=key[1])
        self.namespaces = wanted
        if running:
            self.start()

    async def _run(self) -> None:
        mark_informer_task()
        if self.namespaces is None:
            await self._run_one(self.namespace)
            return
        async with asyncio.TaskGroup() as group:
            for namespace in self.namespaces:
                group.create_task(self._run_one(namespace, multi=True))

    async def _run_one(self, namespace: str | None, *, multi: bool = False) -> None:
        # A restarted informer resumes watching from where it stopped; if that is too old
        # the server answers 410 and the relist below reconciles the cache.
        must_list = self._version_of(namespace, multi=multi) is None
        attempt = 0
        while True:
            try:
                if must_list:
                    await self._relist(namespace, multi=multi)
                    must_list = False
                    attempt = 0
                async for raw_event in self.client.watch(
                    self.resource,
                    namespace=namespace,
                    resource_version=self._version_of(namespace, multi=multi),
                    timeout_seconds=self.watch_timeout_seconds,
                    label_selector=self.label_selector,
                ):
                    attempt = 0
                    await self._on_watch_event(raw_event, namespace if multi else None)
            except errors.Gone as exc:
                self._log.info(
                    "informer.expired",
                    resource_version=self._version_of(namespace, multi=multi),
                    error=str(exc),
                )
                must_list = True
            except Exception as exc:
                delay = self.backoff.delay(attempt)
                attempt += 1
                self._log.warning("informer.retry", error=repr(exc), delay=delay, relist=must_list)
                await asyncio.sleep(delay)

    def _version_of(self, namespace: str | None, *, multi: bool) -> str | None:
        if multi:
            return self._namespace_versions.get(namespace or "")
        return self.resource_version

    def _remember_version(self, namespace: str | None, version: str | None) -> None:
        if namespace is None:
            self.resource_version = version
            return
        self._namespace_versions[namespace] = version
        # Non-None once anything was listed: the projection is fixed from then on.
        self.resource_version = self.resource_version or version

    async def _relist(self, namespace: str | None = None, *, multi: bool = False) -> None:
        listed = await self.client.list(
            self.resource,
            namespace=namespace if multi else self.namespace,
            label_selector=self.label_selector,
        )
        listed_before = self._listed_all() if multi else self.has_synced
        if listed_before:
            self.relist_count += 1
        items: list[dict[str, Any]] = listed["items"]
        unusable = [Quarantined.from_dict(entry) for entry in listed.pop(QUARANTINED_KEY, [])]
        if self._keeps is not None:
            # Before projecting: what is not kept is never projected nor held.
            items = [item for item in items if self._kept(item)]
            listed["items"] = items
        # In place, so each raw object is dropped as soon as its projection exists.
        for index, item in enumerate(items):
            items[index] = project(item, self._projection)
        cached = self.cache.snapshot()
        if multi:
            # This namespace's list says nothing about the other namespaces' objects.
            cached = {key: obj for key, obj in cached.items() if key[0] == namespace}
        still_unusable = {(entry.namespace, entry.name) for entry in unusable}
        for key in list(self._quarantined):
            # Gone or usable now; what is still unusable keeps its record (no second report).
            if (not multi or key[0] == namespace) and key not in still_unusable:
                del self._quarantined[key]
        for quarantined in unusable:
            await self._quarantine(quarantined)
            # An object that was usable before stays as it was, not DELETED: it still exists.
            kept = cached.get(NamespacedName(quarantined.namespace, quarantined.name))
            if kept is not None:
                items.append(kept)
        for event in relist_events(cached, items):
            await self._apply_and_dispatch(event)
        version = str(listed.get("metadata", {}).get("resourceVersion") or "") or None
        self._remember_version(namespace if multi else None, version)
        if not multi or self._listed_all():
            self._synced.set()

    def _listed_all(self) -> bool:
        """Whether every namespace of a multi-namespace informer has listed once."""
        return self.namespaces is not None and all(
            namespace in self._namespace_versions for namespace in self.namespaces
        )

    async def _on_watch_event(
        self, raw_event: Mapping[str, Any], namespace: str | None = None
    ) -> None:
        event_type = raw_event.get("type")
        unusable = raw_event.get(QUARANTINED_KEY)
        if isinstance(unusable, Mapping):
            await self._on_unusable(str(event_type or ""), Quarantined.from_dict(unusable))
            if unusable.get("resourceVersion"):
                self._remember_version(namespace, str(unusable["resourceVersion"]))
            return
        obj = raw_event.get("object")
        if not isinstance(obj, dict):
            return
        new_rv = _resource_version(obj)
        if event_type == "BOOKMARK":
            if new_rv:
                self._remember_version(namespace, new_rv)
            return
        key = object_key(obj)
        if self._quarantined.pop(key, None) is not None:
            self._log.info("informer.quarantine_lifted", name=key[1], object_namespace=key[0])
        cached = self.cache.get(namespace=key[0], name=key[1])
        kept = self._kept(obj)
        if event_type in ("ADDED", "MODIFIED") and not kept:
            if cached is not None:  # it stopped being kept: gone, as far as the handlers know
                await self._apply_and_dispatch(("DELETED", cached, None))
        elif event_type == "DELETED" and cached is None and kept and self._keeps is not None:
            # Kept, but not cached yet (it became wanted after its last change): still news.
            await self._apply_and_dispatch(("DELETED", project(obj, self._projection), None))
        elif event_type in ("ADDED", "MODIFIED"):
            if cached is not None and _resource_version(cached) == new_rv:
                pass  # already applied (a duplicate after a reconnect)
            elif cached is None:
                await self._apply_and_dispatch(("ADDED", None, project(obj, self._projection)))
            else:
                await self._apply_and_dispatch(("MODIFIED", cached, project(obj, self._projection)))
        elif event_type == "DELETED" and cached is not None:
            await self._apply_and_dispatch(("DELETED", cached, None))
        if new_rv:
            self._remember_version(namespace, new_rv)

    async def _on_unusable(self, event_type: str, quarantined: Quarantined) -> None:
        """A watched object that cannot be used: its deletion is still news; any other change
        quarantines it (the cached state, if any, stays: the object has not gone away)."""
        key = NamespacedName(quarantined.namespace, quarantined.name)
        if event_type == "DELETED" and quarantined.name:
            self._quarantined.pop(key, None)
            cached = self.cache.get(namespace=key[0], name=key[1])
            if cached is not None:
                await self._apply_and_dispatch(("DELETED", cached, None))
            return
        await self._quarantine(quarantined)

    async def _quarantine(self, quarantined: Quarantined) -> None:
        """Skip an unusable object: one log line and one Warning event on it per version."""
        if not quarantined.kind or not quarantined.api_version:
            quarantined = dataclasses.replace(
                quarantined,
                kind=quarantined.kind or self.resource.kind,
                api_version=quarantined.api_version or self.resource.api_version,
            )
        key = NamespacedName(quarantined.namespace, quarantined.name)
        seen = (quarantined.resource_version, quarantined.problem)
        if self._quarantined.get(key) == seen:
            return  # a replay of what was reported
        self._quarantined[key] = seen
        self._log.warning(
            "informer.quarantined",
            name=quarantined.name,
            object_namespace=quarantined.namespace,
            resource_version=quarantined.resource_version,
            problem=quarantined.problem,
        )
        if not quarantined.name:
            return  # nothing to attach an event to: the log line is the report
        involved = InvolvedObject(
            api_version=quarantined.api_version,
            kind=quarantined.kind,
            name=quarantined.name,
            namespace=quarantined.namespace,
            uid=quarantined.uid,
            resource_version=quarantined.resource_version,
        )
        try:
            await self._recorder().warning(
                involved, reason=QUARANTINED_REASON, message=quarantine_message(quarantined)
            )
        except Exception as error:
            # The log line above already says it; an event that cannot be written stops nothing.
            self._log.warning("informer.quarantine_event_failed", error=repr(error))

    def _recorder(self) -> EventRecorder:
        recorder = _RECORDERS.get(self.client)
        if recorder is None:
            recorder = EventRecorder(self.client, component="stackflow")
            _RECORDERS[self.client] = recorder
        return recorder

    def _on_source_event(
        self, event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> Awaitable[None] | None:
        """A source event, seen through the selector: what a selector watch would deliver."""
        assert self._selects is not None
        obj = new if new is not None else old
        if obj is None:
            return None
        key = object_key(obj)
        cached = self.cache.get(namespace=key[0], name=key[1])
        selected = new is not None and self._selects(new)
        if selected and cached is None:
            return self._apply_and_dispatch(("ADDED", None, new))
        if selected:
            return self._apply_and_dispatch(("MODIFIED", cached, new))
        if cached is not None:
            return self._apply_and_dispatch(("DELETED", cached, None))
        return None

    async def _apply_and_dispatch(self, event: CacheEvent) -> None:
        if self.namespaces is None:
            await self._apply_and_dispatch_now(event)
            return
        # The namespaces' watch tasks take turns: handlers never run concurrently.
        async with self._dispatching:
            await self._apply_and_dispatch_now(event)

    async def _apply_and_dispatch_now(self, event: CacheEvent) -> None:
        event_type, old, new = event
        if new is not None:
            self.cache.upsert(new)
        elif old is not None:
            key = object_key(old)
            self.cache.remove(namespace=key[0], name=key[1])
        for handler in self._handlers:
            try:
                result = handler(event_type, old, new)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                # A failing handler must not stop the informer nor starve the other handlers.
                self._log.exception("informer.handler_failed", event_type=event_type)


class NamespaceInformer(Informer):
    """The cluster-wide Namespace informer; it is also a ``stackflow.scope`` NamespaceSource."""

    def __init__(
        self,
        client: ResourceClient,
        *,
        watch_timeout_seconds: int = 300,
        backoff: Backoff | None = None,
    ) -> None:
        """Watch every Namespace (scope decisions need all of them, always), keeping metadata:
        names and labels are all the matcher and the flip rule read."""
        super().__init__(
            client,
            NAMESPACES,
            watch_timeout_seconds=watch_timeout_seconds,
            backoff=backoff,
            projection=Projection.METADATA,
        )
        self.view = NamespaceView(self.cache)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of a Namespace as last seen, or None if it is unknown."""
        return self.view.namespace_labels(name)

    def namespace_names(self) -> Iterable[str]:
        """Names of every Namespace currently known."""
        return self.view.namespace_names()
