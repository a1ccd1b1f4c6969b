"""Scaling out: three operator replicas against one Temporal server share the reconciles.

Only the leader's watchers signal; every replica runs a worker, so the workflows (and the reconcile
steps, which run in the worker that holds the workflow task) spread over the replicas.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError

from stackflow.kube.leader import DEFAULT_LEASE_NAME
from stackflow.models.kinds import LEASES
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    Operator,
    accept_trial,
    create_namespace,
    get_or_none,
    manifest,
    temporal_server,
    write_operator_config,
)
from tests.polling import eventually

REPLICAS = 3
RESOURCES = 12
NAMESPACE = "team-scale"


async def _reconciles(client: Client, workflow_id: str) -> int:
    """How many reconciles the workflow has done (0 while it does not exist yet)."""
    try:
        state = await client.get_workflow_handle(workflow_id).query("state")
    except RPCError:
        return 0
    return int(state["reconciles"]) if isinstance(state, dict) else 0


@pytest.mark.timeout(400)
async def test_replicas_share_the_reconciles_while_one_leads(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    async with cluster_target.open(tmp_path) as cluster, temporal_server() as temporal:
        kube, kubeconfig = cluster.kube, cluster.operator_kubeconfig
        await accept_trial(kube, operator_namespace="elastic-system")
        config = write_operator_config(tmp_path / "operator.yaml", temporal=temporal)
        operators = [
            Operator(config=config, kubeconfig=kubeconfig, log=tmp_path / f"operator-{index}.log")
            for index in range(REPLICAS)
        ]
        for operator in operators:
            await operator.start()
        try:
            await create_namespace(kube, NAMESPACE, in_scope=True)
            spec = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}
            for index in range(RESOURCES):
                name = f"es-{index}"
                await kube.create(
                    ES, manifest("Elasticsearch", name, NAMESPACE, spec), namespace=NAMESPACE
                )
            client = temporal.client
            workflow_ids = [f"elasticsearch/{NAMESPACE}/es-{index}" for index in range(RESOURCES)]
            reconciles: dict[str, int] = {}

            async def all_reconciled() -> bool:
                for workflow_id in workflow_ids:
                    if reconciles.get(workflow_id, 0) == 0:
                        reconciles[workflow_id] = await _reconciles(client, workflow_id)
                return all(reconciles.values())

            await eventually(
                all_reconciled, what=f"every Elasticsearch reconciled ({reconciles})", within=300
            )
            identities: set[str] = set()
            for workflow_id in workflow_ids:
                handle = client.get_workflow_handle(workflow_id)
                async for event in handle.fetch_history_events():
                    if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                        identities.add(event.workflow_task_completed_event_attributes.identity)
            assert len(identities) >= 2, identities
            lease = await get_or_none(
                kube, LEASES, namespace="elastic-system", name=DEFAULT_LEASE_NAME
            )
            assert lease is not None
            assert (lease.get("spec") or {}).get("holderIdentity")
        finally:
            statuses = [await operator.stop() for operator in operators]
        assert statuses == [0] * REPLICAS, [operator.tail() for operator in operators]
