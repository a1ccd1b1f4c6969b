"""Changing a running cluster on kubesim with the fake Elasticsearch's node-and-shard model: the
paths the minimal distribution cannot show (it has no node shutdown API).

Each pass is one reconcile followed by its steps, run as the workflow runs them
(``activities.cluster_steps``), with the fake's nodes kept in line with kubesim's ready Pods.
"""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.cluster_steps import run_cluster_step
from activities.context import ControllerContext
from activities.errors import translated_errors
from stackflow.models.cluster_steps import (
    AddVotingExclusions,
    AnyStep,
    DeletePod,
    PutNodeShutdown,
    ScaleStatefulSet,
)
from stackflow.models.engine import ClusterStepInput, Phase, ReconcileResult, ResourceRef
from stackflow.models.kinds import PODS
from tests.fakes.fake_cluster_nodes import sync_nodes_with_pods
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import Cluster, FakeFactory, cluster, fake_es
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest, es_ref, run_reconcile
from tests.polling import eventually

__all__ = ["cluster", "fake_es"]

PASSES = 200


class Passes:
    """Reconciles with their steps, until a condition holds; every step run is recorded, with the
    copies the fake held on each node when it ran."""

    def __init__(
        self, cluster: Cluster, context: ControllerContext, fake: FakeElasticsearch
    ) -> None:
        self.cluster = cluster
        self.context = context
        self.fake = fake
        self.ref: ResourceRef = es_ref()
        self.steps: list[AnyStep] = []
        self.copies_when: list[dict[str, int]] = []
        self.last: ReconcileResult | None = None

    async def pods(self) -> list[dict[str, Any]]:
        listed = await self.cluster.raw.list(PODS, namespace=NAMESPACE)
        return list(listed["items"])

    async def one(self) -> ReconcileResult:
        await self.cluster.kubesim.settle()
        sync_nodes_with_pods(self.fake, await self.pods())
        result = await run_reconcile(self.context, self.ref)
        for step in result.cluster_steps:
            layout = self.fake.state.cluster.copies_by_node()
            self.copies_when.append({node: len(copies) for node, copies in layout.items()})
            self.steps.append(step)
            await ActivityEnvironment().run(
                translated_errors(run_cluster_step),
                self.context,
                ClusterStepInput(ref=self.ref, step=step),
            )
        self.last = result
        return result

    async def until_ready(self, *, nodes: int) -> None:
        async def ready() -> bool:
            result = await self.one()
            pods = await self.pods()
            return result.phase is Phase.READY and len(pods) == nodes

        await eventually(ready, within=120, what=f"Ready with {nodes} nodes")


async def test_a_downscale_with_the_shutdown_api_waits_for_the_data_to_move(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    fake_es.state.shutdown_api = True
    passes = await _three_ready_nodes(cluster, fake_es)
    fake_es.create_index("docs", shards=3, replicas=1)
    leaving = "quickstart-es-default-2"
    assert fake_es.state.cluster.copies_on(leaving), "the leaving node holds copies to move"

    await cluster.raw.merge_patch(
        es_ref().resource,
        {"spec": {"nodeSets": [{"name": "default", "count": 2}]}},
        namespace=NAMESPACE,
        name="quickstart",
    )
    await passes.until_ready(nodes=2)

    kinds = [type(step) for step in passes.steps]
    put = kinds.index(PutNodeShutdown)
    scale = kinds.index(ScaleStatefulSet)
    requested = passes.steps[put]
    assert isinstance(requested, PutNodeShutdown)
    assert (requested.node, requested.type) == (leaving, "remove")
    assert requested.node_id == fake_es.state.cluster.known_ids[leaving]
    # The node leaves the voting configuration, then the StatefulSet shrinks; by then its
    # copies have moved (the fake's shutdown record read COMPLETE).
    assert kinds[scale - 1] is AddVotingExclusions
    assert passes.copies_when[scale].get(leaving, 0) == 0
    assert passes.steps[scale] == ScaleStatefulSet("quickstart-es-default", 2)


async def test_a_rolling_upgrade_with_the_shutdown_api_restarts_each_node_once(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    fake_es.state.shutdown_api = True
    passes = await _three_ready_nodes(cluster, fake_es)

    await cluster.raw.merge_patch(
        es_ref().resource, {"spec": {"version": "8.18.0"}}, namespace=NAMESPACE, name="quickstart"
    )

    async def upgraded() -> bool:
        result = await passes.one()
        pods = await passes.pods()
        versions = {
            p["metadata"]["labels"].get("elasticsearch.k8s.elastic.co/version") for p in pods
        }
        return result.phase is Phase.READY and versions == {"8.18.0"} and len(pods) == 3

    await eventually(upgraded, within=180, what="every node at 8.18.0")
    deleted = [step.pod for step in passes.steps if isinstance(step, DeletePod)]
    assert sorted(deleted) == [f"quickstart-es-default-{i}" for i in range(3)]
    # Each restart was asked of Elasticsearch first, and every record is cleaned up at the end.
    restarts = [s for s in passes.steps if isinstance(s, PutNodeShutdown) and s.type == "restart"]
    assert sorted(s.node for s in restarts) == sorted(deleted)
    assert fake_es.state.cluster.shutdowns == {}


async def _three_ready_nodes(cluster: Cluster, fake: FakeElasticsearch) -> Passes:
    context = cluster.context(elasticsearch=FakeFactory(fake))
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(
        es_ref().resource, es_manifest(count=3, version="8.17.0"), namespace=NAMESPACE
    )
    passes = Passes(cluster, context, fake)
    await passes.until_ready(nodes=3)
    return passes


async def _annotate(cluster: Cluster, key: str, value: str | None) -> None:
    await cluster.raw.merge_patch(
        es_ref().resource,
        {"metadata": {"annotations": {key: value}}},
        namespace=NAMESPACE,
        name="quickstart",
    )


async def test_a_paused_cluster_is_not_changed_until_the_pause_is_lifted(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    passes = await _three_ready_nodes(cluster, fake_es)
    await _annotate(cluster, "eck.k8s.elastic.co/pause-orchestration", "true")
    await cluster.raw.merge_patch(
        es_ref().resource,
        {"spec": {"nodeSets": [{"name": "default", "count": 2}]}},
        namespace=NAMESPACE,
        name="quickstart",
    )
    before = len(passes.steps)
    for _ in range(3):
        result = await passes.one()
        assert result.phase is not Phase.READY
    assert passes.steps[before:] == []
    assert len(await passes.pods()) == 3
    es = await cluster.raw.get(es_ref().resource, namespace=NAMESPACE, name="quickstart")
    conditions = {c["type"]: c for c in es["status"]["conditions"]}
    assert "Orchestration is paused" in conditions["ReconciliationComplete"]["message"]

    await _annotate(cluster, "eck.k8s.elastic.co/pause-orchestration", None)
    await passes.until_ready(nodes=2)


async def test_a_suspended_pod_is_deleted_once_to_come_back_suspended(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    passes = await _three_ready_nodes(cluster, fake_es)
    before = len(passes.steps)
    await _annotate(cluster, "eck.k8s.elastic.co/suspend", "quickstart-es-default-1")
    await passes.one()
    deleted = [s for s in passes.steps[before:] if isinstance(s, DeletePod)]
    assert [(s.pod, s.message) for s in deleted] == [
        ("quickstart-es-default-1", "Deleting pod to suspend it")
    ]
    assert deleted[0].uid
