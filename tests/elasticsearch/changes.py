"""Shared steps of the scenarios that change a running cluster with real data.

A seeded cluster (an index of ``DOCUMENTS`` documents with one replica), the checks a user makes
at the end (every acknowledged document is there), the wait for the operator to report the change
done, and the figures each scenario prints.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType

from esrunner.distributions import unavailable_reason as version_unavailable
from stackflow.models.engine import ACT_CLUSTER_STEP
from stackflow.models.kinds import PODS
from tests.e2e.harness import ES, get_or_none
from tests.elasticsearch.observe import Observations
from tests.elasticsearch.real_stack import (
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    green_with,
    in_scope_namespace,
)
from tests.polling import eventually

INDEX = "docs"
#: An 8.x minor and the next one: the upgrade path the scenarios take.
FROM_VERSION = "8.17.0"
TO_VERSION = "8.18.0"
DOCUMENTS = 1000
#: A rolling change of three real nodes, each stopping, starting and recovering its shards.
CHANGE_WITHIN = 900.0


def skip_without_versions() -> None:
    """Skip (one line) unless both versions of the upgrade path are installed and runnable."""
    for version in (FROM_VERSION, TO_VERSION):
        reason = version_unavailable(version)
        if reason:
            pytest.skip(f"upgrade scenario skipped: {reason}")


async def resource(stack: RealStack, namespace: str, name: str) -> dict[str, Any]:
    """The Elasticsearch resource as it is now."""
    return dict(await stack.kube.get(ES, namespace=namespace, name=name))


async def seeded_cluster(stack: RealStack, namespace: str, name: str) -> ElasticsearchOf:
    """Three nodes at ``FROM_VERSION`` holding ``DOCUMENTS`` documents (created once)."""
    skip_without_versions()
    es = ElasticsearchOf(stack.kube, namespace, name)
    if await get_or_none(stack.kube, ES, namespace=namespace, name=name) is None:
        await in_scope_namespace(stack.kube, namespace)
        await stack.kube.create(
            ES, elasticsearch(namespace, name, version=FROM_VERSION), namespace=namespace
        )
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


async def documents_there(es: ElasticsearchOf, seen: Observations) -> int:
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


async def reconciled(
    stack: RealStack, namespace: str, name: str, *, version: str, nodes: int
) -> None:
    """Wait until the operator reports the cluster Ready at ``version`` with ``nodes`` nodes."""

    async def done() -> bool:
        status = (await resource(stack, namespace, name)).get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        complete = conditions.get("ReconciliationComplete", {}).get("status") == "True"
        return (
            complete
            and status.get("phase") == "Ready"
            and status.get("version") == version
            and status.get("availableNodes") == nodes
        )

    await eventually(
        done,
        within=CHANGE_WITHIN,
        what=f"{namespace}/{name} Ready at {version} with {nodes} nodes",
    )


async def pod_uids(stack: RealStack, namespace: str, name: str) -> dict[str, str]:
    """The cluster's Pods: name → UID."""
    listed = await stack.kube.list(
        PODS,
        namespace=namespace,
        label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={name}",
    )
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in listed["items"]}


async def document_count(es: ElasticsearchOf) -> int:
    """How many documents the index holds now (refreshed first)."""
    await es.call("POST", f"/{INDEX}/_refresh")
    _, count = await es.call("GET", f"/{INDEX}/_count")
    return int(count["count"])


def report(
    scenario: str, started: float, seen: Observations, documents: int, before: int | None = None
) -> None:
    """Print the scenario's figures (pytest -s shows them; the note quotes them): time, Pod
    replacements, seconds of each health colour, documents before and after."""
    counts = (
        f"documents {before} before, {documents} after"
        if before is not None
        else (f"documents {documents}")
    )
    print(f"\n[{scenario}] {time.monotonic() - started:.0f} s, {seen.summary()}, {counts}")


async def deletions_in_history(stack: RealStack, namespace: str, name: str) -> dict[str, int]:
    """How many times the workflow scheduled the deletion of each Pod (every run of it)."""
    handle = stack.client.get_workflow_handle(f"elasticsearch/{namespace}/{name}")
    counts: dict[str, int] = {}
    description = await handle.describe()
    run_id: str | None = description.run_id
    # Continue-as-new chains runs: walk back through every run of the workflow.
    while run_id:
        run = stack.client.get_workflow_handle(f"elasticsearch/{namespace}/{name}", run_id=run_id)
        first = None
        async for event in run.fetch_history_events():
            if first is None:
                first = event
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name != ACT_CLUSTER_STEP:
                continue
            summary = event.user_metadata.summary.data.decode()
            if "delete Pod" in summary:
                pod = summary.split("delete Pod ", 1)[1].split(" ", 1)[0]
                counts[pod] = counts.get(pod, 0) + 1
        started = first.workflow_execution_started_event_attributes if first else None
        run_id = started.continued_execution_run_id if started is not None else None
    return counts


async def replaced_at_least(seen: Observations, count: int) -> None:
    """Wait until ``count`` Pod replacements were seen."""

    async def enough() -> bool:
        return sum(seen.replaced().values()) >= count

    await eventually(enough, within=CHANGE_WITHIN, what=f"{count} Pods replaced")
