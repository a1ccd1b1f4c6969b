"""The saga while the resource stays in scope: a reconcile's ``release_now`` steps, and what the
steps that change a cluster leave in it, on the time-skipping server with fake activities."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from stackflow.models.cluster_steps import DisableReplicaAllocation, Flush
from stackflow.models.engine import (
    ACT_CLUSTER_STEP,
    CompensateInput,
    CompensationStep,
    Phase,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
    WorkflowStateView,
)
from tests.workflows.fakes import RELEASE_OBSERVER, RELEASE_WATCH, FakeEngine, make_ref, step
from tests.workflows.resource_driver import (
    RECONCILE,
    start,
    state_of,
    stop,
    until_calls,
    until_phase,
    worker,
)
from workflows.resource import ResourceWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")

CHANGED = Trigger(reason=TriggerReason.SPEC_CHANGED, source="test")


def released(engine: FakeEngine) -> list[tuple[str, str]]:
    """Every compensation that ran: (activity, key), in order."""
    return [
        (name, argument.step.key)
        for name, argument in engine.calls
        if isinstance(argument, CompensateInput)
    ]


async def held_then_released(
    client: Client,
    engine: FakeEngine,
    ref: ResourceRef,
    task_queue: str,
    *,
    held: tuple[CompensationStep, ...],
    release: tuple[CompensationStep, ...],
) -> tuple[WorkflowHandle[Any, Any], WorkflowStateView]:
    """Start the resource's workflow (in a running worker): its first reconcile acquires `held`,
    and the second, triggered here once the first is done, releases `release` now. Returns the
    handle and the state after the first."""
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.READY, acquired=held),
            ReconcileResult(phase=Phase.READY, release_now=release),
        ]
    )
    handle = await start(client, ref, task_queue)
    first = await until_phase(client, ref, Phase.READY)
    await handle.signal(ResourceWorkflow.trigger, CHANGED)
    return handle, first


async def test_a_target_released_now_runs_its_compensation_and_forgets_only_its_key(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("peer/a"), step("peer/b", RELEASE_WATCH), step("peer/c"))
    engine = FakeEngine()
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        # Peers a and c leave: released now, c (acquired last) first; b stays held.
        handle, first = await held_then_released(
            ts_env.client, engine, ref, task_queue, held=held, release=(held[0], held[2])
        )
        assert first.compensations == held
        await until_calls(engine, RECONCILE, 2)
        view = await until_phase(ts_env.client, ref, Phase.READY)

        assert released(engine) == [(RELEASE_OBSERVER, "peer/c"), (RELEASE_OBSERVER, "peer/a")]
        assert view.compensations == (held[1],)
        await stop(handle)


async def test_a_release_that_fails_stays_held_and_the_resource_is_still_reconciled(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("peer/a"), step("peer/b"))
    engine = FakeEngine(failing_compensations={"peer/b"})
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle, _ = await held_then_released(
            ts_env.client, engine, ref, task_queue, held=held, release=held
        )
        await until_calls(engine, RECONCILE, 2)
        view = await until_phase(ts_env.client, ref, Phase.READY)

        # Peer b's release fails: a is forgotten, b stays held, and the resource stays ready.
        assert released(engine) == [(RELEASE_OBSERVER, "peer/b"), (RELEASE_OBSERVER, "peer/a")]
        assert view.compensations == (held[1],)
        await handle.signal(ResourceWorkflow.trigger, CHANGED)
        await until_calls(engine, RECONCILE, 3)
        await until_phase(ts_env.client, ref, Phase.READY)
        await stop(handle)


async def test_the_state_says_a_batch_is_being_handled_until_its_releases_are_done(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("peer/a"),)
    releases_open = asyncio.Event()
    engine = FakeEngine(compensations_open=releases_open)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle, _ = await held_then_released(
            ts_env.client, engine, ref, task_queue, held=held, release=held
        )
        await until_calls(engine, RELEASE_OBSERVER, 1)

        # The reconcile has answered READY; its release has not.
        during = await state_of(ts_env.client, ref)
        assert (during.phase, during.handling, during.compensations) == (Phase.READY, True, held)

        releases_open.set()
        after = await until_phase(ts_env.client, ref, Phase.READY)
        assert (after.handling, after.compensations) == (False, ())
        await stop(handle)


async def test_what_a_cluster_step_leaves_is_held_until_undone_or_out_of_scope(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    exclusion = step("allocation-exclude/es-default-2")
    engine = FakeEngine(step_acquires={"disable_replica_allocation": (exclusion,)})
    engine.outcomes.extend(
        [
            ReconcileResult(
                phase=Phase.RECONCILING,
                requeue_after_seconds=300,
                cluster_steps=(DisableReplicaAllocation(), Flush(synced=False)),
            ),
        ]
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_calls(engine, ACT_CLUSTER_STEP, 2)
        view = await until_phase(ts_env.client, ref, Phase.RETRY_SCHEDULED)
        assert view.compensations == (exclusion,)

        # The namespace leaves scope mid-operation: the exclusion is released as a step.
        engine.in_scope = False
        await handle.signal(
            ResourceWorkflow.trigger, Trigger(reason=TriggerReason.NAMESPACE_FLIP, source="flip")
        )
        view = await until_phase(ts_env.client, ref, Phase.OUT_OF_SCOPE)
        assert released(engine) == [(RELEASE_OBSERVER, exclusion.key)]
        assert view.compensations == ()
        await stop(handle)
