"""The operator end to end, on kubesim and on the real API server: a Temporal dev server + ``stackflow run`` as a subprocess.

Driven only through the Kubernetes API (kubernetes_asyncio through ``stackflow.kube``), as a user
would with kubectl.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from stackflow.models.kinds import NAMESPACES
from tests.clusters import ClusterTarget, KubeCluster, ensure_namespace
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import (
    ES,
    SECRETS,
    STATEFULSETS,
    Operator,
    temporal_server,
)
from tests.polling import eventually


@pytest.fixture
async def cluster(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[KubeCluster]:
    """The cluster under test with the CRDs, the operator's kubeconfig and an admin client."""
    async with cluster_target.open(tmp_path) as cluster:
        yield cluster


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server on 127.0.0.1."""
    async with temporal_server() as env:
        yield env


def elasticsearch(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


async def test_dynamic_scope_end_to_end(
    cluster: KubeCluster,
    temporal: WorkflowEnvironment,
    tmp_path: Path,
) -> None:
    kube, kubeconfig = cluster.kube, cluster.operator_kubeconfig
    config = tmp_path / "operator.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "operator-namespace": "elastic-system",
                "namespace-selector": {"matchLabels": {"eck-visible": "true"}},
                "temporal-address": temporal.client.service_client.config.target_host,
            }
        )
    )
    for name, labels in (
        ("elastic-system", {}),
        ("team-a", {"eck-visible": "true"}),
        ("team-b", {}),
    ):
        await ensure_namespace(kube, name, labels)
    await kube.create(
        SECRETS,
        {
            "metadata": {
                "name": "eck-trial",
                "namespace": "elastic-system",
                "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
                "annotations": {"elastic.co/eula": "accepted"},
            }
        },
        namespace="elastic-system",
    )
    operator = Operator(config=config, kubeconfig=kubeconfig, log=tmp_path / "operator.log")
    await operator.start()
    try:
        for namespace in ("team-a", "team-b"):
            await kube.create(ES, elasticsearch(namespace), namespace=namespace)

        async def health(namespace: str) -> str:
            es = await kube.get(ES, namespace=namespace, name="quickstart")
            return str((es.get("status") or {}).get("health") or "")

        async def reconciled(namespace: str) -> bool:
            es = await kube.get(ES, namespace=namespace, name="quickstart")
            return nodes_up_health_unknown(es)

        async def team_a_reconciled() -> bool:
            return await reconciled("team-a")

        await eventually(team_a_reconciled, what="team-a Elasticsearch reconciled")
        # Out of scope: no status, no children.
        assert await health("team-b") == ""
        listed = await kube.list(STATEFULSETS, namespace="team-b")
        assert listed["items"] == []

        # Kill the operator; label team-b while it is down; a new operator finishes the job.
        assert await operator.stop(signal.SIGKILL) == -signal.SIGKILL
        await kube.merge_patch(
            NAMESPACES,
            {"metadata": {"labels": {"eck-visible": "true"}}},
            namespace=None,
            name="team-b",
        )
        await operator.start()

        async def team_b_reconciled() -> bool:
            return await reconciled("team-b")

        # The new operator first waits out the killed one's Lease (15 s), then resyncs.
        await eventually(
            team_b_reconciled, within=120, what="team-b Elasticsearch reconciled after the restart"
        )
    finally:
        assert await operator.stop() == 0, (tmp_path / "operator.log").read_text()[-3000:]
