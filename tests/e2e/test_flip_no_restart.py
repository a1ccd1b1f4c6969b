"""A namespace flip needs no restart: on kubesim and on the real API server, ``stackflow run``
(a subprocess) keeps its process and its Lease while a namespace labelled into scope is reconciled.

The Lease ``elastic-system/stackflow-leader`` is the leader's: a restarted operator would hold it
under a new identity (and a re-acquired Lease gets a new ``acquireTime``); a restarted process has a
new pid. Both stay as they were from before the flip until the newly scoped cluster is reconciled
(its nodes up, its health ``unknown``: its Pods run no Elasticsearch to measure).

With the watcher's fast path lost (turned off here, as if the process that saw the flip died with
its signals unsent), the flip workflow alone still brings the namespace's Elasticsearch in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stackflow.kube.leader import DEFAULT_LEASE_NAME, LeaseRecord
from stackflow.kube.resources import ResourceClient
from stackflow.models.engine import FlipDirectionName, NamespaceFlipResult
from stackflow.models.kinds import LEASES, STATEFULSETS
from tests.clusters import ClusterTarget
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import (
    ES,
    Stack,
    create_namespace,
    get_or_none,
    operator_stack,
    set_in_scope,
    workflow_triggers,
)
from tests.polling import eventually
from watchers.flips import FAST_PATH_ENV, flip_trigger

OPERATOR_NAMESPACE = "elastic-system"


@pytest.fixture
async def stack(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[Stack]:
    """The cluster, a Temporal dev server and ``stackflow run`` (dynamic scope, trial license)."""
    async with operator_stack(tmp_path, cluster_target) as running:
        yield running


@pytest.fixture
async def stack_without_fast_path(
    cluster_target: ClusterTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    """As ``stack``, the operator started with the flip fast path off: a flip reaches its
    resources through the ``NamespaceFlipWorkflow`` only."""
    monkeypatch.setenv(FAST_PATH_ENV, "0")
    async with operator_stack(tmp_path, cluster_target) as running:
        yield running


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


async def health(kube: ResourceClient, namespace: str) -> str:
    """The Elasticsearch's reported health ("" before any status)."""
    es = await kube.get(ES, namespace=namespace, name="quickstart")
    return str((es.get("status") or {}).get("health") or "")


async def lease(kube: ResourceClient) -> LeaseRecord:
    """The leader's Lease as stored."""
    stored = await kube.get(LEASES, namespace=OPERATOR_NAMESPACE, name=DEFAULT_LEASE_NAME)
    return LeaseRecord.from_lease(stored)


async def test_a_flip_into_scope_is_reconciled_by_the_same_process_and_leader(
    stack: Stack,
) -> None:
    kube = stack.kube
    for namespace, in_scope in (("flip-managed", True), ("flip-later", False)):
        await create_namespace(kube, namespace, in_scope=in_scope)
        await kube.create(ES, elasticsearch(namespace), namespace=namespace)

    async def managed_reconciled() -> bool:
        return nodes_up_health_unknown(
            await kube.get(ES, namespace="flip-managed", name="quickstart")
        )

    await eventually(managed_reconciled, within=120, what="the managed Elasticsearch reconciled")

    async def led() -> bool:
        return bool((await lease(kube)).holder_identity)

    await eventually(led, what="a leader holds the Lease")
    leader_before = await lease(kube)
    process = stack.operator.process
    assert process is not None
    pid_before = process.pid
    # Out of scope until the flip: no status, no children.
    assert await health(kube, "flip-later") == ""
    assert (await kube.list(STATEFULSETS, namespace="flip-later"))["items"] == []

    await set_in_scope(kube, "flip-later", True)

    async def flipped_reconciled() -> bool:
        return nodes_up_health_unknown(
            await kube.get(ES, namespace="flip-later", name="quickstart")
        )

    await eventually(flipped_reconciled, within=120, what="the flipped Elasticsearch reconciled")
    leader_after = await lease(kube)
    assert leader_after.holder_identity == leader_before.holder_identity
    assert leader_after.acquire_time == leader_before.acquire_time
    assert leader_after.lease_transitions == leader_before.lease_transitions
    # The same process did it, and is still running.
    assert stack.operator.process is process
    assert process.pid == pid_before
    assert process.returncode is None


async def test_without_the_fast_path_the_flip_workflow_still_delivers(
    stack_without_fast_path: Stack,
) -> None:
    kube = stack_without_fast_path.kube

    async def led() -> bool:
        stored = await get_or_none(
            kube, LEASES, namespace=OPERATOR_NAMESPACE, name=DEFAULT_LEASE_NAME
        )
        return stored is not None and bool(LeaseRecord.from_lease(stored).holder_identity)

    # A leader's watchers see the flip (before one leads, its start-up resync covers all).
    await eventually(led, what="a leader holds the Lease")
    await create_namespace(kube, "flip-durable", in_scope=False)
    await kube.create(ES, elasticsearch("flip-durable"), namespace="flip-durable")

    flipped = await set_in_scope(kube, "flip-durable", True)

    async def reconciled() -> bool:
        return bool((await kube.list(STATEFULSETS, namespace="flip-durable"))["items"])

    await eventually(reconciled, within=120, what="the flipped Elasticsearch's StatefulSet")
    # The flip's trigger came from the flip workflow (the fast path is off), which counted it.
    resource_version = flipped["metadata"]["resourceVersion"]
    trigger = flip_trigger("flip-durable", resource_version, FlipDirectionName.INTO_SCOPE)
    client = stack_without_fast_path.temporal.client
    flip = await client.get_workflow_handle(
        trigger.source, result_type=NamespaceFlipResult
    ).result()
    assert flip.triggered["elasticsearch"] == 1
    assert trigger in await workflow_triggers(client, "elasticsearch/flip-durable/quickstart")
