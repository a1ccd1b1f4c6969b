"""Keep a FakeElasticsearch's nodes in line with a cluster's Pods, as a real cluster's membership
follows its Pods: a node per ready Pod, none for a Pod that is gone, not ready or terminating.

A node is named after its Pod, has the roles the Pod's ``node-<role>`` labels say and the version
of its ``version`` label. A node that leaves and comes back keeps its id, as a real node does (the
id is stored on its data volume), whatever the new Pod's uid; a Pod whose roles or version changed
(a rolling upgrade) is a node that restarted with them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import PODS
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    DATA_TIERS,
    pod_state_from_manifest,
)
from stackflow.stack.labels import ES_NODE_ROLES, ES_VERSION_LABEL, node_role_label
from tests.fakes.fake_elasticsearch import (
    DEFAULT_NODE_ROLES,
    DEFAULT_NODE_VERSION,
    FakeElasticsearch,
)

__all__ = ["following_pods", "node_roles_from_labels", "sync_nodes_with_pods"]

#: Every Elasticsearch Pod, whatever its cluster: one fake stands in for many clusters.
ELASTICSEARCH_PODS = "common.k8s.elastic.co/type=elasticsearch"


def node_roles_from_labels(labels: Mapping[str, str]) -> tuple[str, ...]:
    """The roles a Pod's ``node-<role>`` labels say, sorted as ``GET _nodes`` lists them.

    A Pod without any role label has Elasticsearch's default roles. ``node-data`` is true for any
    node that holds data (a tier role or the generic one), so it stands for the generic ``data``
    role only when no tier label is true, or all of them are (the default roles).
    """
    if not any(node_role_label(role) in labels for role in ES_NODE_ROLES):
        return DEFAULT_NODE_ROLES
    roles = {
        role
        for role in ES_NODE_ROLES
        if role != "data" and labels.get(node_role_label(role)) == "true"
    }
    tiers = {tier for tier in DATA_TIERS if tier in roles}
    if labels.get(node_role_label("data")) == "true" and (not tiers or tiers == set(DATA_TIERS)):
        roles.add("data")
    return tuple(sorted(roles))


def sync_nodes_with_pods(fake: FakeElasticsearch, pods: Iterable[Mapping[str, Any]]) -> None:
    """Make ``fake``'s nodes the ready, not terminating ``pods`` (Pod manifests, as listed).

    Nodes whose Pod is gone, not ready or terminating leave first (their copies unassigned,
    replicas promoted), then each ready Pod without a node joins (or rejoins with its old id);
    the shards are allocated after each change, as the fake always does.
    """
    wanted: dict[str, tuple[tuple[str, ...], str]] = {}
    for pod in pods:
        state = pod_state_from_manifest(pod)
        if state.ready and not state.terminating:
            version = state.labels.get(ES_VERSION_LABEL) or DEFAULT_NODE_VERSION
            wanted[state.name] = (node_roles_from_labels(state.labels), version)
    nodes = fake.state.cluster.nodes
    for name in list(nodes):
        if name not in wanted:
            fake.remove_node(name)
    for name, (roles, version) in wanted.items():
        node = nodes.get(name)
        if node is None or node.roles != roles or node.version != version:
            fake.add_node(name, roles=roles, version=version)


@contextlib.asynccontextmanager
async def following_pods(
    fake: FakeElasticsearch, kube: ResourceClient, *, period: float = 0.5
) -> AsyncIterator[None]:
    """For the span of the block, keep ``fake``'s nodes in line with every Elasticsearch Pod
    ``kube`` lists, every ``period`` seconds (the pace of a cluster's membership, not a wait).

    A fake that stands in for many clusters then answers each cluster's ``_nodes`` with its Pods,
    as a real cluster would: a downscale's or a rolling restart's decisions can be made. A listing
    that fails (an API server restarting under a fault) is skipped until the next period.
    """

    async def follow() -> None:
        while True:
            with contextlib.suppress(Exception):
                listed = await kube.list(PODS, label_selector=ELASTICSEARCH_PODS)
                sync_nodes_with_pods(fake, listed["items"])
            await asyncio.sleep(period)

    task = asyncio.create_task(follow())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
