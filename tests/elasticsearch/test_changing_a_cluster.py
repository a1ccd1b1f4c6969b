"""Changing a running cluster with real data: a version upgrade (through an operator SIGKILL and a
Temporal crash), a ``config`` change, a downscale 3 → 1, an upscale 1 → 3 and a node set renamed,
while a writer keeps indexing and a reader asks ``_cluster/health`` every second.

One cluster (``es-o/data``) goes through the scenarios in order. Each asserts what a user sees:
every Pod replaced exactly once and one at a time, the cluster never red, every acknowledged
document there at the end, and the operator's status saying what it does. Each prints its figures
(time, Pod replacements, health samples, documents).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Mapping
from typing import Any

import pytest

from stackflow.models.kinds import PERSISTENTVOLUMECLAIMS, SECRETS, SERVICES, STATEFULSETS
from tests.e2e.harness import ES, get_or_none
from tests.elasticsearch.changes import (
    CHANGE_WITHIN,
    INDEX,
    TO_VERSION,
    deletions_in_history,
    document_count,
    documents_there,
    pod_uids,
    replaced_at_least,
    report,
    resource,
    seeded_cluster,
)
from tests.elasticsearch.changes import reconciled as reconciled_as
from tests.elasticsearch.observe import observed
from tests.elasticsearch.real_stack import ElasticsearchOf, RealStack, green_with
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")
#: On the real API server alone where it runs (tests/elasticsearch/conftest.py).
ONE_API_SERVER = True

NS = "es-o"
NAME = "data"


async def _es(stack: RealStack) -> dict[str, Any]:
    return await resource(stack, NS, NAME)


async def _patch_spec(stack: RealStack, spec: Mapping[str, Any]) -> None:
    await stack.kube.merge_patch(ES, {"spec": dict(spec)}, namespace=NS, name=NAME)


async def _cluster(stack: RealStack) -> ElasticsearchOf:
    return await seeded_cluster(stack, NS, NAME)


async def _reconciled(stack: RealStack, *, version: str, nodes: int) -> None:
    await reconciled_as(stack, NS, NAME, version=version, nodes=nodes)


async def _pods(stack: RealStack) -> dict[str, str]:
    return await pod_uids(stack, NS, NAME)


async def _claims(stack: RealStack) -> set[str]:
    listed = await stack.kube.list(
        PERSISTENTVOLUMECLAIMS,
        namespace=NS,
        label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={NAME}",
    )
    return {claim["metadata"]["name"] for claim in listed["items"]}


async def test_a_version_upgrade_replaces_each_pod_once_one_at_a_time_through_faults(
    es_stack: RealStack,
) -> None:
    """The reliability suite's fault kind on a real cluster: mid-upgrade the operator is
    SIGKILLed, then the Temporal server crashes; the upgrade resumes where it stopped."""
    es = await _cluster(es_stack)
    before = await _pods(es_stack)
    documents_before = await document_count(es)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="upgrade", expected_pods=3) as seen:
        await _patch_spec(es_stack, {"version": TO_VERSION})
        await replaced_at_least(seen, 1)
        assert await es_stack.operator.stop(signal.SIGKILL) == -signal.SIGKILL
        await es_stack.operator.start()
        await replaced_at_least(seen, 2)
        await es_stack.temporal.kill()
        await es_stack.temporal.start()
        await _reconciled(es_stack, version=TO_VERSION, nodes=3)
        await green_with(es, 3)
    documents = await documents_there(es, seen)
    report(
        "upgrade, operator SIGKILL and Temporal crash", started, seen, documents, documents_before
    )
    assert seen.replaced() == dict.fromkeys(before, 1)
    assert seen.most_unavailable == 1
    assert seen.health["red"] == 0
    _, nodes = await es.call("GET", "/_cat/nodes?format=json&h=name,version")
    assert {node["version"] for node in nodes} == {TO_VERSION}
    # No step repeated, none skipped: one deletion per Pod in the workflow's history.
    assert await deletions_in_history(es_stack, NS, NAME) == dict.fromkeys(before, 1)


async def test_a_config_change_is_a_rolling_restart(es_stack: RealStack) -> None:
    es = await _cluster(es_stack)
    resource = await _es(es_stack)
    node_sets = resource["spec"]["nodeSets"]
    node_sets[0]["config"] = {"node.attr.rack": "r1"}
    before = await _pods(es_stack)
    documents_before = await document_count(es)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="config", expected_pods=3) as seen:
        await _patch_spec(es_stack, {"nodeSets": node_sets})
        version = str(resource["spec"]["version"])

        async def restarted() -> bool:
            return all(uid != before.get(name) for name, uid in (await _pods(es_stack)).items())

        await eventually(restarted, within=CHANGE_WITHIN, what="every Pod restarted")
        await _reconciled(es_stack, version=version, nodes=3)
        await green_with(es, 3)
    documents = await documents_there(es, seen)
    report("config change", started, seen, documents, documents_before)
    assert seen.replaced() == dict.fromkeys(before, 1)
    assert seen.most_unavailable == 1
    assert seen.health["red"] == 0
    _, attrs = await es.call("GET", "/_cat/nodeattrs?format=json&h=node,attr,value")
    assert {a["node"] for a in attrs if a["attr"] == "rack" and a["value"] == "r1"} == set(before)


async def _node_set(stack: RealStack) -> list[dict[str, Any]]:
    return list((await _es(stack))["spec"]["nodeSets"])


async def test_a_downscale_to_one_node_moves_the_data_before_each_node_leaves(
    es_stack: RealStack,
) -> None:
    es = await _cluster(es_stack)
    version = str((await _es(es_stack))["spec"]["version"])
    node_sets = await _node_set(es_stack)
    node_sets[0]["count"] = 1
    documents_before = await document_count(es)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="downscale", expected_pods=1) as seen:
        await _patch_spec(es_stack, {"nodeSets": node_sets})

        # Node 2 leaves once its copies moved. Node 1 then holds a copy of every shard that node
        # 0 holds the other copy of: with one replica, there is nowhere to move it. The operator
        # waits and says why (ECK's "ensure index settings allow node removal").
        async def waiting_for_node_1() -> bool:
            status = (await _es(es_stack)).get("status") or {}
            leaving = (status.get("inProgressOperations") or {}).get("downscale") or {}
            names = [node["name"] for node in leaving.get("nodes") or []]
            return (
                status.get("phase") == "MigratingData"
                and f"{NAME}-es-default-1" in names
                and set(await _pods(es_stack)) == {f"{NAME}-es-default-{i}" for i in (0, 1)}
            )

        await eventually(
            waiting_for_node_1, within=CHANGE_WITHIN, what="node 1 held back, data to move"
        )
        _, health = await es.call("GET", "/_cluster/health")
        assert health["number_of_nodes"] == 2
        assert health["status"] == "green"
        # The user lowers the replicas, as the event asks; the copies on node 1 can go.
        await es.call("PUT", f"/{INDEX}/_settings", {"index": {"number_of_replicas": 0}})
        await _reconciled(es_stack, version=version, nodes=1)
        await green_with(es, 1)
    documents = await documents_there(es, seen)
    report("downscale 3 -> 1", started, seen, documents, documents_before)
    assert set(await _pods(es_stack)) == {f"{NAME}-es-default-0"}
    assert seen.health["red"] == 0
    _, exclusions = await es.call(
        "GET",
        "/_cluster/state/metadata?filter_path=metadata.cluster_coordination.voting_config_exclusions",
    )
    # Each leaving master was excluded from voting first; the exclusions are cleared at the end.
    assert exclusions["metadata"]["cluster_coordination"]["voting_config_exclusions"] == []

    # The leaving nodes' claims are deleted by the operator once their StatefulSet has shrunk (the
    # StatefulSet retains them, as ECK's); the remaining node keeps its own.
    async def only_node_0_claimed() -> bool:
        return await _claims(es_stack) == {f"elasticsearch-data-{NAME}-es-default-0"}

    await eventually(only_node_0_claimed, within=CHANGE_WITHIN, what="claims of removed nodes gone")


async def test_an_upscale_joins_the_running_cluster(es_stack: RealStack) -> None:
    es = await _cluster(es_stack)
    version = str((await _es(es_stack))["spec"]["version"])
    _, before = await es.call("GET", "/_cluster/state/metadata?filter_path=metadata.cluster_uuid")
    node_sets = await _node_set(es_stack)
    node_sets[0]["count"] = 3
    documents_before = await document_count(es)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="upscale", expected_pods=3) as seen:
        await _patch_spec(es_stack, {"nodeSets": node_sets})
        await _reconciled(es_stack, version=version, nodes=3)
        await green_with(es, 3)
    documents = await documents_there(es, seen)
    report("upscale 1 -> 3", started, seen, documents, documents_before)
    for pod in (f"{NAME}-es-default-{i}" for i in range(3)):
        _, after = await es.call(
            "GET", "/_cluster/state/metadata?filter_path=metadata.cluster_uuid", pod=pod
        )
        assert after == before, f"{pod} is in another cluster"
    assert seen.health["red"] == 0


async def test_a_renamed_node_set_replaces_the_old_one_without_losing_data(
    es_stack: RealStack,
) -> None:
    es = await _cluster(es_stack)
    await es.call("PUT", f"/{INDEX}/_settings", {"index": {"number_of_replicas": 1}})
    await green_with(es, 3)
    resource = await _es(es_stack)
    version = str(resource["spec"]["version"])
    renamed = dict(resource["spec"]["nodeSets"][0], name="renamed", count=2)
    documents_before = await document_count(es)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="rename", expected_pods=2) as seen:
        await _patch_spec(es_stack, {"nodeSets": [renamed]})
        await _reconciled(es_stack, version=version, nodes=2)
        await green_with(es, 2)
    documents = await documents_there(es, seen)
    report("rename default(3) -> renamed(2)", started, seen, documents, documents_before)
    assert set(await _pods(es_stack)) == {f"{NAME}-es-renamed-{i}" for i in range(2)}
    assert (
        await get_or_none(es_stack.kube, STATEFULSETS, namespace=NS, name=f"{NAME}-es-default")
        is None
    )
    assert seen.health["red"] == 0
    # The old node set's headless Service and Secrets went with its StatefulSet.
    assert (
        await get_or_none(es_stack.kube, SERVICES, namespace=NS, name=f"{NAME}-es-default") is None
    )
    assert (
        await get_or_none(es_stack.kube, SECRETS, namespace=NS, name=f"{NAME}-es-default-es-config")
        is None
    )
