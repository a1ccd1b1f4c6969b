"""``GarbageSweepWorkflow``: collect what missed watch events left behind.

Started by the Schedule ``stackflow-garbage-sweep`` (every ``SWEEP_INTERVAL_SECONDS``, and once
when a replica starts leading). Two activities, one after the other: first the running resource
workflows whose resource is gone are told ``Deleted`` (their finalizers delete their soft-owned
Secrets, in or out of scope), then the soft-owned Secrets of the managed namespaces whose owner is
gone are deleted. The workflow decides nothing itself: the activities' pure decisions do.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
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
    from workflows.activity_options import ACTIVITY_RETRY

#: A sweep reads every running resource workflow and every soft-owned Secret: longer than one
#: reconcile, and heartbeating, so a stuck one is retried without waiting the whole timeout.
SWEEP_ACTIVITY_TIMEOUT = timedelta(minutes=10)
SWEEP_HEARTBEAT_TIMEOUT = timedelta(minutes=1)


def sweep_details(result: GarbageSweepResult) -> str:
    """The workflow's current details in the Temporal UI (Markdown): what was collected."""
    lines = [f"* workflows told Deleted: {len(result.workflows)}"]
    lines += [f"  * {workflow_id}" for workflow_id in result.workflows]
    lines.append(f"* orphaned Secrets deleted: {len(result.secrets)}")
    lines += [f"  * {secret}" for secret in result.secrets]
    return "\n".join(lines)


@workflow.defn
class GarbageSweepWorkflow:
    """Completes the workflows of gone resources and deletes orphaned soft-owned Secrets."""

    @workflow.run
    async def run(self, sweep: GarbageSweepInput) -> GarbageSweepResult:
        """Sweep the workflows, then the Secrets; answer what was collected."""
        workflows: SweepWorkflowsResult = await workflow.execute_activity(
            ACT_SWEEP_WORKFLOWS,
            SweepWorkflowsInput(),
            result_type=SweepWorkflowsResult,
            start_to_close_timeout=SWEEP_ACTIVITY_TIMEOUT,
            heartbeat_timeout=SWEEP_HEARTBEAT_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary="resource workflows whose resource is gone",
        )
        secrets: SweepSecretsResult = await workflow.execute_activity(
            ACT_SWEEP_SECRETS,
            SweepSecretsInput(),
            result_type=SweepSecretsResult,
            start_to_close_timeout=SWEEP_ACTIVITY_TIMEOUT,
            heartbeat_timeout=SWEEP_HEARTBEAT_TIMEOUT,
            retry_policy=ACTIVITY_RETRY,
            summary="soft-owned Secrets whose owner is gone",
        )
        result = GarbageSweepResult(workflows=workflows.signalled, secrets=secrets.deleted)
        workflow.set_current_details(sweep_details(result))
        return result
