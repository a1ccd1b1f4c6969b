"""What the orchestration decisions read: plain, frozen snapshots of the cluster's objects.

Nothing here is fetched. The caller lists the StatefulSets and Pods, asks Elasticsearch for its
health, nodes, shards, allocation settings, voting exclusions and node shutdowns, and passes the
answers in these shapes. The ``*_from_manifest`` helpers read the Kubernetes objects as the API
server returns them (dicts), with the label names the builders write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import DEFAULT_ROLES, node_roles
from stackflow.stack.elasticsearch.pods import ES_CONTAINER
from stackflow.stack.labels import (
    ES_STATEFULSET_NAME_LABEL,
    ES_VERSION_LABEL,
    node_role_label,
)

#: The label the StatefulSet controller puts on every Pod: the revision of the template it was made from.
REVISION_LABEL = "controller-revision-hash"

HEALTH_GREEN = "green"
HEALTH_YELLOW = "yellow"
HEALTH_RED = "red"
HEALTH_UNKNOWN = "unknown"

SHARD_STARTED = "STARTED"

SHUTDOWN_RESTART = "restart"
SHUTDOWN_REMOVE = "remove"
SHUTDOWN_NOT_STARTED = "NOT_STARTED"
SHUTDOWN_IN_PROGRESS = "IN_PROGRESS"
SHUTDOWN_STALLED = "STALLED"
SHUTDOWN_COMPLETE = "COMPLETE"

#: The data tiers; a node with the generic ``data`` role holds every one of them (ECK's ``HasRole``).
DATA_TIERS = ("data_content", "data_hot", "data_warm", "data_cold", "data_frozen")

#: The roles ECK counts per tier when it keeps a tier available: all but ``master`` and ``voting_only``.
NON_MASTER_ROLES = (
    "data",
    "data_hot",
    "data_cold",
    "data_frozen",
    "data_content",
    "data_warm",
    "ingest",
    "ml",
    "remote_cluster_client",
    "transform",
)


class SnapshotError(ValueError):
    """The snapshot lacks what a decision needs (a node missing from the cluster, a label that
    does not parse). ECK returns an error at this point: nothing more is done in the pass."""


def has_role(roles: frozenset[str], role: str) -> bool:
    """Whether a node with ``roles`` has ``role``; the generic ``data`` role implies every data tier."""
    if role in DATA_TIERS:
        return "data" in roles or role in roles
    return role in roles


def can_contain_data(roles: frozenset[str]) -> bool:
    """Whether a node with ``roles`` can hold shards (the ``data`` role or any data tier)."""
    return any(has_role(roles, role) for role in ("data", *DATA_TIERS))


def ordinal_pod_name(statefulset: str, ordinal: int) -> str:
    """The name of a StatefulSet's Pod number ``ordinal``: ``<statefulset>-<ordinal>``."""
    return f"{statefulset}-{ordinal}"


def split_pod_name(pod: str) -> tuple[str, int]:
    """The StatefulSet name and ordinal a Pod name is made of; ``ValueError`` when it has none."""
    statefulset, dash, ordinal = pod.rpartition("-")
    if not dash or not ordinal.isdigit():
        raise ValueError(f"pod name {pod!r} does not end with -<ordinal>")
    return statefulset, int(ordinal)


