"""The saga while the resource stays in scope: a reconcile's ``release_now`` steps, and what the
steps that change a cluster leave in it, on the time-skipping server with fake activities."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import WorkflowEnvironment

from stackflow.models.cluster_steps import DisableReplicaAllocation, Flush
from stackflow.models.engine import (
    ACT_CLUSTER_STEP,
    CompensateInput,
    Phase,
    ReconcileResult,
    Trigger,
    TriggerReason,
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


async def test_a_target_released_now_runs_its_compensation_and_forgets_only_its_key(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("peer/a"), step("peer/b", RELEASE_WATCH), step("peer/c"))
    engine = FakeEngine()
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.READY, acquired=held),
            # Peers a and c left: released now, c (acquired last) first; b stays held.
            ReconcileResult(phase=Phase.READY, release_now=(held[0], held[2])),
        ]
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        assert (await until_phase(ts_env.client, ref, Phase.READY)).compensations == held

        await handle.signal(ResourceWorkflow.trigger, CHANGED)
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
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.READY, acquired=held),
            ReconcileResult(phase=Phase.READY, release_now=held),
        ]
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.READY)
        await handle.signal(ResourceWorkflow.trigger, CHANGED)
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
    engine = FakeEngine(compensations_open=asyncio.Event())
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.READY, acquired=held),
            ReconcileResult(phase=Phase.READY, release_now=held),
        ]
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.READY)
        await handle.signal(ResourceWorkflow.trigger, CHANGED)
        await until_calls(engine, RELEASE_OBSERVER, 1)

        # The reconcile has answered READY; its release has not.
        during = await state_of(ts_env.client, ref)
        assert (during.phase, during.handling, during.compensations) == (Phase.READY, True, held)

        assert engine.compensations_open is not None
        engine.compensations_open.set()
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
