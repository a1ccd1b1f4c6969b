"""ResourceWorkflow on the time-skipping server, with fake activities under the real names."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from stackflow.models.engine import (
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    SA_PHASE,
    CarriedState,
    CompensateInput,
    FlipDirectionName,
    ObjectKey,
    Phase,
    ReconcileInput,
    ReconcileNowInput,
    ReconcileResult,
    ResourceWorkflowInput,
    ResourceWorkflowResult,
    Trigger,
    TriggerReason,
    WorkflowStateView,
    finalize_activity,
    namespace_flip_trigger,
)
from tests.polling import eventually
from tests.workflows.continue_as_new import ContinueAsNewAfter
from tests.workflows.fakes import (
    CONTROLLER,
    RELEASE_OBSERVER,
    RELEASE_WATCH,
    FakeEngine,
    invalid_spec,
    make_ref,
    step,
)
from tests.workflows.resource_driver import (
    CREATED,
    RECONCILE,
    start,
    stop,
    until_calls,
    until_phase,
    worker,
)
from workflows.resource import ResourceWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")

FINALIZE = finalize_activity(CONTROLLER)


async def phase_attribute(handle: WorkflowHandle[Any, Any]) -> str | None:
    """The StackflowPhase search attribute of the workflow's current run."""
    return (await handle.describe()).typed_search_attributes.get(SA_PHASE)


async def test_unlicensed_waits_notices_once_and_rechecks_after_five_minutes(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=True, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.WAITING_FOR_LICENSE)
        assert engine.count(ACT_LICENSE_CHECK) == 1
        assert await phase_attribute(handle) == Phase.WAITING_FOR_LICENSE.value

        await ts_env.sleep(timedelta(minutes=5, seconds=1))
        await until_calls(engine, ACT_LICENSE_CHECK, 2)
        view = await until_phase(ts_env.client, ref, Phase.WAITING_FOR_LICENSE)

        assert engine.count(ACT_LICENSE_WAIT_NOTICE) == 1
        assert engine.count(RECONCILE) == 0
        assert view.license_warned
        await stop(handle)


async def test_license_trigger_ends_the_wait_at_once(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine(license_required=True, licensed=False)
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.WAITING_FOR_LICENSE)
        waiting_since = await ts_env.get_current_time()

        engine.licensed = True
        license_changed = Trigger(reason=TriggerReason.LICENSE_CHANGED, source="license-watch")
        await start(ts_env.client, ref, task_queue, trigger=license_changed)
        await until_phase(ts_env.client, ref, Phase.READY)

        assert await ts_env.get_current_time() - waiting_since < timedelta(minutes=5)
        assert engine.inputs(RECONCILE)[0].triggers == (license_changed,)
        assert engine.count(ACT_LICENSE_WAIT_NOTICE) == 1
        await stop(handle)


async def test_out_of_scope_compensates_once_per_episode_in_reverse_order(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("observer"), step("watch", RELEASE_WATCH), step("cache"))
    engine = FakeEngine(default_outcome=ReconcileResult(phase=Phase.READY, acquired=held))
    ref = make_ref()
    flip = Trigger(reason=TriggerReason.NAMESPACE_FLIP, source="flip")
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        assert (await until_phase(ts_env.client, ref, Phase.READY)).compensations == held

        engine.in_scope = False
        for number in range(3):
            await handle.signal(ResourceWorkflow.trigger, flip)
            await until_calls(engine, ACT_SCOPE_CHECK, 2 + number)
            view = await until_phase(ts_env.client, ref, Phase.OUT_OF_SCOPE)
        released = [
            (name, argument.step.key)
            for name, argument in engine.calls
            if isinstance(argument, CompensateInput)
        ]
        assert released == [
            (RELEASE_OBSERVER, "cache"),
            (RELEASE_WATCH, "watch"),
            (RELEASE_OBSERVER, "observer"),
        ]
        assert view.compensations == ()
        assert engine.count(RECONCILE) == 1
        assert await phase_attribute(handle) == Phase.OUT_OF_SCOPE.value

        engine.in_scope = True
        await handle.signal(ResourceWorkflow.trigger, flip)
        await until_calls(engine, RECONCILE, 2)
        assert (await until_phase(ts_env.client, ref, Phase.READY)).compensations == held

        engine.in_scope = False
        await handle.signal(ResourceWorkflow.trigger, flip)
        await until_phase(ts_env.client, ref, Phase.OUT_OF_SCOPE)
        assert sum(isinstance(argument, CompensateInput) for _, argument in engine.calls) == 6
        await stop(handle)


