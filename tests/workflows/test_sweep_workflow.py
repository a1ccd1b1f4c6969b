"""GarbageSweepWorkflow on the time-skipping server (sandboxed): workflows first, then Secrets;
a failed activity is retried; the result says what was collected."""

from __future__ import annotations

import pytest
from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from stackflow.models.garbage import (
    ACT_SWEEP_SECRETS,
    ACT_SWEEP_WORKFLOWS,
    GarbageSweepInput,
    GarbageSweepResult,
    SweepSecretsInput,
    SweepSecretsResult,
    SweepWorkflowsInput,
    SweepWorkflowsResult,
)
from workflows.sweep import GarbageSweepWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")


class FakeSweep:
    """The sweep's two activities, recording their order; the workflow sweep fails ``fail`` times."""

    def __init__(self, *, fail: int = 0) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def activities(self) -> list[object]:
        @activity.defn(name=ACT_SWEEP_WORKFLOWS)
        async def sweep_workflows(request: SweepWorkflowsInput) -> SweepWorkflowsResult:
            self.calls.append(ACT_SWEEP_WORKFLOWS)
            if self.fail:
                self.fail -= 1
                raise RuntimeError("visibility unavailable")
            return SweepWorkflowsResult(signalled=("elasticsearch/ns1/a",))

        @activity.defn(name=ACT_SWEEP_SECRETS)
        async def sweep_secrets(request: SweepSecretsInput) -> SweepSecretsResult:
            self.calls.append(ACT_SWEEP_SECRETS)
            return SweepSecretsResult(deleted=("Secret ns1/ghost-es-http-certs-public",))

        return [sweep_workflows, sweep_secrets]


@pytest.mark.parametrize(
    ("fail", "calls"),
    [
        (0, [ACT_SWEEP_WORKFLOWS, ACT_SWEEP_SECRETS]),
        (1, [ACT_SWEEP_WORKFLOWS, ACT_SWEEP_WORKFLOWS, ACT_SWEEP_SECRETS]),
    ],
)
async def test_the_sweep_completes_workflows_then_deletes_secrets(
    ts_env: WorkflowEnvironment, task_queue: str, fail: int, calls: list[str]
) -> None:
    fake = FakeSweep(fail=fail)
    async with Worker(
        ts_env.client,
        task_queue=task_queue,
        workflows=[GarbageSweepWorkflow],
        activities=fake.activities(),
    ):
        handle = await ts_env.client.start_workflow(
            GarbageSweepWorkflow.run,
            GarbageSweepInput(),
            id=f"garbage-sweep-{task_queue}",
            task_queue=task_queue,
        )
        result = await handle.result()

    assert result == GarbageSweepResult(
        workflows=("elasticsearch/ns1/a",), secrets=("Secret ns1/ghost-es-http-certs-public",)
    )
    assert fake.calls == calls
