"""What sizing a policy yields: the per-node resources and counts of its node sets
(:class:`PolicyResult`), its states, and the resources its previous status recorded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from stackflow.models.quantity import parse_quantity
from stackflow.stack.policies.autoscaling.quantities import format_quantity, whole
from stackflow.stack.policies.autoscaling.spec import PolicyLimits

__all__ = [
    "STATE_CPU_REQUIRED",
    "STATE_EMPTY_RESPONSE",
    "STATE_HORIZONTAL_LIMIT",
    "STATE_MEMORY_REQUIRED",
    "STATE_NO_NODE_SET",
    "STATE_OVERLAPPING_POLICIES",
    "STATE_STORAGE_REQUIRED",
    "STATE_UNEXPECTED_STORAGE",
    "STATE_VERTICAL_LIMIT",
    "CurrentResources",
    "NodeSetResources",
    "PolicyResult",
    "StateRecorder",
    "resource_limits",
    "resource_requests",
    "with_limits",
]

#: ``status.policies[].state[].type`` values, as ECK names them.
STATE_EMPTY_RESPONSE = "EmptyResponse"


STATE_HORIZONTAL_LIMIT = "HorizontalScalingLimitReached"


STATE_VERTICAL_LIMIT = "VerticalScalingLimitReached"


STATE_NO_NODE_SET = "NoNodeSet"


STATE_OVERLAPPING_POLICIES = "OverlappingPolicies"


STATE_UNEXPECTED_STORAGE = "UnexpectedNodeStorageCapacity"


STATE_MEMORY_REQUIRED = "MemoryRequired"


STATE_STORAGE_REQUIRED = "StorageRequired"


STATE_CPU_REQUIRED = "CPURequired"


@dataclass(frozen=True)
class NodeSetResources:
    """What the node sets of one policy get: the node count and the per-node requests and
    limits (bytes for memory and storage, cores for cpu; None: not managed by the policy)."""

    node_count: int
    memory: Decimal | None = None
    storage: Decimal | None = None
    cpu: Decimal | None = None
    memory_limit: Decimal | None = None
    cpu_limit: Decimal | None = None


@dataclass(frozen=True)
class PolicyResult:
    """The outcome for one policy: its resources and node counts (None: its node sets are left
    as they are) and its states, ``type → messages`` in the order they were recorded."""

    policy: str
    resources: NodeSetResources | None = None
    #: ``(node set, count)`` in ECK's order (fewest nodes first, then by name).
    node_sets: tuple[tuple[str, int], ...] = ()
    states: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class CurrentResources:
    """A policy's resources as its previous ``status.policies[]`` entry recorded them."""

    node_sets: tuple[tuple[str, int], ...]
    memory: Decimal | None = None
    storage: Decimal | None = None
    cpu: Decimal | None = None

    @property
    def node_count(self) -> int:
        """The total node count of the policy's node sets."""
        return sum(count for _, count in self.node_sets)

    @classmethod
    def of(cls, entry: Mapping[str, Any] | None) -> CurrentResources | None:
        """The resources of a status entry; None without one."""
        if not isinstance(entry, Mapping):
            return None
        requests = (entry.get("resources") or {}).get("requests") or {}
        return cls(
            node_sets=tuple(
                (str(item.get("name")), int(item.get("nodeCount") or 0))
                for item in entry.get("nodeSets") or ()
                if isinstance(item, Mapping)
            ),
            memory=parse_quantity(requests.get("memory")),
            storage=parse_quantity(requests.get("storage")),
            cpu=parse_quantity(requests.get("cpu")),
        )


class StateRecorder:
    """ECK's status builder for one policy: messages recorded by state type."""

    def __init__(self) -> None:
        self.by_type: dict[str, list[str]] = {}

    def record(self, state: str, message: str) -> None:
        """Record one message under ``state``, after those already recorded."""
        self.by_type.setdefault(state, []).append(message)

    def frozen(self) -> dict[str, tuple[str, ...]]:
        """The states recorded so far, ``type → messages``, in the order they were recorded."""
        return {state: tuple(messages) for state, messages in self.by_type.items()}


def with_limits(resources: NodeSetResources, limits: PolicyLimits) -> NodeSetResources:
    """ECK's limits: the request times ``requestsToLimitsRatio`` rounded up to a whole unit
    (bytes; cores for cpu, from the request rounded up to a core); a ratio of 0 sets none."""
    memory_limit = cpu_limit = None
    if resources.memory is not None and limits.memory_ratio > 0:
        memory_limit = Decimal(math.ceil(whole(resources.memory) * limits.memory_ratio))
    if resources.cpu is not None and limits.cpu_ratio > 0:
        cpu_limit = Decimal(math.ceil(whole(resources.cpu) * limits.cpu_ratio))
    return replace(resources, memory_limit=memory_limit, cpu_limit=cpu_limit)


def resource_requests(resources: NodeSetResources, *, storage: bool = True) -> dict[str, str]:
    """The requests of ``resources`` as ECK renders them (storage left out when not wanted)."""
    requests: dict[str, str] = {}
    if resources.cpu is not None:
        requests["cpu"] = format_quantity(resources.cpu, cpu=True)
    if resources.memory is not None:
        requests["memory"] = format_quantity(resources.memory)
    if storage and resources.storage is not None:
        requests["storage"] = format_quantity(resources.storage)
    return requests


def resource_limits(resources: NodeSetResources) -> dict[str, str]:
    """The cpu and memory limits of ``resources`` as ECK renders them."""
    limits: dict[str, str] = {}
    if resources.cpu_limit is not None:
        limits["cpu"] = format_quantity(resources.cpu_limit, cpu=True)
    if resources.memory_limit is not None:
        limits["memory"] = format_quantity(resources.memory_limit)
    return limits
