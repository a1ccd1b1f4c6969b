"""What the orchestration decisions ask for: Elasticsearch calls and Kubernetes writes, as data.

A decision returns an ordered tuple of these steps; whoever runs them (an activity) performs them
in that order and stops at the first failure, as ECK does. Each step names the request it stands
for, so that a log line or a condition can say what is being done.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The ``exclude._name`` value ECK writes when no node is leaving (an empty value would not clear it).
NONE_EXCLUDED = "none_excluded"


@dataclass(frozen=True)
class DisableReplicaAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.enable: primaries``."""


@dataclass(frozen=True)
class EnableAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.enable: all``."""


@dataclass(frozen=True)
class Flush:
    """``POST _flush`` (target 8.0 and later) or ``POST _flush/synced`` (earlier; a 409 is ignored)."""

    synced: bool


@dataclass(frozen=True)
class PutNodeShutdown:
    """``PUT _nodes/<node_id>/shutdown`` with ``{type, reason, allocation_delay?}``."""

    node: str
    node_id: str
    type: str
    reason: str
    allocation_delay: str | None = None


@dataclass(frozen=True)
class DeleteNodeShutdown:
    """``DELETE _nodes/<node_id>/shutdown``: cancels a shutdown, or cleans up a completed one."""

    node_id: str


@dataclass(frozen=True)
class ExcludeFromAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.exclude._name: <value>``."""

    value: str


@dataclass(frozen=True)
class RemoveTransientAllocationSettings:
    """``PUT _cluster/settings`` transient ``exclude._name`` and ``enable`` set to ``null``."""


@dataclass(frozen=True)
class AddVotingExclusions:
    """``POST _cluster/voting_config_exclusions?node_names=<names>`` (7.8.0 and later)."""

    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ClearVotingExclusions:
    """``DELETE _cluster/voting_config_exclusions?wait_for_removal=false``."""


@dataclass(frozen=True)
class DeletePod:
    """Delete a Pod with its UID and resourceVersion as preconditions, and expect it gone."""

    pod: str
    message: str


@dataclass(frozen=True)
class ScaleStatefulSet:
    """Set a StatefulSet's ``spec.replicas`` (and recompute its template-hash label)."""

    statefulset: str
    replicas: int


@dataclass(frozen=True)
class DeleteStatefulSet:
    """Delete a StatefulSet with 0 replicas and no node set, with its Service, config and certs."""

    statefulset: str


Step = (
    DisableReplicaAllocation
    | EnableAllocation
    | Flush
    | PutNodeShutdown
    | DeleteNodeShutdown
    | ExcludeFromAllocation
    | RemoveTransientAllocationSettings
    | AddVotingExclusions
    | ClearVotingExclusions
    | DeletePod
    | ScaleStatefulSet
    | DeleteStatefulSet
)


def describe_step(step: Step) -> str:
    """A one-line description of ``step`` for logs and conditions."""
    match step:
        case DisableReplicaAllocation():
            return "disable replica shard allocation (enable=primaries)"
        case EnableAllocation():
            return "enable shard allocation (enable=all)"
        case Flush(synced=synced):
            return "synced flush" if synced else "flush"
        case PutNodeShutdown(node=node, type=kind):
            return f"request a {kind} shutdown of node {node}"
        case DeleteNodeShutdown(node_id=node_id):
            return f"delete the shutdown record of node id {node_id}"
        case ExcludeFromAllocation(value=value):
            return f"exclude from shard allocation: {value}"
        case RemoveTransientAllocationSettings():
            return "remove the transient allocation settings (exclude._name, enable)"
        case AddVotingExclusions(nodes=nodes):
            return f"exclude from voting: {', '.join(nodes)}"
        case ClearVotingExclusions():
            return "clear the voting exclusions"
        case DeletePod(pod=pod, message=message):
            return f"delete Pod {pod} ({message})"
        case ScaleStatefulSet(statefulset=statefulset, replicas=replicas):
            return f"scale StatefulSet {statefulset} to {replicas}"
        case DeleteStatefulSet(statefulset=statefulset):
            return f"delete StatefulSet {statefulset}"
    raise AssertionError(f"unknown step {step!r}")  # pragma: no cover
