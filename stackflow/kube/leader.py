"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it.

One step, ``try_acquire_or_renew``, reads the Lease and writes it back (optimistically, with its
resourceVersion) when this candidate holds it or when the holder let it expire. Expiry is judged on
the *local* clock from the moment this candidate last saw the Lease record change (client-go's
``observedTime``), so candidates with skewed wall clocks still agree. ``release`` hands the Lease
over at once (empty holder, 1 s duration). ``run`` repeats the step every ``retry_period`` and
calls the callbacks when leadership starts, stops or moves to someone else.

Lease timestamps are ``MicroTime``: exactly ``%Y-%m-%dT%H:%M:%S.%fZ`` in UTC.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from stackflow.kube import errors
from stackflow.kube.protocols import Creates, Gets, Replaces
from stackflow.models.kinds import LEASES

__all__ = [
    "DEFAULT_LEASE_NAME",
    "LeaderCallbacks",
    "LeaderElector",
    "LeaseClient",
    "LeaseRecord",
    "format_micro_time",
]

logger = logging.getLogger("stackflow.kube.leader")

DEFAULT_LEASE_NAME = "stackflow-leader"
MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

Callback = Callable[[], object]
NewLeaderCallback = Callable[[str], object]


def format_micro_time(instant: datetime) -> str:
    """A ``metav1.MicroTime``: UTC with exactly six fractional digits and ``Z``."""
    return instant.astimezone(UTC).strftime(MICRO_TIME_FORMAT)


class LeaseClient(Gets, Creates, Replaces, Protocol):
    """The calls the elector makes (``ResourceClient``, ``ScopedClient`` or ``UnscopedClient``)."""


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease spec fields leader election uses."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str
    renew_time: str
    lease_transitions: int

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaseRecord:
        """The record held by a Lease object."""
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        """The Lease ``spec``."""
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }


@dataclass(frozen=True)
class LeaderCallbacks:
    """What to do when leadership changes; each may be sync or async."""

    on_started_leading: Callback | None = None
    on_stopped_leading: Callback | None = None
    on_new_leader: NewLeaderCallback | None = None


async def _call(callback: Callable[..., object] | None, *args: object) -> None:
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        # A failing callback must not stop the elector (it would keep or lose the lease silently).
        logger.exception("leader election callback failed")


