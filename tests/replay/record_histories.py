"""Record the committed replay histories: ``python -m tests.replay.record_histories``.

Runs scripted scenarios of every workflow type on the time-skipping server with the fake activities
and writes each history to ``tests/replay/histories/NAME.json`` — only when that file is missing,
so a committed history keeps describing the code that wrote it (delete a file to re-record it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Interceptor, Worker

from stackflow.models.cluster_steps import DeletePod, DisableReplicaAllocation, Flush
from stackflow.models.engine import (
    ACT_LICENSE_CHECK,
    FlipDirectionName,
    NamespaceFlipInput,
    Phase,
    ReconcileNowInput,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
    namespace_flip_trigger,
    reconcile_activity,
)
from stackflow.temporal import signal_with_start
from tests.polling import eventually
from tests.workflows.conftest import start_time_skipping_env
from tests.workflows.continue_as_new import ContinueAsNewAfter
from tests.workflows.fakes import (
    RELEASE_WATCH,
    FakeEngine,
    invalid_spec,
    make_ref,
    step,
)
from tests.workflows.resource_driver import until_phase
from workflows import WORKFLOWS
from workflows.flip import NamespaceFlipWorkflow
from workflows.resource import ResourceWorkflow

HISTORIES = Path(__file__).parent / "histories"
TASK_QUEUE = "record-histories"

Scenario = Callable[[WorkflowEnvironment, FakeEngine], Awaitable[WorkflowHistory]]


def trigger(reason: TriggerReason, detail: str = "") -> Trigger:
    """A trigger from the recorder."""
    return Trigger(reason=reason, source="record-histories", detail=detail)


async def until_reconciled(engine: FakeEngine, detail: str) -> None:
    """Wait until a reconcile received the trigger with `detail` (no query: the test server can
    lose a query that races a continue-as-new)."""

    async def reconciled() -> bool:
        return any(
            trigger.detail == detail
            for request in engine.inputs(reconcile_activity("elasticsearch"))
            for trigger in request.triggers
        )

    await eventually(reconciled, what=f"reconcile of {detail}")


async def resource_lifecycle(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """Every branch of the loop once: requeue, update, out of scope, license wait, invalid spec, delete.

    The committed file predates the ``local-gate-checks`` patch: its checks are normal activities.
    """
    return await _lifecycle(env, engine, make_ref("lifecycle"))


async def resource_lifecycle_local_checks(
    env: WorkflowEnvironment, engine: FakeEngine
) -> WorkflowHistory:
    """The lifecycle after the ``local-gate-checks`` patch: scope and license checks run locally."""
    return await _lifecycle(env, engine, make_ref("lifecycle-local-checks"))


async def resource_lifecycle_step(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """The lifecycle after the ``reconcile-step`` patch: gates and reconcile in one local activity."""
    return await _lifecycle(env, engine, make_ref("lifecycle-step"))


async def resource_lifecycle_step_activity(
    env: WorkflowEnvironment, engine: FakeEngine
) -> WorkflowHistory:
    """The lifecycle of a controller whose step is an activity (``local_step=False``)."""
    return await _lifecycle(env, engine, make_ref("lifecycle-step-activity"), local_step=False)


async def resource_lifecycle_license_condition(
    env: WorkflowEnvironment, engine: FakeEngine
) -> WorkflowHistory:
    """The lifecycle after the ``license-wait-condition`` patch: the wait writes the condition on
    the resource and the step through the gates after it removes it."""
    return await _lifecycle(env, engine, make_ref("lifecycle-license-condition"))


async def resource_lifecycle_license_wait_at_once(
    env: WorkflowEnvironment, engine: FakeEngine
) -> WorkflowHistory:
    """The lifecycle after the ``license-wait-at-once`` patch: entering the wait schedules the
    Warning events and the condition in one workflow task."""
    return await _lifecycle(env, engine, make_ref("lifecycle-license-wait-at-once"))


async def resource_retry_backoff(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """A reconcile that keeps asking for a retry with the same outcome: the waits double (10 s,
    20 s, 40 s), a trigger cuts one short, and a different outcome ends the backoff."""
    client, ref = env.client, make_ref("backoff")
    unreachable = ReconcileResult(
        phase=Phase.RECONCILING, message="cluster not reachable", requeue_after_seconds=10
    )
    engine.outcomes.extend([unreachable] * 4 + [ReconcileResult(phase=Phase.READY)])
    handle = await signal_with_start(
        client, ref=ref, trigger=trigger(TriggerReason.CREATED), task_queue=TASK_QUEUE
    )
    for reconciles, wait in ((2, 11), (3, 21)):
        await until_phase(client, ref, Phase.RETRY_SCHEDULED)
        await env.sleep(timedelta(seconds=wait))
        await eventually(
            lambda count=reconciles: _reconciled(engine, count), what=f"reconcile {reconciles}"
        )
    # The third wait (40 s) is cut short by a trigger; the outcome after that is Ready.
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.CHILD_CHANGED, "pod"))
    await eventually(lambda: _reconciled(engine, 4), what="reconcile 4")
    await env.sleep(timedelta(seconds=81))
    await until_phase(client, ref, Phase.READY)
    history = await handle.fetch_history()
    await handle.terminate()
    return history


async def resource_cluster_steps(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """After the ``cluster-steps`` patch: a reconcile's steps run one activity each, in order; a
    step that fails ends the list and the next reconcile decides again."""
    client, ref = env.client, make_ref("cluster-steps")
    restart = (
        DisableReplicaAllocation(),
        Flush(synced=False),
        DeletePod("es-es-default-2", "Deleting pod for rolling upgrade", uid="uid-2"),
    )
    engine.failing_steps.add("flush")
    engine.outcomes.extend(
        [
            ReconcileResult(
                phase=Phase.RECONCILING, requeue_after_seconds=5, cluster_steps=restart
            ),
            ReconcileResult(
                phase=Phase.RECONCILING, requeue_after_seconds=5, cluster_steps=restart[2:]
            ),
            ReconcileResult(phase=Phase.READY, message="green"),
        ]
    )
    handle = await signal_with_start(
        client, ref=ref, trigger=trigger(TriggerReason.CREATED), task_queue=TASK_QUEUE
    )
    await until_phase(client, ref, Phase.RETRY_SCHEDULED)
    await env.sleep(timedelta(seconds=6))
    await eventually(lambda: _reconciled(engine, 2), what="reconcile 2")
    await until_phase(client, ref, Phase.RETRY_SCHEDULED)
    await env.sleep(timedelta(seconds=6))
    await until_phase(client, ref, Phase.READY)
    history = await handle.fetch_history()
    await handle.terminate()
    return history


async def resource_release_now(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """After the ``release-now-compensations`` patch: a reconcile holds three peers, the next
    releases two of them now (last-acquired first, one activity each) while the resource stays in
    scope; a cluster step leaves an exclusion, held; leaving scope releases what is left."""
    client, ref = env.client, make_ref("release-now")
    held = (step("peer/a"), step("peer/b", RELEASE_WATCH), step("peer/c"))
    exclusion = step("allocation-exclude/es-es-default-2")
    engine.step_acquires["disable_replica_allocation"] = (exclusion,)
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.READY, acquired=held),
            ReconcileResult(
                phase=Phase.RECONCILING,
                requeue_after_seconds=600,
                release_now=(held[0], held[2]),
                cluster_steps=(DisableReplicaAllocation(),),
            ),
        ]
    )
    handle = await signal_with_start(
        client, ref=ref, trigger=trigger(TriggerReason.CREATED), task_queue=TASK_QUEUE
    )
    await until_phase(client, ref, Phase.READY)
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.SPEC_CHANGED, "peers"))
    await until_phase(client, ref, Phase.RETRY_SCHEDULED)
    engine.in_scope = False
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))
    await until_phase(client, ref, Phase.OUT_OF_SCOPE)
    history = await handle.fetch_history()
    await handle.terminate()
    return history


async def resource_flip_once(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """After the ``flip-trigger-once`` patch: a flip's trigger delivered twice (the watcher's fast
    path, then the flip workflow) is reconciled once; the second arrives alone, then with another
    reason, and the next flip is reconciled."""
    client, ref = env.client, make_ref("flip-once")
    flip = namespace_flip_trigger("flip/team-a/7", "team-a", FlipDirectionName.INTO_SCOPE)
    handle = await signal_with_start(
        client, ref=ref, trigger=trigger(TriggerReason.CREATED), task_queue=TASK_QUEUE
    )
    await eventually(lambda: _reconciled(engine, 1), what="first reconcile")
    for sent, reconciles in (
        ((flip,), 2),
        ((flip, trigger(TriggerReason.SPEC_CHANGED, "spec")), 3),
        ((flip, flip.model_copy(update={"source": "flip/team-a/9"})), 4),
    ):
        for one in sent:
            await handle.signal(ResourceWorkflow.trigger, one)
        await eventually(
            functools.partial(_reconciled, engine, reconciles), what=f"{reconciles} reconciles"
        )
    await until_phase(client, ref, Phase.READY)
    history = await handle.fetch_history()
    await handle.terminate()
    return history


async def _reconciled(engine: FakeEngine, count: int) -> bool:
    return engine.count(reconcile_activity("elasticsearch")) >= count


async def _lifecycle(
    env: WorkflowEnvironment, engine: FakeEngine, ref: ResourceRef, *, local_step: bool = True
) -> WorkflowHistory:
    client = env.client
    held = (step("observer"), step("watch", RELEASE_WATCH))
    engine.outcomes.extend(
        [
            ReconcileResult(phase=Phase.RECONCILING, requeue_after_seconds=30, acquired=held),
            ReconcileResult(phase=Phase.READY, message="green"),
            ReconcileResult(phase=Phase.READY, message="by hand"),
        ]
    )
    handle = await signal_with_start(
        client,
        ref=ref,
        trigger=trigger(TriggerReason.CREATED),
        task_queue=TASK_QUEUE,
        local_step=local_step,
    )
    await until_phase(client, ref, Phase.RETRY_SCHEDULED)
    await env.sleep(timedelta(seconds=31))
    await until_phase(client, ref, Phase.READY)
    await handle.execute_update(ResourceWorkflow.reconcile_now, ReconcileNowInput(detail="manual"))

    engine.in_scope = False
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))
    await until_phase(client, ref, Phase.OUT_OF_SCOPE)

    engine.in_scope, engine.license_required, engine.licensed = True, True, False
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))
    await until_phase(client, ref, Phase.WAITING_FOR_LICENSE)
    await env.sleep(timedelta(minutes=5, seconds=1))

    async def rechecked() -> bool:
        return engine.count(ACT_LICENSE_CHECK) >= 2

    await eventually(rechecked, what="license recheck")

    engine.licensed = True
    engine.outcomes.append(invalid_spec())
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.LICENSE_CHANGED))
    await until_phase(client, ref, Phase.ERROR)

    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.SPEC_CHANGED, "fixed"))
    await until_phase(client, ref, Phase.READY)

    engine.exists = False
    await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.DELETED))
    await handle.result()
    return await handle.fetch_history()


async def resource_continue_as_new(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """A first run that continues as new (suggested early by the test interceptor, see
    ``INTERCEPTORS``), carrying its compensations."""
    client, ref = env.client, make_ref("continued")
    engine.outcomes.append(ReconcileResult(phase=Phase.READY, acquired=(step("observer"),)))
    handle = await signal_with_start(
        client, ref=ref, trigger=trigger(TriggerReason.CREATED), task_queue=TASK_QUEUE
    )
    first_run = (await handle.describe()).run_id
    for number in range(8):
        detail = f"change-{number}"
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.SPEC_CHANGED, detail))
        await until_reconciled(engine, detail)

    async def continued() -> bool:
        return (await handle.describe()).run_id != first_run

    await eventually(continued, what="continue-as-new")
    history = await client.get_workflow_handle(ref.workflow_id, run_id=first_run).fetch_history()
    await handle.terminate()
    return history


async def namespace_flip(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """A flip into scope that signals two resources of one controller and none of another."""
    engine.flip_targets = {"elasticsearch": (make_ref("one"), make_ref("two"))}
    handle = await env.client.start_workflow(
        NamespaceFlipWorkflow.run,
        NamespaceFlipInput(
            namespace="team-a",
            direction=FlipDirectionName.INTO_SCOPE,
            controllers=("elasticsearch", "license"),
        ),
        id="flip/team-a/1234",
        task_queue=TASK_QUEUE,
    )
    await handle.result()
    return await handle.fetch_history()


async def namespace_flip_parallel(env: WorkflowEnvironment, engine: FakeEngine) -> WorkflowHistory:
    """The same flip after the ``flip-controllers-in-parallel`` patch: controllers fan out at once."""
    engine.flip_targets = {
        "elasticsearch": (make_ref("one"), make_ref("two")),
        "license": (make_ref("one"),),
    }
    handle = await env.client.start_workflow(
        NamespaceFlipWorkflow.run,
        NamespaceFlipInput(
            namespace="team-a",
            direction=FlipDirectionName.OUT_OF_SCOPE,
            controllers=("elasticsearch", "license", "kb-es"),
        ),
        id="flip/team-a/5678",
        task_queue=TASK_QUEUE,
    )
    await handle.result()
    return await handle.fetch_history()


SCENARIOS: dict[str, Scenario] = {
    "resource_lifecycle": resource_lifecycle,
    "resource_lifecycle_local_checks": resource_lifecycle_local_checks,
    "resource_lifecycle_step": resource_lifecycle_step,
    "resource_lifecycle_step_activity": resource_lifecycle_step_activity,
    "resource_lifecycle_license_condition": resource_lifecycle_license_condition,
    "resource_lifecycle_license_wait_at_once": resource_lifecycle_license_wait_at_once,
    "resource_retry_backoff": resource_retry_backoff,
    "resource_cluster_steps": resource_cluster_steps,
    "resource_release_now": resource_release_now,
    "resource_continue_as_new": resource_continue_as_new,
    "resource_flip_once": resource_flip_once,
    "namespace_flip": namespace_flip,
    "namespace_flip_parallel": namespace_flip_parallel,
}


#: Worker interceptors a scenario is recorded with, and its history must be replayed with.
INTERCEPTORS: dict[str, list[Interceptor]] = {
    "resource_continue_as_new": [ContinueAsNewAfter(events=30)],
}


async def record_missing(directory: Path = HISTORIES) -> list[Path]:
    """Record every scenario whose history file is missing; returns the files written."""
    missing = {
        name: run for name, run in SCENARIOS.items() if not (directory / f"{name}.json").exists()
    }
    if not missing:
        return []
    env = await start_time_skipping_env()
    written: list[Path] = []
    try:
        for name, scenario in missing.items():
            engine = FakeEngine()
            async with Worker(
                env.client,
                task_queue=TASK_QUEUE,
                workflows=list(WORKFLOWS),
                activities=engine.activities(),
                interceptors=INTERCEPTORS.get(name, []),
            ):
                history = await scenario(env, engine)
            path = directory / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(history.to_json() + "\n", encoding="utf-8")
            written.append(path)
    finally:
        await env.shutdown()
    return written


def main() -> None:
    """Record the missing histories and list them."""
    for path in asyncio.run(record_missing()):
        print(f"wrote {path}")
    sys.stdout.flush()
    # Short-lived Temporal client scripts can crash at interpreter exit (sdk-python #300).
    os._exit(0)


if __name__ == "__main__":
    main()
