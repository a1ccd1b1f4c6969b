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
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from stackflow.models.kinds import Kind

__all__ = ["DEFAULT_CAPACITY", "VERSIONS_PER_OBJECT", "OwnWrites", "writing_as"]

#: Objects remembered (least recently written forgotten first): ~100 bytes each.
DEFAULT_CAPACITY = 50_000
#: Versions kept per object: a reconcile may write one object twice (create, then status) before
#: the first event arrives.
VERSIONS_PER_OBJECT = 4

_Key = tuple[str, str, str, str]
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


def _key(resource: Kind, metadata: Mapping[str, Any]) -> _Key:
    return (
        resource.group,
        resource.plural,
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


class OwnWrites:
    """A bounded memory of (object, resourceVersion, writer) this process wrote."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """Remember at most ``capacity`` objects."""
        self.capacity = capacity
        self._versions: OrderedDict[_Key, tuple[tuple[str, str], ...]] = OrderedDict()

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
