"""Builders for the orchestration table tests: a node in one line, a cluster from a few nodes.

A :class:`Node` is one Pod as ECK's own tests describe it (``newTestPod``): its roles, version,
whether it is healthy (ready), in the cluster, outdated or terminating. :class:`Topology` derives
from a list of nodes the snapshots the decisions read: Pods with the labels the builders write,
StatefulSets (one per name prefix, as many replicas as the highest ordinal says), the spec's
StatefulSets and the cluster's node list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stackflow.stack.elasticsearch.config import DEFAULT_ROLES
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    REVISION_LABEL,
    ClusterHealth,
    ClusterNode,
    ClusterView,
    ExpectedStatefulSet,
    NodeShutdown,
    PodState,
    Shard,
    StatefulSetState,
    split_pod_name,
)
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL, ES_VERSION_LABEL, role_labels

NEW_REVISION = "rev-new"
OLD_REVISION = "rev-old"


def roles(*names: str) -> frozenset[str]:
    """A role set, in a line."""
    return frozenset(names)


def pod_labels(
    statefulset: str, *, node_roles: frozenset[str], version: str, revision: str
) -> dict[str, str]:
    """The labels a Pod of ``statefulset`` carries (role labels as the builder writes them)."""
    return {
        ES_STATEFULSET_NAME_LABEL: statefulset,
        ES_VERSION_LABEL: version,
        REVISION_LABEL: revision,
        **role_labels(node_roles),
    }


@dataclass(frozen=True)
class Node:
    """One Pod of a test cluster, in ECK's test vocabulary."""

    name: str
    roles: frozenset[str] = DEFAULT_ROLES
    version: str = "7.4.0"
    healthy: bool = True
    in_cluster: bool = True
    outdated: bool = False
    terminating: bool = False
    phase: str = "Running"
    restart_count: int | None = 0

    @property
    def statefulset(self) -> str:
        """The StatefulSet name the Pod name starts with."""
        return split_pod_name(self.name)[0]

    def pod(self) -> PodState:
        """The Pod as listed."""
        return PodState(
            name=self.name,
            labels=pod_labels(
                self.statefulset,
                node_roles=self.roles,
                version=self.version,
                revision=OLD_REVISION if self.outdated else NEW_REVISION,
            ),
            ready=self.healthy,
            terminating=self.terminating,
            phase=self.phase,
            restart_count=self.restart_count,
        )


def node(name: str, *node_roles: str, **fields: object) -> Node:
    """A :class:`Node` with ``node_roles`` (none given: every default role)."""
    return Node(name, roles(*node_roles) if node_roles else DEFAULT_ROLES, **fields)


@dataclass(frozen=True)
class Topology:
    """The snapshots of a test cluster made of ``nodes``.

    ``master_change`` maps a StatefulSet name to whether the spec makes its nodes masters (ECK's
    ``addMasterType`` / ``removeMasterType`` mutations).
    """

    nodes: tuple[Node, ...]
    master_change: Mapping[str, bool] = field(default_factory=dict)

    @property
    def pods(self) -> tuple[PodState, ...]:
        """Every Pod."""
        return tuple(n.pod() for n in self.nodes)

    def _by_statefulset(self) -> dict[str, list[Node]]:
        grouped: dict[str, list[Node]] = {}
        for n in self.nodes:
            grouped.setdefault(n.statefulset, []).append(n)
        return grouped

    @property
    def statefulsets(self) -> tuple[StatefulSetState, ...]:
        """One StatefulSet per name prefix, sized by the highest ordinal, template at the new revision."""
        return tuple(
            StatefulSetState(
                name=name,
                replicas=max(split_pod_name(n.name)[1] for n in members) + 1,
                update_revision=NEW_REVISION,
                master="master" in members[0].roles,
                generation=1,
                observed_generation=1,
            )
            for name, members in sorted(self._by_statefulset().items())
        )

    @property
    def expected(self) -> tuple[ExpectedStatefulSet, ...]:
        """The spec's StatefulSets: same sizes, the roles of their first node, masters changed."""
        result = []
        for statefulset in self.statefulsets:
            members = self._by_statefulset()[statefulset.name]
            spec_roles = members[0].roles
            if statefulset.name in self.master_change:
                spec_roles = (
                    spec_roles | {"master"}
                    if self.master_change[statefulset.name]
                    else spec_roles - {"master"}
                )
            result.append(ExpectedStatefulSet(statefulset.name, statefulset.replicas, spec_roles))
        return tuple(result)

    def cluster(
        self,
        health: str = "green",
        *,
        shards: Sequence[Shard] = (),
        shutdowns: Mapping[str, str] | None = None,
        **counters: int,
    ) -> ClusterView:
        """The cluster: every node in it by name (id = name), the health, shards and ``restart``
        shutdowns (node name → status)."""
        return ClusterView(
            health=ClusterHealth(health, **counters),
            nodes=tuple(ClusterNode(n.name, n.name) for n in self.nodes if n.in_cluster),
            shards=tuple(shards),
            shutdowns=None
            if shutdowns is None
            else tuple(NodeShutdown(name, "RESTART", status) for name, status in shutdowns.items()),
        )


def shard(index: str, number: str, state: str, node_name: str, kind: str) -> Shard:
    """A ``_cat/shards`` line as ECK's tests write it (``kind``: ``p`` or ``r``)."""
    return Shard(index=index, shard=number, primary=kind == "p", state=state, node=node_name)
