"""The Signaller: triggers in, signal-with-start of ``ResourceWorkflow`` out — only while leader.

Informer handlers call ``submit`` (synchronous, never blocks the informer). Triggers wait in a
per-workflow slot until a sender task picks the workflow up; while they wait, a burst of triggers
of the same reason collapses into one (the workflow coalesces whatever arrives anyway), and
everything that waited together leaves in one signal (one history event). Triggers about the
resource itself are sent at once; those about its children and references first wait a short
settle window (``settle_seconds``), because children change in bursts — a StatefulSet's status,
then its Pod, then the Pod's readiness — and one reconcile after the burst sees it all. A few
sender tasks deliver concurrently; a failed delivery is retried with backoff, never dropped —
unless leadership is lost meanwhile, in which case the new leader's start-up resync covers it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from stackflow.kube.backoff import Backoff
from stackflow.metrics import Registry
from stackflow.models.engine import TRIGGER_SIGNAL, ResourceRef, Trigger, TriggerReason, signal_of
from stackflow.temporal import signal_with_start  # re-exported: activities signal through it

__all__ = [
    "SETTLE_SECONDS",
    "SETTLING_REASONS",
    "TRIGGER_SIGNAL",
    "Signaller",
    "signal_running",
    "signal_with_start",
]

#: How long triggers about children and references wait for the rest of their burst.
SETTLE_SECONDS = 1.0
SETTLING_REASONS = frozenset({TriggerReason.CHILD_CHANGED, TriggerReason.REFERENCE_CHANGED})

_log = structlog.get_logger(__name__)


async def signal_running(
    client: Client, *, workflow_id: str, trigger: Trigger, more: tuple[Trigger, ...] = ()
) -> bool:
    """Signal a running workflow only; False when there is none (nothing to tell)."""
    signal, argument = signal_of((trigger, *more))
    try:
        await client.get_workflow_handle(workflow_id).signal(signal, argument)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


@dataclass
class _Slot:
    """What waits for one workflow: its ref and one trigger per reason."""

    ref: ResourceRef | None
    start: bool
    triggers: dict[TriggerReason, Trigger] = field(default_factory=dict)
    #: Whether it is queued for a sender already (else a settle timer will queue it).
    queued: bool = False


class Signaller:
    """Deduplicating, leader-only delivery of triggers to resource workflows."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        is_leader: Callable[[], bool],
        metrics: Registry,
        senders: int = 8,
        retry_initial: float = 0.2,
        retry_maximum: float = 10.0,
        settle_seconds: float = SETTLE_SECONDS,
        local_step: Callable[[str], bool] = lambda controller: True,
    ) -> None:
        """Configure; nothing is sent until ``start()``.

        ``local_step`` answers, by controller name, how a workflow it starts runs its reconcile
        step (the controller table's column).
        """
        self.settle_seconds = settle_seconds
        self.local_step = local_step
        self.client = client
        self.task_queue = task_queue
        self.is_leader = is_leader
        self._senders = senders
        self._retry = Backoff(initial=retry_initial, maximum=retry_maximum)
        self._slots: dict[str, _Slot] = {}
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._signals = metrics.counter(
            "stackflow_signals_sent_total",
            "Triggers delivered to resource workflows (one signal carries all that waited together), by controller and reason.",
            ("controller", "reason"),
        )
        self._coalesced = metrics.counter(
            "stackflow_signals_coalesced_total",
            "Triggers merged into one already waiting for the same workflow and reason.",
            ("controller",),
        )
        self._failures = metrics.counter(
            "stackflow_signal_failures_total",
            "Failed signal deliveries (retried).",
            ("controller",),
        )

    def submit(self, ref: ResourceRef, *, trigger: Trigger) -> bool:
        """Queue ``trigger`` for ``ref``'s workflow (signal-with-start); False if not leader."""
        return self._submit(ref.workflow_id, ref=ref, trigger=trigger, start=True)

    def submit_running(self, workflow_id: str, trigger: Trigger) -> bool:
        """Queue ``trigger`` for a workflow only if it runs (no start); False if not leader."""
        return self._submit(workflow_id, ref=None, trigger=trigger, start=False)

    def _submit(
        self,
        workflow_id: str,
        *,
        ref: ResourceRef | None,
        trigger: Trigger,
        start: bool,
    ) -> bool:
        if not self.is_leader():
            return False
        slot = self._slots.get(workflow_id)
        if slot is None:
            slot = _Slot(ref=ref, start=start)
            self._slots[workflow_id] = slot
            self._idle.clear()
            if trigger.reason in SETTLING_REASONS and self.settle_seconds > 0:
                asyncio.get_running_loop().call_later(
                    self.settle_seconds, self._queue, workflow_id, slot
                )
        elif ref is not None:
            # A start request upgrades a signal-only one (the workflow may need starting).
            slot.ref, slot.start = ref, slot.start or start
        if trigger.reason in slot.triggers:
            self._coalesced.inc(controller=_controller_of(workflow_id))
        slot.triggers[trigger.reason] = trigger
        if trigger.reason not in SETTLING_REASONS or self.settle_seconds <= 0:
            self._queue(workflow_id, slot)
        return True

    def _queue(self, workflow_id: str, slot: _Slot) -> None:
        """Hand the slot to the senders, once (a settle timer may find it sent already)."""
        if slot.queued or self._slots.get(workflow_id) is not slot:
            return
        slot.queued = True
        self._ready.put_nowait(workflow_id)

    @property
    def pending(self) -> int:
        """Workflows with triggers waiting or being delivered."""
        return len(self._slots) + self._in_flight

    def start(self) -> None:
        """Start the sender tasks (idempotent)."""
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._send_loop(), name=f"signaller:{index}")
            for index in range(self._senders)
        ]

    async def stop(self) -> None:
        """Stop the sender tasks; undelivered triggers are dropped (a new leader resyncs)."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def clear(self) -> None:
        """Drop everything waiting (leadership lost: the next leader resyncs)."""
        self._slots.clear()
        while not self._ready.empty():
            self._ready.get_nowait()
        if self._in_flight == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Wait until nothing is waiting or in flight (bound it with ``asyncio.timeout``)."""
        await self._idle.wait()

    async def _send_loop(self) -> None:
        while True:
            workflow_id = await self._ready.get()
            slot = self._slots.pop(workflow_id, None)
            if slot is None:
                continue
            self._in_flight += 1
            try:
                await self._deliver(workflow_id, slot)
            finally:
                self._in_flight -= 1
                if not self._slots and self._in_flight == 0:
                    self._idle.set()

    async def _deliver(self, workflow_id: str, slot: _Slot) -> None:
        """Send everything the slot holds in one signal, retrying while leader."""
        controller = _controller_of(workflow_id)
        first, *more = slot.triggers.values()
        attempt = 0
        while True:
            if not self.is_leader():
                return
            try:
                if slot.start and slot.ref is not None:
                    await signal_with_start(
                        self.client,
                        task_queue=self.task_queue,
                        ref=slot.ref,
                        trigger=first,
                        more=more,
                        local_step=self.local_step(controller),
                    )
                elif not await signal_running(
                    self.client, workflow_id=workflow_id, trigger=first, more=tuple(more)
                ):
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failures.inc(controller=controller)
                delay = self._retry.delay(attempt)
                attempt += 1
                _log.warning("signal.retry", workflow_id=workflow_id, error=repr(exc), delay=delay)
                await asyncio.sleep(delay)
                continue
            for trigger in slot.triggers.values():
                self._signals.inc(controller=controller, reason=trigger.reason.value)
            _log.debug(
                "signal.sent",
                workflow_id=workflow_id,
                reasons=[trigger.reason.value for trigger in slot.triggers.values()],
                detail=first.detail,
            )
            return


def _controller_of(workflow_id: str) -> str:
    return workflow_id.split("/", 1)[0]
