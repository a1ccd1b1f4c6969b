"""Static-list scope end to end, on kubesim and the real API server: ``stackflow run`` with
``namespaces: [listed]`` reconciles the Elasticsearch of the listed namespace, and the one of an
unlisted namespace gets no workflow at all and is left untouched (ECK's multi-namespace cache: the
operator never watches that namespace). On the real API server the operator runs with the chart's
ServiceAccount token and the chart's static-list RBAC (no cluster-wide list or watch of namespaced
kinds), so a cluster-wide watch would show as Forbidden in its log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import SECRETS, STATEFULSETS
from tests.clusters import APISERVER, ClusterTarget, ensure_namespace
from tests.e2e.harness import ES, Operator, temporal_server
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPERATOR_NAMESPACE = "elastic-system"
LISTED, UNLISTED = "static-listed", "static-unlisted"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """One Temporal dev server on 127.0.0.1 for the module."""
    async with temporal_server() as env:
        yield env


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch ``quickstart``."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


async def reconciled(kube: ResourceClient, namespace: str) -> bool:
    """Whether the operator wrote the status of the current spec of ``namespace``/quickstart."""
    es = await kube.get(ES, namespace=namespace, name="quickstart")
    observed = (es.get("status") or {}).get("observedGeneration")
    return observed is not None and int(observed) == int(es["metadata"]["generation"])


async def workflow_exists(temporal: WorkflowEnvironment, workflow_id: str) -> bool:
    """Whether Temporal knows a workflow with that id."""
    try:
        await temporal.client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def test_a_static_list_reconciles_the_listed_namespace_and_never_sees_the_others(
    cluster_target: ClusterTarget, temporal: WorkflowEnvironment, tmp_path: Path
) -> None:
    options: dict[str, Any] = {}
    if cluster_target.name == APISERVER:
        # The chart's static-list RBAC: Roles in the listed and the operator namespace only.
        options = {
            "namespaces": (LISTED, UNLISTED),
            "chart_values": {"managedNamespaces": f"{{{LISTED}}}"},
        }
    async with cluster_target.open(tmp_path, **options) as cluster:
        kube = cluster.kube
        for name in (OPERATOR_NAMESPACE, LISTED, UNLISTED):
            await ensure_namespace(kube, name)
        config = tmp_path / "operator.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "operator-namespace": OPERATOR_NAMESPACE,
                    "namespaces": [LISTED],
                    "temporal-address": temporal.client.service_client.config.target_host,
                    "temporal-task-queue": f"static-list-{cluster_target.name}",
                }
            )
        )
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            # The unlisted one first: once the listed one is reconciled, both were delivered
            # to a cluster-wide watch, had there been one.
            for namespace in (UNLISTED, LISTED):
                await kube.create(ES, elasticsearch(namespace), namespace=namespace)

            async def listed_reconciled() -> bool:
                return await reconciled(kube, LISTED)

            try:
                await eventually(listed_reconciled, within=180, what="the listed Elasticsearch")
            except AssertionError as error:
                raise AssertionError(f"{error}\n{operator.tail()}") from None
            assert await workflow_exists(temporal, f"elasticsearch/{LISTED}/quickstart")
            # No workflow at all (not one waiting OutOfScope), for any controller.
            for controller in ("elasticsearch", "license"):
                workflow_id = f"{controller}/{UNLISTED}/quickstart"
                assert not await workflow_exists(temporal, workflow_id), workflow_id
            unlisted = await kube.get(ES, namespace=UNLISTED, name="quickstart")
            assert not unlisted.get("status")
            assert not unlisted["metadata"].get("finalizers")
            assert unlisted["metadata"]["generation"] == 1
            assert (await kube.list(STATEFULSETS, namespace=UNLISTED))["items"] == []
            assert (await kube.list(SECRETS, namespace=UNLISTED))["items"] == []
            assert "Forbidden" not in operator.log.read_text(errors="replace"), operator.tail()
        finally:
            assert await operator.stop() == 0, operator.tail()
