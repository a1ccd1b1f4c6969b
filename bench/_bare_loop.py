"""The bare Temporal entity loop the engine is compared with: one no-op activity per signal.

Kept in its own module that imports only ``temporalio`` so the workflow sandbox re-imports
nothing heavy, as the operator's ``workflows/`` modules do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import activity, workflow

NOOP_ACTIVITY = "bare.noop"


@workflow.defn(name="BareEntity")
class BareEntity:
    """Waits for signals; runs one no-op activity per batch of pending signals, forever."""

    def __init__(self) -> None:
        """No pending signal yet."""
        self._pending = 0

    @workflow.signal
    def trigger(self, token: str) -> None:
        """Queue one unit of work (``token`` only names it in the history)."""
        self._pending += 1

    @workflow.run
    async def run(self, key: str) -> None:
        """Loop: wait for a signal, take all pending, run the activity."""
        while True:
            await workflow.wait_condition(lambda: self._pending > 0)
            self._pending = 0
            await workflow.execute_activity(
                NOOP_ACTIVITY, key, start_to_close_timeout=timedelta(seconds=60)
            )


def noop_activity(on_done: Callable[[str], None]) -> Callable[[str], Awaitable[None]]:
    """The no-op activity, calling ``on_done(key)`` so the bench can count completions."""

    @activity.defn(name=NOOP_ACTIVITY)
    async def noop(key: str) -> None:
        on_done(key)

    return noop
