"""Plumbing shared by the simulated controllers: work queues, the settle tracker, object helpers.

Every controller is a :class:`Reconciler`: ``observe`` maps a store event to the keys it must look at
(synchronously, inside the store's write), ``reconcile`` handles one key with synchronous store calls.
The :class:`~kubesim.controllers.Controllers` facade runs one worker task per reconciler.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Protocol

READY_CONDITION = "Ready"


class EventLike(Protocol):
    """The part of ``kubesim.store.Event`` the controllers read."""

    @property
    def type(self) -> str: ...
    @property
    def rt(self) -> Any: ...
    @property
    def obj(self) -> dict[str, Any]: ...
    @property
    def old(self) -> dict[str, Any] | None: ...


class Reconciler(Protocol):
    """One simulated controller."""

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Keys to (re)process after ``event``; may update in-memory indexes."""
        ...

    def reconcile(self, key: Hashable) -> None:
        """Bring the store in line for ``key`` (synchronous store calls only)."""
        ...


class WorkTracker:
    """Counts queued work, in-flight work and pending timers so ``settle()`` knows when all is quiet."""

    def __init__(self) -> None:
        self._pending = 0
        self._idle: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._idle is None:
            self._idle = asyncio.Event()
            if self._pending == 0:
                self._idle.set()
        return self._idle

    def begin(self) -> None:
        """One more unit of outstanding work."""
        self._pending += 1
        if self._idle is not None:
            self._idle.clear()

    def done(self) -> None:
        """One unit of outstanding work finished."""
        self._pending -= 1
        if self._pending == 0 and self._idle is not None:
            self._idle.set()

    @property
    def pending(self) -> int:
        """Outstanding units (queued keys, keys being processed, timers)."""
        return self._pending

    async def wait_idle(self) -> None:
        """Return once no work is outstanding."""
        while self._pending:
            await self._event().wait()


class WorkQueue:
    """A de-duplicating FIFO of keys: a key already waiting is not queued twice."""

    def __init__(self, tracker: WorkTracker) -> None:
        self._tracker = tracker
        self._queue: asyncio.Queue[Hashable] = asyncio.Queue()
        self._waiting: set[Hashable] = set()

    def add(self, key: Hashable) -> None:
        """Queue ``key`` unless it is already waiting."""
        if key in self._waiting:
            return
        self._waiting.add(key)
        self._tracker.begin()
        self._queue.put_nowait(key)

    async def get(self) -> Hashable:
        """The next key; it may be queued again while it is processed."""
        key = await self._queue.get()
        self._waiting.discard(key)
        return key

    def drain(self) -> None:
        """Forget every waiting key (on stop), releasing its tracker units."""
        while not self._queue.empty():
            self._queue.get_nowait()
            self._tracker.done()
        self._waiting.clear()


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj.metadata`` (empty dict when absent)."""
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``."""
    return str(meta(obj).get("name", ""))


def namespace_of(obj: Mapping[str, Any]) -> str | None:
    """``metadata.namespace`` or None for cluster-scoped objects."""
    value = meta(obj).get("namespace")
    return str(value) if value else None


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid``."""
    return str(meta(obj).get("uid", ""))


def is_deleting(obj: Mapping[str, Any]) -> bool:
    """True once ``metadata.deletionTimestamp`` is set."""
    return bool(meta(obj).get("deletionTimestamp"))


def owner_refs(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``metadata.ownerReferences`` (empty list when absent)."""
    refs = meta(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true``, if any."""
    return next((r for r in owner_refs(obj) if r.get("controller") is True), None)


def controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when ``obj``'s controller reference names ``owner`` by uid."""
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == uid_of(owner)


def owner_reference(
    owner: Mapping[str, Any], *, api_version: str, kind: str, block: bool = True
) -> dict[str, Any]:
    """A controller ownerReference pointing at ``owner``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": block,
    }


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The ``status.conditions`` entry of ``type == kind``."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == kind), None)


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    """A pod counts as ready when Running with condition Ready=True and not being deleted."""
    status = pod.get("status")
    if is_deleting(pod) or not isinstance(status, dict) or status.get("phase") != "Running":
        return False
    ready = condition(pod, READY_CONDITION)
    return ready is not None and ready.get("status") == "True"


def template_hash(template: Any) -> str:
    """A stable 10-character hash of a pod template (like pod-template-hash / revision hashes)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    # Kubernetes renders hashes with a consonant/digit alphabet so they never form words.
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    number = int(digest, 16)
    chars = []
    for _ in range(10):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


def merged_condition(
    previous: Mapping[str, Any] | None, new: dict[str, Any], *, now: str
) -> dict[str, Any]:
    """``new`` with its timestamps filled: kept from ``previous`` while nothing they date changed.

    ``lastTransitionTime`` moves only when ``status`` flips; ``lastUpdateTime`` (Deployments) also when
    reason or message change — so re-deriving an unchanged condition is a no-op write.
    """
    out = dict(new)
    same_status = previous is not None and previous.get("status") == new.get("status")
    same_text = same_status and all(
        previous is not None and previous.get(k) == new.get(k) for k in ("reason", "message")
    )
    for stamp, keep in (("lastTransitionTime", same_status), ("lastUpdateTime", same_text)):
        if stamp not in new:
            continue
        kept = previous.get(stamp) if keep and previous is not None else None
        out[stamp] = kept or now
    return out
