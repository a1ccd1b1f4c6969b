"""Kubernetes Events (core/v1), recorded and aggregated like client-go's ``record.EventRecorder``.

An event is identified by (involvedObject, reason, message, type, source): the first occurrence
creates an Event named ``<object name>.<hex unix nanos>`` in the object's namespace; a repeat
patches that Event's ``count`` and ``lastTimestamp`` instead of creating a new one (client-go's
``EventCorrelator``). The correlation cache is in process memory, bounded (LRU) and only an
optimisation: after a restart the next occurrence simply creates a new Event, as client-go does.
"""

from __future__ import annotations

import logging
import socket
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from stackflow.kube import errors
from stackflow.kube.protocols import Creates, MergePatches
from stackflow.models.kinds import EVENTS
from stackflow.models.objects import view

__all__ = [
    "EVENT_ACTION_ACCESS_CHECK",
    "EVENT_ACTION_ASSOCIATION_CONFIGURATION",
    "EVENT_ASSOCIATION_ERROR",
    "EVENT_STATUS_CHANGE",
    "EventRecorder",
    "EventType",
    "EventWriter",
    "InvolvedObject",
    "event_name",
    "format_time",
]

logger = logging.getLogger("stackflow.kube.events")

DEFAULT_CACHE_SIZE = 4096

# ECK's event reasons and actions that several controllers record (``pkg/controller/common/events``).
#: A reference that cannot be resolved (associations, AutoOps, remote clusters).
EVENT_ASSOCIATION_ERROR = "AssociationError"
#: An association's status changed.
EVENT_STATUS_CHANGE = "AssociationStatusChange"
#: The action of the Warning recorded when a ref's ServiceAccount may not get its target.
EVENT_ACTION_ACCESS_CHECK = "AccessCheck"
#: ECK's action of an association not configured yet (``EventActionAssociationConfiguration``).
EVENT_ACTION_ASSOCIATION_CONFIGURATION = "AssociationConfiguration"


class EventType(StrEnum):
    """The two event types Kubernetes knows."""

    NORMAL = "Normal"
    WARNING = "Warning"


class EventWriter(Creates, MergePatches, Protocol):
    """The writes the recorder needs (``ResourceClient``, ``ScopedClient`` or ``UnscopedClient``)."""


@dataclass(frozen=True)
class InvolvedObject:
    """The object an event is about (core/v1 ``ObjectReference``)."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> InvolvedObject:
        """The reference to a Kubernetes object as read from the API (a dict)."""
        meta = view(obj)
        return cls(
            api_version=meta.api_version,
            kind=meta.kind,
            name=meta.name,
            namespace=meta.namespace,
            uid=meta.uid,
            resource_version=meta.resource_version,
        )

    def to_api(self) -> dict[str, str]:
        """The ``involvedObject`` field, without empty keys."""
        fields = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }
        return {key: value for key, value in fields.items() if value}


def format_time(instant: datetime) -> str:
    """A ``metav1.Time``: RFC 3339 in UTC, whole seconds."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_name(object_name: str, unix_nanos: int) -> str:
    """client-go's Event name: ``<object name>.<unix nanos in hex>``."""
    return f"{object_name}.{unix_nanos:x}"


# (apiVersion, kind, namespace, name, uid, type, reason, message): what makes two events "the same".
_EventKey = tuple[str, str, str, str, str, str, str, str]


@dataclass
class _Seen:
    namespace: str
    name: str
    count: int


class EventRecorder:
    """Records Events for one reporting component; repeats are aggregated into a count."""

    def __init__(
        self,
        writer: EventWriter,
        *,
        component: str,
        host: str | None = None,
        clock: Callable[[], datetime] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        """Write through ``writer`` as ``component`` on ``host`` (default: this machine's name)."""
        self._writer = writer
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._cache: OrderedDict[_EventKey, _Seen] = OrderedDict()
        self._cache_size = cache_size
        self._last_nanos = 0

    def _unique_nanos(self, instant: datetime) -> int:
        # Two events of one object within the same nanosecond would collide on the name.
        nanos = max(int(instant.timestamp() * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return nanos

    def _remember(self, key: _EventKey, seen: _Seen) -> None:
        self._cache[key] = seen
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def new_event(
        self,
        involved: InvolvedObject,
        *,
        event_type: EventType,
        reason: str,
        message: str,
        action: str = "",
    ) -> dict[str, Any]:
        """The core/v1 Event a first occurrence creates (pure apart from the clock)."""
        now = self._clock()
        namespace = involved.namespace or "default"
        stamp = format_time(now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event_name(involved.name, self._unique_nanos(now)),
                "namespace": namespace,
            },
            "involvedObject": involved.to_api(),
            "reason": reason,
            "message": message,
            "type": str(event_type),
            "source": {"component": self.component, "host": self.host},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        if action:
            body["action"] = action
        return body

    async def record(
        self,
        involved: InvolvedObject,
        *,
        event_type: EventType,
        reason: str,
        message: str,
        action: str = "",
    ) -> dict[str, Any]:
        """Record one occurrence; returns the Event as the API server stored it."""
        key: _EventKey = (
            involved.api_version,
            involved.kind,
            involved.namespace,
            involved.name,
            involved.uid,
            str(event_type),
            reason,
            message,
        )
        seen = self._cache.get(key)
        if seen is not None:
            patched = await self._bump(seen)
            if patched is not None:
                self._remember(key, seen)
                return patched
        body = self.new_event(
            involved, event_type=event_type, reason=reason, message=message, action=action
        )
        created = await self._writer.create(EVENTS, body, namespace=body["metadata"]["namespace"])
        self._remember(
            key,
            _Seen(namespace=body["metadata"]["namespace"], name=body["metadata"]["name"], count=1),
        )
        return created

    async def _bump(self, seen: _Seen) -> dict[str, Any] | None:
        """Patch count and lastTimestamp; None when the Event is gone (expired by its TTL)."""
        try:
            patched = await self._writer.merge_patch(
                EVENTS,
                {"count": seen.count + 1, "lastTimestamp": format_time(self._clock())},
                namespace=seen.namespace,
                name=seen.name,
            )
        except errors.NotFound:
            logger.debug("event %s/%s is gone; creating a new one", seen.namespace, seen.name)
            return None
        seen.count = int(patched.get("count") or seen.count + 1)
        return patched

    async def warning(
        self, involved: InvolvedObject, *, reason: str, message: str, action: str = ""
    ) -> dict[str, Any]:
        """Record a Warning event."""
        return await self.record(
            involved, event_type=EventType.WARNING, reason=reason, message=message, action=action
        )

    async def normal(
        self, involved: InvolvedObject, *, reason: str, message: str, action: str = ""
    ) -> dict[str, Any]:
        """Record a Normal event."""
        return await self.record(
            involved, event_type=EventType.NORMAL, reason=reason, message=message, action=action
        )
