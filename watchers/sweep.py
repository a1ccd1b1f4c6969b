"""The garbage-sweep Schedule: created or updated by the leader, then run once at once.

The Schedule ``stackflow-garbage-sweep`` starts a ``GarbageSweepWorkflow`` every
``SWEEP_INTERVAL_SECONDS`` (overlaps skipped); the Temporal UI lists it under Schedules. Every new
leader writes the desired Schedule (create, or update when it exists: idempotent, so replicas and
upgrades converge on one definition) and triggers one run, which is the start-up clean-up: what
was deleted while no operator ran is collected now rather than at the next interval.
"""

from __future__ import annotations

from datetime import timedelta

import structlog
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

from stackflow.models.garbage import (
    SWEEP_INTERVAL_SECONDS,
    SWEEP_SCHEDULE_ID,
    SWEEP_WORKFLOW,
    SWEEP_WORKFLOW_ID,
    GarbageSweepInput,
)

__all__ = ["ensure_sweep_schedule", "sweep_schedule"]

_log = structlog.get_logger(__name__)


def sweep_schedule(*, task_queue: str, every: timedelta) -> Schedule:
    """The desired Schedule: one ``GarbageSweepWorkflow`` per ``every`` on ``task_queue``."""
    return Schedule(
        action=ScheduleActionStartWorkflow(
            SWEEP_WORKFLOW,
            GarbageSweepInput(),
            id=SWEEP_WORKFLOW_ID,
            task_queue=task_queue,
            static_summary="garbage sweep: workflows of gone resources, orphaned Secrets",
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        # A sweep still running when the next is due makes the next one pointless.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(
            note="Stackflow: completes workflows of deleted resources, deletes orphaned "
            "soft-owned Secrets (kept by the leader)"
        ),
    )


async def ensure_sweep_schedule(
    client: Client,
    *,
    task_queue: str,
    every: timedelta = timedelta(seconds=SWEEP_INTERVAL_SECONDS),
    run_now: bool = True,
) -> bool:
    """Create or update the sweep's Schedule and, with ``run_now``, trigger one run.

    Returns False (logged) when Temporal refused: the leader goes on leading, and the Schedule
    already stored, if any, keeps running.
    """
    desired = sweep_schedule(task_queue=task_queue, every=every)

    def replace(_: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=desired)

    try:
        try:
            handle = await client.create_schedule(SWEEP_SCHEDULE_ID, desired)
        except ScheduleAlreadyRunningError:
            handle = client.get_schedule_handle(SWEEP_SCHEDULE_ID)
            await handle.update(replace)
        if run_now:
            await handle.trigger()
    except Exception as error:
        _log.warning("sweep.schedule_failed", schedule=SWEEP_SCHEDULE_ID, error=repr(error))
        return False
    _log.info("sweep.scheduled", schedule=SWEEP_SCHEDULE_ID, every_seconds=every.total_seconds())
    return True