class LeaderElector:
    """One candidate for the Lease ``namespace/lease_name``."""

    def __init__(
        self,
        client: LeaseClient,
        *,
        namespace: str,
        identity: str,
        lease_name: str = DEFAULT_LEASE_NAME,
        lease_duration_seconds: int = 15,
        renew_deadline_seconds: float = 10.0,
        retry_period_seconds: float = 2.0,
        callbacks: LeaderCallbacks | None = None,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        """Configure the candidate; nothing happens until a step or ``run``."""
        if not identity:
            raise ValueError("a leader election identity is required")
        self._client = client
        self.namespace = namespace
        self.identity = identity
        self.lease_name = lease_name
        self.lease_duration_seconds = lease_duration_seconds
        self.renew_deadline_seconds = renew_deadline_seconds
        self.retry_period_seconds = retry_period_seconds
        self.callbacks = callbacks or LeaderCallbacks()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._monotonic = monotonic or time.monotonic
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._last_renewed_at: float | None = None
        self._leading = False
        self._known_leader = ""

    @property
    def is_leader(self) -> bool:
        """Whether this candidate held the Lease at its last successful step."""
        return self._leading

    @property
    def leader(self) -> str:
        """The holder this candidate last observed ("" if none)."""
        return self._known_leader

    def _observe(self, record: LeaseRecord) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = self._monotonic()

    def _held_by_other(self, record: LeaseRecord) -> bool:
        if not record.holder_identity or record.holder_identity == self.identity:
            return False
        expires_at = self._observed_at + record.lease_duration_seconds
        return expires_at > self._monotonic()

    def _next_record(self, old: LeaseRecord | None) -> LeaseRecord:
        now = format_micro_time(self._clock())
        if old is not None and old.holder_identity == self.identity:
            return LeaseRecord(
                holder_identity=self.identity,
                lease_duration_seconds=self.lease_duration_seconds,
                acquire_time=old.acquire_time or now,
                renew_time=now,
                lease_transitions=old.lease_transitions,
            )
        transitions = 0 if old is None else old.lease_transitions + 1
        return LeaseRecord(
            holder_identity=self.identity,
            lease_duration_seconds=self.lease_duration_seconds,
            acquire_time=now,
            renew_time=now,
            lease_transitions=transitions,
        )

    async def try_acquire_or_renew(self) -> bool:
        """One election step: True when this candidate holds the Lease afterwards."""
        try:
            lease = await self._client.get(LEASES, namespace=self.namespace, name=self.lease_name)
        except errors.NotFound:
            record = self._next_record(None)
            body = {
                "apiVersion": LEASES.api_version,
                "kind": "Lease",
                "metadata": {"name": self.lease_name, "namespace": self.namespace},
                "spec": record.to_spec(),
            }
            try:
                await self._client.create(LEASES, body, namespace=self.namespace)
            except errors.AlreadyExists:
                return False
            return self._acquired(record)
        old = LeaseRecord.from_lease(lease)
        self._observe(old)
        self._known_leader = old.holder_identity
        if self._held_by_other(old):
            return False
        record = self._next_record(old)
        updated = dict(lease)
        updated["spec"] = {**(lease.get("spec") or {}), **record.to_spec()}
        try:
            await self._client.replace(LEASES, updated, namespace=self.namespace)
        except errors.Conflict:
            # Someone else wrote the Lease since we read it: they won this round.
            return False
        return self._acquired(record)

    def _acquired(self, record: LeaseRecord) -> bool:
        self._observe(record)
        self._known_leader = self.identity
        self._last_renewed_at = self._monotonic()
        return True

    async def release(self) -> bool:
        """Give the Lease up at once if this candidate holds it; True when it was released."""
        if not self._leading:
            return False
        try:
            lease = await self._client.get(LEASES, namespace=self.namespace, name=self.lease_name)
            old = LeaseRecord.from_lease(lease)
            if old.holder_identity != self.identity:
                return False
            now = format_micro_time(self._clock())
            released = LeaseRecord(
                holder_identity="",
                lease_duration_seconds=1,
                acquire_time=now,
                renew_time=now,
                lease_transitions=old.lease_transitions,
            )
            updated = dict(lease)
            updated["spec"] = {**(lease.get("spec") or {}), **released.to_spec()}
            await self._client.replace(LEASES, updated, namespace=self.namespace)
            self._observe(released)
            self._known_leader = ""
            return True
        finally:
            await self._set_leading(False)

    async def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if leading:
            logger.info("became leader on lease %s/%s", self.namespace, self.lease_name)
            await _call(self.callbacks.on_started_leading)
        else:
            logger.info("stopped leading on lease %s/%s", self.namespace, self.lease_name)
            await _call(self.callbacks.on_stopped_leading)

    async def step(self) -> bool:
        """One step with its consequences: leadership flags, callbacks and the renew deadline."""
        previous_leader = self._known_leader
        try:
            acquired = await self.try_acquire_or_renew()
        except errors.KubeError as error:
            logger.warning("leader election step failed: %s", error)
            acquired = False
        if acquired:
            await self._set_leading(True)
        elif self._leading and not self._within_renew_deadline():
            await self._set_leading(False)
        elif self._leading and self._known_leader not in ("", self.identity):
            # The Lease was taken over (we were too slow to renew): step down at once.
            await self._set_leading(False)
        if self._known_leader and self._known_leader != previous_leader:
            await _call(self.callbacks.on_new_leader, self._known_leader)
        return self._leading

    def _within_renew_deadline(self) -> bool:
        if self._last_renewed_at is None:
            return False
        return self._monotonic() - self._last_renewed_at < self.renew_deadline_seconds

    async def run(self, stop: asyncio.Event) -> None:
        """Take part in the election until ``stop`` is set, then release the Lease if held."""
        try:
            while not stop.is_set():
                await self.step()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.retry_period_seconds)
        finally:
            try:
                await self.release()
            except errors.KubeError as error:
                logger.warning("could not release the lease: %s", error)
