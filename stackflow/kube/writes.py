"""``OwnWrites``: the resourceVersions this process's own writes produced, and which controller
wrote each.

A watch event whose object carries one of them is the echo of that controller's write: the
reconcile that wrote it already knows, so the watchers must not wake that controller again for it
(each echo would cost a signal and another reconcile that writes nothing). Every other controller
is still told: an association writing its annotation on a Kibana must wake the Kibana controller.
Only exact versions count, so a change made by anyone else (another version) still wakes the owner,
and so does a deletion. Writes made by another replica's activities are not known here and cost
one extra reconcile, which then writes nothing.

The writer is whoever ``writing_as`` names around the write (the activities name their controller);
a write outside one (Events, the leader Lease) is nobody's echo.

The watch and the write are two connections: the event of a write may arrive before the write's
own answer (a loaded API server sends both at once). So while a write of ours to an object is in
flight, an event about that object is held (``defer``) and decided once the write has returned and
its version is known.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from stackflow.models.keys import GroupKindName
from stackflow.models.kinds import Kind

__all__ = ["DEFAULT_CAPACITY", "VERSIONS_PER_OBJECT", "OwnWrites", "writing_as"]

#: Objects remembered (least recently written forgotten first): ~100 bytes each.
DEFAULT_CAPACITY = 50_000
#: Versions kept per object: a reconcile may write one object twice (create, then status) before
#: the first event arrives.
VERSIONS_PER_OBJECT = 4

logger = logging.getLogger(__name__)

_WRITER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "stackflow_writer", default=None
)


@contextlib.contextmanager
def writing_as(controller: str) -> Iterator[None]:
    """Attribute the writes made inside (and in the tasks started inside) to ``controller``."""
    token = _WRITER.set(controller)
    try:
        yield
    finally:
        _WRITER.reset(token)


def _key(resource: Kind, metadata: Mapping[str, Any]) -> GroupKindName:
    return GroupKindName.of(
        resource,
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
    )


class OwnWrites:
    """A bounded memory of (object, resourceVersion, writer) this process wrote."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """Remember at most ``capacity`` objects."""
        self.capacity = capacity
        self._versions: OrderedDict[GroupKindName, tuple[tuple[str, str], ...]] = OrderedDict()
        self._in_flight: dict[GroupKindName, int] = {}
        self._held: dict[GroupKindName, list[Callable[[], None]]] = {}

    @contextlib.contextmanager
    def writing(self, resource: Kind, *, namespace: str | None, name: str) -> Iterator[None]:
        """Mark a write to the object in flight; events held meanwhile are decided at its end.

        Only writes with a writer (``writing_as``) count: nobody else's write has echoes.
        """
        if _WRITER.get() is None or not name or self.capacity == 0:
            yield
            return
        key = GroupKindName.of(resource, namespace=namespace, name=name)
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            yield
        finally:
            left = self._in_flight.pop(key) - 1
            if left:
                self._in_flight[key] = left
            else:
                for decide in self._held.pop(key, []):
                    try:
                        decide()
                    except Exception:  # one watcher's failure must not fail the write
                        logger.exception("deciding a held watch event failed")

    def defer(
        self, resource: Kind, obj: Mapping[str, Any] | None, decide: Callable[[], None]
    ) -> bool:
        """Hold ``decide`` until the write of ours to ``obj`` in flight returns; False (and
        nothing held) when none is in flight, so the caller decides now."""
        metadata = obj.get("metadata") if obj is not None else None
        if not isinstance(metadata, Mapping):
            return False
        key = _key(resource, metadata)
        if key not in self._in_flight:
            return False
        self._held.setdefault(key, []).append(decide)
        return True

    def record(self, resource: Kind, written: Mapping[str, Any]) -> None:
        """Remember the version of an object as a write of ours returned it, with its writer."""
        writer = _WRITER.get()
        metadata = written.get("metadata")
        if writer is None or not isinstance(metadata, Mapping):
            return
        if not metadata.get("resourceVersion"):
            return  # a Status, not an object
        key = _key(resource, metadata)
        versions = self._versions.pop(key, ())
        latest = (str(metadata["resourceVersion"]), writer)
        self._versions[key] = (*versions, latest)[-VERSIONS_PER_OBJECT:]
        while len(self._versions) > self.capacity:
            self._versions.popitem(last=False)

    def is_echo(
        self, resource: Kind, event_type: str, obj: Mapping[str, Any] | None, *, controller: str
    ) -> bool:
        """Whether an ADDED or MODIFIED event shows an object exactly as ``controller`` wrote it."""
        if event_type not in ("ADDED", "MODIFIED") or obj is None:
            return False
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping):
            return False
        version = metadata.get("resourceVersion")
        if not version:
            return False
        return (str(version), controller) in self._versions.get(_key(resource, metadata), ())

    def __len__(self) -> int:
        """How many objects are remembered."""
        return len(self._versions)