@dataclass(frozen=True)
class PodState:
    """One Pod of the cluster as listed: its labels and what its status says.

    ``ready`` is ECK's readiness: the ``Ready`` and ``ContainersReady`` conditions both ``True``.
    ``restart_count`` is the ``elasticsearch`` container's ``restartCount``, ``None`` when the Pod
    reports no status for that container yet.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = False
    terminating: bool = False
    phase: str = "Running"
    restart_count: int | None = None

    @property
    def statefulset(self) -> str:
        """The StatefulSet the Pod belongs to (its ``statefulset-name`` label, else ``""``)."""
        return self.labels.get(ES_STATEFULSET_NAME_LABEL, "")

    @property
    def revision(self) -> str:
        """The template revision the Pod was made from (``controller-revision-hash``)."""
        return self.labels.get(REVISION_LABEL, "")

    @property
    def version(self) -> str:
        """The Elasticsearch version the Pod runs (its version label, else ``""``)."""
        return self.labels.get(ES_VERSION_LABEL, "")

    @property
    def is_master(self) -> bool:
        """Whether the Pod is master-eligible (``node-master`` label ``true``)."""
        return self.has_role_label("master")

    def has_role_label(self, role: str) -> bool:
        """Whether the Pod's ``node-<role>`` label says ``true``."""
        return self.labels.get(node_role_label(role)) == "true"


@dataclass(frozen=True)
class StatefulSetState:
    """One existing StatefulSet of the cluster, as read (spec, template labels and status)."""

    name: str
    replicas: int
    update_revision: str = ""
    master: bool = False
    version: str = ""
    generation: int = 0
    observed_generation: int = 0
    status_replicas: int = 0
    updated_replicas: int = 0

    def pod_names(self) -> tuple[str, ...]:
        """The Pods the StatefulSet should have: ordinals ``0 … replicas-1``."""
        return tuple(ordinal_pod_name(self.name, ordinal) for ordinal in range(self.replicas))


@dataclass(frozen=True)
class ExpectedStatefulSet:
    """One StatefulSet as the spec wants it: its name, replica count and the roles of its nodes."""

    name: str
    replicas: int
    roles: frozenset[str] = DEFAULT_ROLES

    @property
    def master(self) -> bool:
        """Whether its nodes are master-eligible."""
        return "master" in self.roles

    def pod_names(self) -> tuple[str, ...]:
        """The Pods the StatefulSet should have: ordinals ``0 … replicas-1``."""
        return tuple(ordinal_pod_name(self.name, ordinal) for ordinal in range(self.replicas))


@dataclass(frozen=True)
class ClusterHealth:
    """``GET _cluster/health`` (``wait_for_events=languid``): status and the shard counters."""

    status: str = HEALTH_UNKNOWN
    relocating_shards: int = 0
    initializing_shards: int = 0
    unassigned_shards: int = 0
    in_flight_fetch: int = 0
    timed_out: bool = False

    def has_shard_activity(self) -> bool:
        """ECK's shard activity: shards fetched, initializing or relocating, or a timed-out answer."""
        # A timed-out languid health call means events were still pending: count it as activity.
        return (
            self.timed_out
            or self.in_flight_fetch > 0
            or self.initializing_shards > 0
            or self.relocating_shards > 0
        )


@dataclass(frozen=True)
class Shard:
    """One line of ``GET _cat/shards``; ``node`` is ``""`` for an unassigned copy."""

    index: str
    shard: str
    primary: bool
    state: str
    node: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """Which shard this is a copy of: ``(index, shard number)``."""
        return (self.index, self.shard)


@dataclass(frozen=True)
class ClusterNode:
    """One node of ``GET _nodes``: its name (the Pod name), id, roles and version."""

    name: str
    id: str
    roles: frozenset[str] = frozenset()
    version: str = ""


@dataclass(frozen=True)
class AllocationSettings:
    """The transient ``cluster.routing.allocation`` settings ECK reads and writes."""

    enable: str = ""
    exclude_name: str = ""

    @property
    def replicas_enabled(self) -> bool:
        """Whether replica allocation is on: ``enable`` unset or ``all``."""
        return self.enable in ("", "all")


@dataclass(frozen=True)
class NodeShutdown:
    """One record of ``GET _nodes/shutdown``."""

    node_id: str
    type: str
    status: str
    explanation: str = ""

    def is_type(self, shutdown_type: str) -> bool:
        """Whether the record is of ``shutdown_type`` (Elasticsearch answers in capitals)."""
        return self.type.casefold() == shutdown_type.casefold()


