"""Changing a running cluster with real data: a version upgrade, a ``config`` change, a downscale
3 → 1, an upscale 1 → 3 and a node set renamed, while a writer keeps indexing and a reader asks
``_cluster/health`` every second.

One cluster (``es-o/data``) goes through the scenarios in order. Each asserts what a user sees:
every Pod replaced exactly once and one at a time, the cluster never red, every acknowledged
document there at the end, and the operator's status saying what it does. Each prints its figures
(time, Pod replacements, health samples, documents).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest

from esrunner.distributions import unavailable_reason as version_unavailable
from stackflow.models.kinds import PODS
from tests.e2e.harness import ES, get_or_none
from tests.elasticsearch.observe import Observations, observed
from tests.elasticsearch.real_stack import (
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    green_with,
    in_scope_namespace,
)
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "es-o"
NAME = "data"
INDEX = "docs"
#: An 8.x minor and the next one: the upgrade path the scenario takes.
FROM_VERSION = "8.17.0"
TO_VERSION = "8.18.0"
DOCUMENTS = 1000
#: A rolling change of three real nodes, each stopping, starting and recovering its shards.
CHANGE_WITHIN = 900.0


def _skip_without_versions() -> None:
    for version in (FROM_VERSION, TO_VERSION):
        reason = version_unavailable(version)
        if reason:
            pytest.skip(f"upgrade scenario skipped: {reason}")


async def _es(stack: RealStack) -> dict[str, Any]:
    return dict(await stack.kube.get(ES, namespace=NS, name=NAME))


async def _patch_spec(stack: RealStack, spec: Mapping[str, Any]) -> None:
    await stack.kube.merge_patch(ES, {"spec": dict(spec)}, namespace=NS, name=NAME)


async def _cluster(stack: RealStack) -> ElasticsearchOf:
    """The scenario's cluster: three nodes at ``FROM_VERSION`` holding ``DOCUMENTS`` documents."""
    _skip_without_versions()
    es = ElasticsearchOf(stack.kube, NS, NAME)
    if await get_or_none(stack.kube, ES, namespace=NS, name=NAME) is None:
        await in_scope_namespace(stack.kube, NS)
        await stack.kube.create(ES, elasticsearch(NS, NAME, version=FROM_VERSION), namespace=NS)
        await green_with(es, 3)
        await es.call(
            "PUT",
            f"/{INDEX}",
            {"settings": {"number_of_shards": 3, "number_of_replicas": 1}},
        )
        lines = "".join(
            f'{{"index":{{"_id":"seed-{n}"}}}}\n{{"n":{n}}}\n' for n in range(DOCUMENTS)
        )
        await es.call("POST", f"/{INDEX}/_bulk?refresh=true", lines)
        await green_with(es, 3)
    return es


async def _documents_there(es: ElasticsearchOf, seen: Observations) -> int:
    """Every acknowledged document is there; answers the index's document count."""
    await es.call("POST", f"/{INDEX}/_refresh")
    _, count = await es.call("GET", f"/{INDEX}/_count")
    for start in range(0, len(seen.acknowledged), 500):
        ids = seen.acknowledged[start : start + 500]
        _, found = await es.call(
            "POST",
            f"/{INDEX}/_search",
            {"size": 0, "track_total_hits": True, "query": {"ids": {"values": ids}}},
        )
        assert found["hits"]["total"]["value"] == len(ids), "an acknowledged document is missing"
    total = int(count["count"])
    assert total >= DOCUMENTS + len(seen.acknowledged)
    return total


async def _reconciled(stack: RealStack, *, version: str, nodes: int) -> None:
    async def done() -> bool:
        status = (await _es(stack)).get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        complete = conditions.get("ReconciliationComplete", {}).get("status") == "True"
        return (
            complete
            and status.get("phase") == "Ready"
            and status.get("version") == version
            and status.get("availableNodes") == nodes
        )

    await eventually(
        done, within=CHANGE_WITHIN, what=f"{NS}/{NAME} Ready at {version} with {nodes} nodes"
    )


def _report(scenario: str, started: float, seen: Observations, documents: int) -> None:
    print(
        f"\n[{scenario}] {time.monotonic() - started:.0f} s, {seen.summary()}, "
        f"documents {documents}"
    )


async def _pods(stack: RealStack) -> dict[str, str]:
    listed = await stack.kube.list(
        PODS, namespace=NS, label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={NAME}"
    )
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in listed["items"]}


async def test_a_version_upgrade_replaces_each_pod_once_one_at_a_time(es_stack: RealStack) -> None:
    es = await _cluster(es_stack)
    before = await _pods(es_stack)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="upgrade", expected_pods=3) as seen:
        await _patch_spec(es_stack, {"version": TO_VERSION})
        await _reconciled(es_stack, version=TO_VERSION, nodes=3)
        await green_with(es, 3)
    documents = await _documents_there(es, seen)
    _report("upgrade", started, seen, documents)
    assert seen.replaced() == dict.fromkeys(before, 1)
    assert seen.most_unavailable == 1
    assert seen.health["red"] == 0
    _, nodes = await es.call("GET", "/_cat/nodes?format=json&h=name,version")
    assert {node["version"] for node in nodes} == {TO_VERSION}


async def test_a_config_change_is_a_rolling_restart(es_stack: RealStack) -> None:
    es = await _cluster(es_stack)
    resource = await _es(es_stack)
    node_sets = resource["spec"]["nodeSets"]
    node_sets[0]["config"] = {"node.attr.rack": "r1"}
    before = await _pods(es_stack)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="config", expected_pods=3) as seen:
        await _patch_spec(es_stack, {"nodeSets": node_sets})
        version = str(resource["spec"]["version"])

        async def restarted() -> bool:
            return all(uid != before.get(name) for name, uid in (await _pods(es_stack)).items())

        await eventually(restarted, within=CHANGE_WITHIN, what="every Pod restarted")
        await _reconciled(es_stack, version=version, nodes=3)
        await green_with(es, 3)
    documents = await _documents_there(es, seen)
    _report("config change", started, seen, documents)
    assert seen.replaced() == dict.fromkeys(before, 1)
    assert seen.most_unavailable == 1
    assert seen.health["red"] == 0
    _, attrs = await es.call("GET", "/_cat/nodeattrs?format=json&h=node,attr,value")
    assert {a["node"] for a in attrs if a["attr"] == "rack" and a["value"] == "r1"} == set(before)