async def test_deletion_compensates_finalizes_and_completes_then_recreation_starts_a_new_run(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("observer"), step("watch", RELEASE_WATCH))
    engine = FakeEngine(default_outcome=ReconcileResult(phase=Phase.READY, acquired=held))
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        first = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.READY)

        engine.exists = False
        await first.signal(
            ResourceWorkflow.trigger, Trigger(reason=TriggerReason.DELETED, source="t")
        )
        result = await first.result()

        assert result == ResourceWorkflowResult(phase=Phase.DELETED, reconciles=1)
        assert [name for name, _ in engine.calls[-3:]] == [
            RELEASE_WATCH,
            RELEASE_OBSERVER,
            FINALIZE,
        ]
        assert await phase_attribute(first) == Phase.DELETED.value
        deleted_run = (await first.describe()).run_id

        engine.exists = True
        second = await start(ts_env.client, ref, task_queue)
        view = await until_phase(ts_env.client, ref, Phase.READY)
        assert (await second.describe()).run_id != deleted_run
        assert view.reconciles == 1
        await stop(second)


async def test_continue_as_new_loses_no_trigger_and_keeps_compensations(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    held = (step("observer"),)
    engine = FakeEngine()
    engine.outcomes.append(ReconcileResult(phase=Phase.READY, acquired=held))
    ref = make_ref()
    details = [f"change-{number}" for number in range(30)]
    async with worker(
        ts_env.client, engine, task_queue, interceptors=[ContinueAsNewAfter(events=40)]
    ):
        handle = await start(ts_env.client, ref, task_queue)
        first_run = (await handle.describe()).run_id
        for detail in details:
            trigger = Trigger(reason=TriggerReason.SPEC_CHANGED, source="t", detail=detail)
            await handle.signal(ResourceWorkflow.trigger, trigger)

        async def all_reconciled() -> bool:
            seen = {
                trigger.detail
                for request in engine.inputs(RECONCILE)
                for trigger in request.triggers
            }
            return seen >= set(details)

        await eventually(all_reconciled, what="every trigger reconciled")

        async def continued() -> bool:
            # The last reconcile may be seen before the run's continue-as-new is recorded.
            return (await handle.describe()).run_id != first_run

        await eventually(continued, within=60, what="the workflow continued as new")

        # The compensation acquired by the first run is released by a later one. (No query
        # here: the time-skipping server can drop a query that races a continue-as-new.)
        engine.in_scope = False
        await handle.signal(
            ResourceWorkflow.trigger, Trigger(reason=TriggerReason.NAMESPACE_FLIP, source="t")
        )
        await until_calls(engine, RELEASE_OBSERVER, 1)
        assert [request.step for request in engine.inputs(RELEASE_OBSERVER)] == list(held)
        await stop(handle)


async def test_a_new_run_handles_carried_triggers_and_keeps_compensations(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine()
    ref = make_ref()
    carried_trigger = Trigger(reason=TriggerReason.CHILD_CHANGED, source="t", detail="carried")
    carried = CarriedState(pending=(carried_trigger,), compensations=(step("observer"),))
    async with worker(ts_env.client, engine, task_queue):
        handle = await ts_env.client.start_workflow(
            ResourceWorkflow.run,
            ResourceWorkflowInput(ref=ref, carried=carried),
            id=ref.workflow_id,
            task_queue=task_queue,
        )
        view = await until_phase(ts_env.client, ref, Phase.READY)
        assert engine.inputs(RECONCILE)[0].triggers == (carried_trigger,)
        assert view.compensations == (step("observer"),)
        await stop(handle)


async def test_invalid_spec_notices_sets_error_and_waits_for_the_next_trigger(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine()
    engine.outcomes.append(invalid_spec("spec.nodeSets must not be empty"))
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        view = await until_phase(ts_env.client, ref, Phase.ERROR)
        assert view.message == "spec.nodeSets must not be empty"
        assert engine.count(ACT_INVALID_SPEC_NOTICE) == 1
        assert await phase_attribute(handle) == Phase.ERROR.value

        # No requeue: the history holds no timer. (No clock skipping here: after an activity
        # fails, the time-skipping server sometimes keeps its clock locked.)
        history = await handle.fetch_history()
        assert not [
            event for event in history.events if event.HasField("timer_started_event_attributes")
        ]
        fixed = Trigger(reason=TriggerReason.SPEC_CHANGED, source="t", detail="fixed")
        await handle.signal(ResourceWorkflow.trigger, fixed)
        await until_phase(ts_env.client, ref, Phase.READY)

        assert [request.triggers for request in engine.inputs(RECONCILE)] == [(CREATED,), (fixed,)]
        await stop(handle)


async def test_reconcile_now_update_answers_the_outcome(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine()
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.READY)
        engine.outcomes.append(ReconcileResult(phase=Phase.READY, message="reconciled by hand"))

        outcome = await handle.execute_update(
            ResourceWorkflow.reconcile_now, ReconcileNowInput(detail="operator asked")
        )

        assert (outcome.phase, outcome.message, outcome.reconciles) == (
            Phase.READY,
            "reconciled by hand",
            2,
        )
        assert engine.inputs(RECONCILE)[1].triggers[0].detail == "operator asked"
        await stop(handle)


async def test_state_query_shows_the_recorded_state(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    secret = ObjectKey(kind="Secret", namespace="team-a", name="es-users")
    engine = FakeEngine(
        default_outcome=ReconcileResult(
            phase=Phase.READY, message="green", acquired=(step("observer"),), referenced=(secret,)
        )
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        view = await until_phase(ts_env.client, ref, Phase.READY)
        assert view == WorkflowStateView(
            ref=ref,
            phase=Phase.READY,
            message="green",
            reconciles=1,
            pending=(),
            compensations=(step("observer"),),
            out_of_scope=False,
            license_warned=False,
            referenced=(secret,),
        )
        await stop(handle)


async def test_requeue_after_schedules_a_retry_then_reconciles_again(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine()
    engine.outcomes.append(
        ReconcileResult(phase=Phase.RECONCILING, message="waiting", requeue_after_seconds=30)
    )
    ref = make_ref()
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_phase(ts_env.client, ref, Phase.RETRY_SCHEDULED)
        assert await phase_attribute(handle) == Phase.RETRY_SCHEDULED.value

        await ts_env.sleep(timedelta(seconds=31))
        await until_phase(ts_env.client, ref, Phase.READY)
        requests: list[ReconcileInput] = engine.inputs(RECONCILE)
        assert [request.triggers for request in requests] == [(CREATED,), ()]
        await stop(handle)


async def test_phase_is_searchable_through_visibility(
    dev_env: WorkflowEnvironment, task_queue: str
) -> None:
    engine = FakeEngine()
    ref = make_ref()
    query = f"WorkflowId = '{ref.workflow_id}' AND StackflowPhase = 'Ready'"
    async with worker(dev_env.client, engine, task_queue):
        handle = await start(dev_env.client, ref, task_queue)
        await until_phase(dev_env.client, ref, Phase.READY)

        async def listed() -> bool:
            return [run.id async for run in dev_env.client.list_workflows(query)] == [
                ref.workflow_id
            ]

        await eventually(listed, what="the workflow listed by its phase")
        await stop(handle)


async def test_a_flip_delivered_twice_is_reconciled_once(
    ts_env: WorkflowEnvironment, task_queue: str
) -> None:
    """The watcher's fast path and the flip workflow send the same trigger: the second finds the
    flip handled and costs no reconcile; another flip, or another reason, still does."""
    engine = FakeEngine()
    ref = make_ref()
    flip = namespace_flip_trigger("flip/team-a/7", "team-a", FlipDirectionName.INTO_SCOPE)
    later_flip = flip.model_copy(update={"source": "flip/team-a/9"})
    spec = Trigger(reason=TriggerReason.SPEC_CHANGED, source="test", detail="spec")
    async with worker(ts_env.client, engine, task_queue):
        handle = await start(ts_env.client, ref, task_queue)
        await until_calls(engine, RECONCILE, 1)
        await handle.signal(ResourceWorkflow.trigger, flip)
        await until_calls(engine, RECONCILE, 2)
        await handle.signal(ResourceWorkflow.trigger, flip)
        await handle.signal(ResourceWorkflow.trigger, spec)
        await until_calls(engine, RECONCILE, 3)
        await handle.signal(ResourceWorkflow.trigger, flip)
        await handle.signal(ResourceWorkflow.trigger, later_flip)
        await until_calls(engine, RECONCILE, 4)
        await until_phase(ts_env.client, ref, Phase.READY)
        requests: list[ReconcileInput] = engine.inputs(RECONCILE)
        assert [request.triggers for request in requests] == [
            (CREATED,),
            (flip,),
            (spec,),
            (later_flip,),
        ]
        await stop(handle)
