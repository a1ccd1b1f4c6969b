"""The steps that change a running cluster: Elasticsearch calls and Kubernetes writes, as data.

The orchestration decisions (``stackflow.stack.elasticsearch.orchestration``) return them in the
order to run them; the resource workflow runs each as one activity (a step of its history) and stops
at the first failure, as ECK does. They are pydantic dataclasses so that a workflow can carry them:
each has a ``kind`` that tells them apart on the wire.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

__all__ = [
    "NONE_EXCLUDED",
    "AddVotingExclusions",
    "AnyStep",
    "ClearVotingExclusions",
    "ClusterStep",
    "DeleteNodeShutdown",
    "DeletePod",
    "DeleteStatefulSet",
    "DisableReplicaAllocation",
    "EnableAllocation",
    "ExcludeFromAllocation",
    "Flush",
    "PutNodeShutdown",
    "RemoveTransientAllocationSettings",
    "ScaleStatefulSet",
    "describe_step",
]

#: Validators built at first use, not at import: the operator's start imports every step and
#: runs none before it is ready.
_DEFERRED = ConfigDict(defer_build=True)

#: The ``exclude._name`` value ECK writes when no node is leaving (an empty value would not clear it).
NONE_EXCLUDED = "none_excluded"


@dataclass(frozen=True, config=_DEFERRED)
class DisableReplicaAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.enable: primaries``."""

    kind: Literal["disable_replica_allocation"] = "disable_replica_allocation"


@dataclass(frozen=True, config=_DEFERRED)
class EnableAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.enable: all``."""

    kind: Literal["enable_allocation"] = "enable_allocation"


@dataclass(frozen=True, config=_DEFERRED)
class Flush:
    """``POST _flush`` (target 8.0 and later) or ``POST _flush/synced`` (earlier; a 409 is ignored)."""

    synced: bool
    kind: Literal["flush"] = "flush"


@dataclass(frozen=True, config=_DEFERRED)
class PutNodeShutdown:
    """``PUT _nodes/<node_id>/shutdown`` with ``{type, reason, allocation_delay?}``."""

    node: str
    node_id: str
    type: str
    reason: str
    allocation_delay: str | None = None
    kind: Literal["put_node_shutdown"] = "put_node_shutdown"


@dataclass(frozen=True, config=_DEFERRED)
class DeleteNodeShutdown:
    """``DELETE _nodes/<node_id>/shutdown``: cancels a shutdown, or cleans up a completed one."""

    node_id: str
    kind: Literal["delete_node_shutdown"] = "delete_node_shutdown"


@dataclass(frozen=True, config=_DEFERRED)
class ExcludeFromAllocation:
    """``PUT _cluster/settings`` transient ``cluster.routing.allocation.exclude._name: <value>``."""

    value: str
    kind: Literal["exclude_from_allocation"] = "exclude_from_allocation"


@dataclass(frozen=True, config=_DEFERRED)
class RemoveTransientAllocationSettings:
    """``PUT _cluster/settings`` transient ``exclude._name`` and ``enable`` set to ``null``."""

    kind: Literal["remove_transient_allocation_settings"] = "remove_transient_allocation_settings"


@dataclass(frozen=True, config=_DEFERRED)
class AddVotingExclusions:
    """``POST _cluster/voting_config_exclusions?node_names=<names>`` (7.8.0 and later)."""

    nodes: tuple[str, ...]
    kind: Literal["add_voting_exclusions"] = "add_voting_exclusions"


@dataclass(frozen=True, config=_DEFERRED)
class ClearVotingExclusions:
    """``DELETE _cluster/voting_config_exclusions?wait_for_removal=false``."""

    kind: Literal["clear_voting_exclusions"] = "clear_voting_exclusions"


@dataclass(frozen=True, config=_DEFERRED)
class DeletePod:
    """Delete a Pod with its UID as a precondition (``uid``, filled in by whoever read the Pod),
    so that a step run twice never deletes the Pod that replaced it."""

    pod: str
    message: str
    uid: str = ""
    kind: Literal["delete_pod"] = "delete_pod"


@dataclass(frozen=True, config=_DEFERRED)
class ScaleStatefulSet:
    """Set a StatefulSet's ``spec.replicas`` (and recompute its template-hash label)."""

    statefulset: str
    replicas: int
    kind: Literal["scale_stateful_set"] = "scale_stateful_set"


@dataclass(frozen=True, config=_DEFERRED)
class DeleteStatefulSet:
    """Delete a StatefulSet with 0 replicas and no node set, with its Service, config and certs."""

    statefulset: str
    kind: Literal["delete_stateful_set"] = "delete_stateful_set"


AnyStep = (
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
"""Any one step (the union the decisions return)."""

ClusterStep = Annotated[AnyStep, Field(discriminator="kind")]
"""Any one step as a model field: ``kind`` tells which on the wire."""


def describe_step(step: AnyStep) -> str:
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
