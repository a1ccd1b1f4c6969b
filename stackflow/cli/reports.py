"""The leader's Temporal Schedules for the periodic reports: licensing usage and telemetry.

ECK runs both as leader-only loops. Here the leader, when it takes the Lease, creates (or updates
to the current configuration) two Temporal Schedules, which start the report workflows on the
operator's task queue: every worker can run them, Temporal keeps the timing, and each run is a
workflow in the Temporal UI. ``disable-telemetry`` deletes the telemetry Schedule (so turning it
off takes effect at the next start); the licensing usage report runs regardless, as in ECK.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.service import RPCError, RPCStatusCode

from stackflow.config import OperatorConfig
from stackflow.models.telemetry import (
    LICENSE_USAGE_WORKFLOW,
    TELEMETRY_WORKFLOW,
    LicenseUsageWorkflowInput,
    TelemetryWorkflowInput,
    license_usage_schedule_id,
    telemetry_schedule_id,
)

__all__ = [
    "LICENSE_USAGE_INTERVAL",
    "ReportSchedules",
    "report_schedules",
    "schedule_reports",
]

_log = structlog.get_logger("stackflow.cli.reports")

#: ECK's licensing usage reporter runs every two minutes.
LICENSE_USAGE_INTERVAL = timedelta(minutes=2)


@dataclass(frozen=True)
class ReportSchedules:
    """What the configuration asks for: each Schedule by id, None for one that must not exist."""

    license_usage: tuple[str, Schedule]
    telemetry: tuple[str, Schedule | None]


def _schedule(
    workflow: str, argument: object, *, workflow_id: str, task_queue: str, every: timedelta
) -> Schedule:
    return Schedule(
        action=ScheduleActionStartWorkflow(
            workflow,
            argument,
            id=workflow_id,
            task_queue=task_queue,
            # A run never outlives its interval: the next one would be skipped behind it.
            execution_timeout=max(every, timedelta(minutes=1)),
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        # Runs missed while no worker was up are not made up for: the next one reports anew.
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=every),
    )


def report_schedules(config: OperatorConfig) -> ReportSchedules:
    """The Schedules `config` asks for (pure)."""
    queue = config.temporal_task_queue
    license_id = license_usage_schedule_id(queue)
    telemetry_id = telemetry_schedule_id(queue)
    telemetry = (
        None
        if config.disable_telemetry
        else _schedule(
            TELEMETRY_WORKFLOW,
            TelemetryWorkflowInput(),
            workflow_id=telemetry_id,
            task_queue=queue,
            every=config.telemetry_interval,
        )
    )
    return ReportSchedules(
        license_usage=(
            license_id,
            _schedule(
                LICENSE_USAGE_WORKFLOW,
                LicenseUsageWorkflowInput(),
                workflow_id=license_id,
                task_queue=queue,
                every=LICENSE_USAGE_INTERVAL,
            ),
        ),
        telemetry=(telemetry_id, telemetry),
    )


async def _create_or_update(client: Client, schedule_id: str, schedule: Schedule) -> str:
    """Create the Schedule (its first run starts at once) or bring an existing one up to date."""
    try:
        await client.create_schedule(schedule_id, schedule, trigger_immediately=True)
        return "created"
    except ScheduleAlreadyRunningError:
        pass

    def updated(_: ScheduleUpdateInput) -> ScheduleUpdate:
        return ScheduleUpdate(schedule=schedule)

    await client.get_schedule_handle(schedule_id).update(updated)
    return "updated"


async def _delete(client: Client, schedule_id: str) -> str:
    try:
        await client.get_schedule_handle(schedule_id).delete()
    except RPCError as error:
        if error.status is not RPCStatusCode.NOT_FOUND:
            raise
        return "absent"
    return "deleted"


async def schedule_reports(client: Client, config: OperatorConfig) -> None:
    """Make the report Schedules match `config`; called by the leader when it starts leading.

    A failure is logged, never raised: the reports must not stop the leader from leading, and
    the next leader (or restart) tries again.
    """
    wanted = report_schedules(config)
    try:
        license_id, license_schedule = wanted.license_usage
        outcome = await _create_or_update(client, license_id, license_schedule)
        _log.info("reports.schedule", schedule=license_id, outcome=outcome)
        telemetry_id, telemetry_schedule = wanted.telemetry
        if telemetry_schedule is None:
            outcome = await _delete(client, telemetry_id)
        else:
            outcome = await _create_or_update(client, telemetry_id, telemetry_schedule)
        _log.info("reports.schedule", schedule=telemetry_id, outcome=outcome)
    except (RPCError, RuntimeError) as error:
        _log.error("reports.schedule_failed", error=str(error) or repr(error))
