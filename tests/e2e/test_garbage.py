"""Deletion and garbage collection end to end: nothing of a deleted resource stays behind.

* An Elasticsearch deleted while its namespace is out of scope: the DELETED event reaches its
  workflow anyway, the finalizer deletes the soft-owned Secrets, the workflow completes.
* What happened while the operator was stopped (an Elasticsearch deleted, a soft-owned Secret
  whose owner never existed): the leader's start-up sweep (the garbage-sweep Schedule's first
  run) completes the workflow and deletes the Secrets.

Driven through the Kubernetes API as a user would; the workflows are read as the Temporal UI
shows them.
"""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from stackflow.kube.leader import DEFAULT_LEASE_NAME
from stackflow.kube.resources import ResourceClient
from stackflow.models.garbage import SWEEP_SCHEDULE_ID
from stackflow.models.kinds import LEASES
from stackflow.stack.labels import soft_owner_labels
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    SECRETS,
    create_namespace,
    get_or_none,
    manifest,
    operator_stack,
    set_in_scope,
)
from tests.polling import eventually

SPEC = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}


async def _leading(kube: ResourceClient) -> bool:
    lease = await get_or_none(kube, LEASES, namespace="elastic-system", name=DEFAULT_LEASE_NAME)
    return bool(lease and (lease.get("spec") or {}).get("holderIdentity"))


async def _phase(client: Client, workflow_id: str) -> str:
    view = await client.get_workflow_handle(workflow_id).query("state")
    return str(view.get("phase") if isinstance(view, dict) else view.phase)


async def _status(client: Client, workflow_id: str) -> WorkflowExecutionStatus | None:
    return (await client.get_workflow_handle(workflow_id).describe()).status


async def _secret_exists(kube: ResourceClient, namespace: str, name: str) -> bool:
    return await get_or_none(kube, SECRETS, namespace=namespace, name=name) is not None


async def _elasticsearch_with_secrets(kube: ResourceClient, namespace: str, name: str) -> None:
    """Create an Elasticsearch and wait for its soft-owned elastic user Secret."""
    await kube.create(ES, manifest("Elasticsearch", name, namespace, SPEC), namespace=namespace)
    await eventually(
        lambda: _secret_exists(kube, namespace, f"{name}-es-elastic-user"),
        what=f"{namespace}/{name}-es-elastic-user written",
        within=90,
    )


async def test_deleting_out_of_scope_leaves_nothing_behind(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    namespace, workflow_id = "ns1", "elasticsearch/ns1/a"
    async with operator_stack(tmp_path, cluster_target) as stack:
        kube, client = stack.kube, stack.temporal.client
        await eventually(lambda: _leading(kube), what="the operator leading", within=60)
        await create_namespace(kube, namespace, in_scope=True)
        await _elasticsearch_with_secrets(kube, namespace, "a")

        await set_in_scope(kube, namespace, False)

        async def out_of_scope() -> bool:
            return await _phase(client, workflow_id) == "OutOfScope"

        await eventually(out_of_scope, what="the workflow OutOfScope", within=60)
        await kube.delete(ES, namespace=namespace, name="a")

        async def completed() -> bool:
            return await _status(client, workflow_id) == WorkflowExecutionStatus.COMPLETED

        await eventually(completed, what="the workflow completed", within=60)
        assert not await _secret_exists(kube, namespace, "a-es-elastic-user"), stack.operator.tail()
        # The namespace coming back starts no new run for the gone resource.
        await set_in_scope(kube, namespace, True)

        async def flipped_back() -> bool:
            query = (
                "WorkflowType='NamespaceFlipWorkflow' AND ExecutionStatus='Completed'"
                f" AND WorkflowId STARTS_WITH 'flip/{namespace}/'"
            )
            return (await client.count_workflows(query)).count >= 2

        await eventually(flipped_back, what="the flips out of and back into scope done", within=60)
        assert await _status(client, workflow_id) == WorkflowExecutionStatus.COMPLETED


async def test_the_start_up_sweep_collects_what_was_missed_while_stopped(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    namespace, workflow_id = "ns2", "elasticsearch/ns2/b"
    async with operator_stack(tmp_path, cluster_target) as stack:
        kube, client = stack.kube, stack.temporal.client
        await eventually(lambda: _leading(kube), what="the operator leading", within=60)
        await create_namespace(kube, namespace, in_scope=True)
        await _elasticsearch_with_secrets(kube, namespace, "b")
        schedule = await client.get_schedule_handle(SWEEP_SCHEDULE_ID).describe()
        assert schedule.schedule.spec.intervals, "the sweep is scheduled"

        # While the operator is stopped: the Elasticsearch is deleted and a Secret soft-owned by
        # an Elasticsearch that does not exist appears. Nobody hears of either.
        assert await stack.operator.stop() == 0, stack.operator.tail()
        await kube.delete(ES, namespace=namespace, name="b")
        orphan = {
            "metadata": {
                "name": "ghost-es-http-certs-public",
                "namespace": namespace,
                "labels": soft_owner_labels(
                    namespace=namespace, name="ghost", kind="Elasticsearch"
                ),
            },
            "data": {},
        }
        await kube.create(SECRETS, orphan, namespace=namespace)
        assert await _status(client, workflow_id) == WorkflowExecutionStatus.RUNNING
        await stack.operator.start()

        async def collected() -> bool:
            return (
                await _status(client, workflow_id) == WorkflowExecutionStatus.COMPLETED
                and not await _secret_exists(kube, namespace, "b-es-elastic-user")
                and not await _secret_exists(kube, namespace, "ghost-es-http-certs-public")
            )

        await eventually(collected, what="the sweep collected the garbage", within=90)
