"""NamespaceFlipWorkflow on the time-skipping server: targets per controller, signals, counts."""

from __future__ import annotations

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stackflow.models.engine import (
    ACT_FLIP_TARGETS,
    ACT_SIGNAL_RESOURCES,
    FlipDirectionName,
    FlipTargetsInput,
    NamespaceFlipInput,
    NamespaceFlipResult,
    SignalResourcesInput,
    Trigger,
    TriggerReason,
)
from tests.workflows.fakes import FakeEngine, make_ref
from workflows import WORKFLOWS
from workflows.flip import NamespaceFlipWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.mark.parametrize("direction", list(FlipDirectionName))
async def test_flip_signals_every_target_and_counts_per_controller(
    ts_env: WorkflowEnvironment, task_queue: str, direction: FlipDirectionName
) -> None:
    first, second = make_ref(namespace="team-b"), make_ref(namespace="team-b")
    engine = FakeEngine(flip_targets={"elasticsearch": (first, second)})
    flip_id = f"flip/team-b/{task_queue}"
    async with Worker(
        ts_env.client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=engine.activities(),
    ):
        result = await ts_env.client.execute_workflow(
            NamespaceFlipWorkflow.run,
            NamespaceFlipInput(
                namespace="team-b", direction=direction, controllers=("elasticsearch", "license")
            ),
            id=flip_id,
            task_queue=task_queue,
        )

    assert result == NamespaceFlipResult(triggered={"elasticsearch": 2, "license": 0})
    # Controllers are flipped concurrently: the order of their activities is not fixed.
    assert sorted(engine.inputs(ACT_FLIP_TARGETS), key=lambda asked: asked.controller) == [
        FlipTargetsInput(controller="elasticsearch", namespace="team-b", direction=direction),
        FlipTargetsInput(controller="license", namespace="team-b", direction=direction),
    ]
    assert engine.inputs(ACT_SIGNAL_RESOURCES) == [
        SignalResourcesInput(
            refs=(first, second),
            trigger=Trigger(
                reason=TriggerReason.NAMESPACE_FLIP,
                source=flip_id,
                detail=f"namespace team-b {direction.value}",
            ),
        )
    ]
