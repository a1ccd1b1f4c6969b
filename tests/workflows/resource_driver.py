"""Driving a ResourceWorkflow from a test, shared by the workflow test modules: a worker with the
fake activities, the watchers' signal-with-start, waits for a phase or a number of activity calls,
and the termination of every run a test started."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Interceptor, Worker

from stackflow.models.engine import (
    Phase,
    ResourceRef,
    ResourceWorkflowResult,
    Trigger,
    TriggerReason,
    WorkflowStateView,
    reconcile_activity,
)
from stackflow.temporal import signal_with_start
from tests.polling import eventually
from tests.workflows.fakes import CONTROLLER, FakeEngine
from workflows import WORKFLOWS
from workflows.resource import ResourceWorkflow

RECONCILE = reconcile_activity(CONTROLLER)
CREATED = Trigger(reason=TriggerReason.CREATED, source="test", detail="created")


@asynccontextmanager
async def worker(
    client: Client,
    engine: FakeEngine,
    task_queue: str,
    *,
    interceptors: Sequence[Interceptor] = (),
) -> AsyncIterator[None]:
    """A worker for the engine's workflows with the fakes as activities."""
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=engine.activities(),
        interceptors=interceptors,
    ):
        yield


async def start(
    client: Client,
    ref: ResourceRef,
    task_queue: str,
    trigger: Trigger = CREATED,
) -> WorkflowHandle[Any, ResourceWorkflowResult]:
    """Signal-with-start the resource's workflow, as the watchers do."""
    return await signal_with_start(client, ref=ref, trigger=trigger, task_queue=task_queue)


async def state_of(client: Client, ref: ResourceRef) -> WorkflowStateView:
    """The ``state`` query on the resource's current run."""
    handle = client.get_workflow_handle_for(ResourceWorkflow.run, ref.workflow_id)
    return await handle.query(ResourceWorkflow.state)


async def until_phase(client: Client, ref: ResourceRef, phase: Phase) -> WorkflowStateView:
    """Wait until the workflow reports `phase` with no trigger pending and no batch being
    handled (a reconcile's phase is set before the releases and steps of its batch); returns
    that state."""

    async def reached() -> bool:
        view = await state_of(client, ref)
        return view.phase is phase and not view.pending and not view.handling

    await eventually(reached, what=f"{ref.workflow_id} in phase {phase.value}")
    return await state_of(client, ref)


async def until_calls(engine: FakeEngine, name: str, count: int) -> None:
    """Wait until the activity `name` ran `count` times."""

    async def reached() -> bool:
        return engine.count(name) >= count

    await eventually(reached, what=f"{count} calls of {name}")


async def stop(handle: WorkflowHandle[Any, Any]) -> None:
    """Terminate the workflow's current run, and any run a racing continue-as-new started: a
    run left with a workflow task nobody polls would hold the shared server's clock still."""

    async def closed() -> bool:
        description = await handle.describe()
        if description.status is WorkflowExecutionStatus.RUNNING:
            await handle.terminate()
            return False
        return True

    await eventually(closed, what=f"{handle.id} closed")
