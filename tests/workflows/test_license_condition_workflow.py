"""The license-wait condition, as the ResourceWorkflow asks for it (time-skipping server, fakes)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from stackflow.models.engine import ACT_LICENSE_WAIT_NOTICE, Phase, Trigger, TriggerReason
from stackflow.models.license_condition import ACT_LICENSE_CONDITION, LicenseConditionChange
from tests.workflows.fakes import FakeEngine, invalid_spec, make_ref
from tests.workflows.resource_driver import (
    RECONCILE,
    start,
    stop,
    until_calls,
    until_phase,
    worker,
)
from workflows.resource import LICENSE_WAIT_AT_ONCE_PATCH

pytestmark = pytest.mark.asyncio(loop_scope="session")


def patch_ids(history: WorkflowHistory) -> set[str]:
    """The patch ids the history's ``core_patch`` markers name."""
    return {
        json.loads(event.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)[
            "id"
        ]
        for event in history.events
        if event.event_type is EventType.EVENT_TYPE_MARKER_RECORDED
        and event.marker_recorded_event_attributes.marker_name == "core_patch"
    }


LICENSE_CHANGED = Trigger(reason=TriggerReason.LICENSE_CHANGED, source="license-watch")


async def test_the_wait_writes_the_condition_once_and_the_reconcile_after_it_removes_it(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=True, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_calls(engine, ACT_LICENSE_CONDITION, 1)
        waiting = engine.inputs(ACT_LICENSE_CONDITION)[0]
        assert (waiting.change, waiting.reason) == (LicenseConditionChange.WAITING, "no license")

        # Rechecks of the same wait leave the condition as it is.
        await ts_env.sleep(timedelta(minutes=5, seconds=1))
        await until_phase(ts_env.client, ref, Phase.WAITING_FOR_LICENSE)
        assert engine.count(ACT_LICENSE_CONDITION) == 1

        engine.licensed = True
        await start(ts_env.client, ref, task_queue, trigger=LICENSE_CHANGED)
        await until_calls(engine, ACT_LICENSE_CONDITION, 2)
        assert engine.inputs(ACT_LICENSE_CONDITION)[1].change is LicenseConditionChange.CLEARED
        assert engine.count(RECONCILE) == 1

        # Licensed reconciles from now on never call it.
        await start(ts_env.client, ref, task_queue, trigger=LICENSE_CHANGED)
        await until_calls(engine, RECONCILE, 2)
        await until_phase(ts_env.client, ref, Phase.READY)
        assert engine.count(ACT_LICENSE_CONDITION) == 2
        await stop(handle)


async def test_an_invalid_spec_after_the_wait_removes_the_condition_too(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=True, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_calls(engine, ACT_LICENSE_CONDITION, 1)

        engine.licensed = True
        engine.outcomes.append(invalid_spec())
        await start(ts_env.client, ref, task_queue, trigger=LICENSE_CHANGED)
        await until_calls(engine, ACT_LICENSE_CONDITION, 2)
        assert engine.inputs(ACT_LICENSE_CONDITION)[1].change is LicenseConditionChange.CLEARED
        await until_phase(ts_env.client, ref, Phase.ERROR)
        await stop(handle)


async def test_an_ungated_resource_never_calls_it(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=False, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.READY)
        assert engine.count(ACT_LICENSE_CONDITION) == 0
        await stop(handle)


async def test_entering_the_wait_asks_for_the_warnings_and_the_condition_at_once(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=True, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_calls(engine, ACT_LICENSE_CONDITION, 1)
        await until_calls(engine, ACT_LICENSE_WAIT_NOTICE, 1)
        await until_phase(ts_env.client, ref, Phase.WAITING_FOR_LICENSE)
        history = await handle.fetch_history()
        await stop(handle)
    # Both scheduled by one workflow task: neither waits for the other to finish.
    scheduled_by = {
        event.activity_task_scheduled_event_attributes.activity_type.name: (
            event.activity_task_scheduled_event_attributes.workflow_task_completed_event_id
        )
        for event in history.events
        if event.event_type is EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    assert scheduled_by[ACT_LICENSE_WAIT_NOTICE] == scheduled_by[ACT_LICENSE_CONDITION]
    assert LICENSE_WAIT_AT_ONCE_PATCH in patch_ids(history)