@dataclass(frozen=True)
class ClusterView:
    """What Elasticsearch answered this pass.

    ``shutdowns`` is ``None`` where the cluster has no node shutdown API (before 7.15.2);
    ``voting_exclusions`` is ``None`` when it was not read.
    """

    health: ClusterHealth = ClusterHealth()
    nodes: tuple[ClusterNode, ...] = ()
    shards: tuple[Shard, ...] = ()
    allocation: AllocationSettings = AllocationSettings()
    voting_exclusions: tuple[str, ...] | None = None
    shutdowns: tuple[NodeShutdown, ...] | None = None

    @property
    def node_names(self) -> frozenset[str]:
        """The names of the nodes in the cluster."""
        return frozenset(node.name for node in self.nodes)

    def node_id(self, name: str) -> str | None:
        """The id of the node called ``name``, or ``None`` when it is not in the cluster."""
        return next((node.id for node in self.nodes if node.name == name), None)

    def shutdown_of(self, node_id: str) -> NodeShutdown | None:
        """The shutdown record of node ``node_id``, if any."""
        return next((s for s in self.shutdowns or () if s.node_id == node_id), None)

    def shards_on(self, node: str) -> tuple[Shard, ...]:
        """The shard copies on node ``node``."""
        return tuple(shard for shard in self.shards if shard.node == node)


def pod_state_from_manifest(pod: Mapping[str, Any]) -> PodState:
    """Read a Pod object into a :class:`PodState`."""
    status: Mapping[str, Any] = pod.get("status") or {}
    conditions = {
        condition.get("type"): condition.get("status")
        for condition in status.get("conditions") or []
    }
    restart_count = next(
        (
            int(container.get("restartCount") or 0)
            for container in status.get("containerStatuses") or []
            if container.get("name") == ES_CONTAINER
        ),
        None,
    )
    meta = view(pod)
    return PodState(
        name=meta.name,
        labels=dict(meta.labels),
        ready=conditions.get("Ready") == "True" and conditions.get("ContainersReady") == "True",
        terminating=bool(meta.deletion_timestamp),
        phase=str(status.get("phase") or ""),
        restart_count=restart_count,
    )


def statefulset_state_from_manifest(statefulset: Mapping[str, Any]) -> StatefulSetState:
    """Read a StatefulSet object into a :class:`StatefulSetState`."""
    spec: Mapping[str, Any] = statefulset.get("spec") or {}
    status: Mapping[str, Any] = statefulset.get("status") or {}
    template_labels: Mapping[str, str] = ((spec.get("template") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}
    replicas = spec.get("replicas")
    return StatefulSetState(
        name=view(statefulset).name,
        # The API server defaults an absent replicas to 1.
        replicas=1 if replicas is None else int(replicas),
        update_revision=str(status.get("updateRevision") or ""),
        master=template_labels.get(node_role_label("master")) == "true",
        version=template_labels.get(ES_VERSION_LABEL, ""),
        generation=int(view(statefulset).generation or 0),
        observed_generation=int(status.get("observedGeneration") or 0),
        status_replicas=int(status.get("replicas") or 0),
        updated_replicas=int(status.get("updatedReplicas") or 0),
    )


def expected_statefulsets(
    es_name: str, node_sets: Iterable[Mapping[str, Any]]
) -> tuple[ExpectedStatefulSet, ...]:
    """The StatefulSets ``spec.nodeSets`` asks for, in spec order, with their nodes' roles."""
    return tuple(
        ExpectedStatefulSet(
            name=names.statefulset_name(es_name, str(node_set["name"])),
            replicas=int(node_set.get("count", 0)),
            roles=node_roles(node_set.get("config")),
        )
        for node_set in node_sets
    )


def expected_master_names(expected: Sequence[ExpectedStatefulSet]) -> tuple[str, ...]:
    """The Pod names of every master-eligible node the spec wants, StatefulSet by StatefulSet."""
    return tuple(name for sset in expected if sset.master for name in sset.pod_names())
