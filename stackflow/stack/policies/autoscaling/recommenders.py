"""ECK's recommenders: the per-node storage, memory and cpu of a policy, and the node count each
needs, from the policy's entry of an ``_autoscaling/capacity`` response.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from stackflow.models.quantity import parse_quantity
from stackflow.stack.policies.autoscaling.quantities import (
    GIB,
    clamp_count,
    format_quantity,
    millis,
    round_up,
    whole,
)
from stackflow.stack.policies.autoscaling.results import (
    STATE_CPU_REQUIRED,
    STATE_HORIZONTAL_LIMIT,
    STATE_MEMORY_REQUIRED,
    STATE_STORAGE_REQUIRED,
    STATE_UNEXPECTED_STORAGE,
    STATE_VERTICAL_LIMIT,
    CurrentResources,
    NodeSetResources,
    StateRecorder,
)
from stackflow.stack.policies.autoscaling.spec import Bounds, PolicyLimits

__all__ = [
    "USABLE_DISK_FRACTION",
    "PolicySkippedError",
    "Recommendation",
    "capacity_value",
    "cpu_recommendation",
    "linear_scaling",
    "memory_recommendation",
    "requires_nothing",
    "storage_recommendation",
]

#: A recommender's answer: the per-node amount, and the node count it needs once every
#: resource of the node is known.
Recommendation = tuple[Decimal, Callable[[NodeSetResources], int]]
#: ECK keeps 5% of a data volume free: required storage is divided by this before sizing.
USABLE_DISK_FRACTION = Decimal("0.95")


class PolicySkippedError(Exception):
    """A policy whose resources cannot be computed (ECK logs it and leaves its node sets)."""


def capacity_value(section: object, scope: str, resource: str) -> Decimal | None:
    """One amount of a capacity section (``required_capacity``, ``current_capacity``):
    ``section[scope][resource]`` (scope ``node`` or ``total``), None when absent."""
    part = section.get(scope) if isinstance(section, Mapping) else None
    value = part.get(resource) if isinstance(part, Mapping) else None
    return parse_quantity(value) if value is not None else None


def _resource_value(
    resource: str,
    node: Decimal,
    total: Decimal | None,
    bounds: Bounds,
    limits: PolicyLimits,
    states: StateRecorder,
) -> Decimal:
    """ECK's per-node memory or storage: the node requirement, at least the total over the
    minimum node count, rounded up to a GiB and kept within the range."""
    maximum = whole(bounds.max)
    if whole(node) > maximum:
        states.record(
            STATE_VERTICAL_LIMIT,
            f"{resource} required per node, {whole(node)}, is greater than the maximum "
            f"allowed: {maximum}",
        )
    value = whole(node)
    min_nodes = int(limits.node_count.min) or 1
    if total is not None:
        value = max(value, whole(total) // min_nodes)
    return Decimal(min(maximum, max(whole(bounds.min), round_up(value, GIB))))


def _node_count(
    resource: str, per_node: int, total: int, limits: PolicyLimits, states: StateRecorder
) -> int:
    """ECK's node count for one resource: the minimum count plus the nodes the rest needs."""
    min_nodes = int(limits.node_count.min)
    delta = total - min_nodes * per_node
    added = 0 if delta <= 0 else (math.ceil(delta / per_node) if per_node > 0 else delta)
    wanted = min_nodes + added
    if wanted > limits.node_count.max:
        states.record(
            STATE_HORIZONTAL_LIMIT,
            f"Can't provide total required {resource} {total}, max number of nodes is "
            f"{int(limits.node_count.max)}, requires {wanted} nodes",
        )
    return clamp_count(wanted, limits.node_count)


def _adjusted(value: Decimal | None) -> Decimal:
    return Decimal(math.ceil((value or Decimal(0)) / USABLE_DISK_FRACTION))


def _required(entry: Mapping[str, Any], resource: str) -> tuple[Decimal | None, Decimal | None]:
    """What Elasticsearch requires of ``resource`` per node and in total (None: not asked)."""
    required = entry.get("required_capacity") or {}
    return capacity_value(required, "node", resource), capacity_value(required, "total", resource)


def _specified(bounds: Bounds | None, what: str, state: str, states: StateRecorder) -> Bounds:
    """The policy's range for a resource Elasticsearch asks for; without one ECK records
    ``state`` and leaves the policy's node sets alone (PolicySkippedError)."""
    if bounds is None:
        states.record(state, f"Min and max {what} must be specified")
        raise PolicySkippedError(f"min and max {what} must be specified")
    return bounds


def storage_recommendation(
    limits: PolicyLimits,
    entry: Mapping[str, Any],
    current: CurrentResources | None,
    states: StateRecorder,
) -> Recommendation | None:
    """ECK's storage recommendation: the per-node storage and the node-count rule."""
    node, total = _required(entry, "storage")
    if limits.storage is None and node is None and total is None:
        return None
    observed = entry.get("current_capacity") or {}
    observed_node = capacity_value(observed, "node", "storage")
    observed_total = capacity_value(observed, "total", "storage")
    if observed_node is None or observed_total is None:
        raise PolicySkippedError(
            "observed storage capacity is expected in Elasticsearch autoscaling API response"
        )
    bounds = _specified(limits.storage, "storage", STATE_STORAGE_REQUIRED, states)
    node_required, total_required = node or Decimal(0), total or Decimal(0)
    minimum = bounds.min
    if current is not None and current.storage is not None and current.storage > minimum:
        minimum = current.storage
    if node_required == 0 and total_required == 0:
        per_node = minimum
    else:
        scale_up = True
        if current is not None and current.storage is not None:
            claimed = current.storage
            if bounds.min == bounds.max == claimed:
                scale_up = False
            elif whole(observed_node) > whole(claimed):
                states.record(
                    STATE_UNEXPECTED_STORAGE,
                    "Vertical Pod autoscaling is not supported: current node storage capacity "
                    f"{whole(observed_node)} is greater than the claimed capacity {whole(claimed)}",
                )
            else:
                scale_up = node_required > observed_node or total_required > observed_total
        if scale_up:
            value = _resource_value(
                "storage", _adjusted(node), _adjusted(total), bounds, limits, states
            )
        else:
            value = current.storage if current is not None and current.storage else Decimal(0)
        per_node = max(minimum, value)

    def count(resources: NodeSetResources) -> int:
        if total_required == 0:
            return clamp_count(0, limits.node_count)
        if current is None or total_required > observed_total:
            return _node_count(
                "storage",
                whole(resources.storage or Decimal(0)),
                whole(_adjusted(total)),
                limits,
                states,
            )
        return clamp_count(current.node_count, limits.node_count)

    return per_node, count


def memory_recommendation(
    limits: PolicyLimits, entry: Mapping[str, Any], states: StateRecorder
) -> Recommendation | None:
    """ECK's memory recommendation: the per-node memory and the node-count rule."""
    node, total = _required(entry, "memory")
    if node is None and total is None:
        return None
    bounds = _specified(limits.memory, "memory", STATE_MEMORY_REQUIRED, states)
    per_node = _resource_value("memory", node or Decimal(0), total, bounds, limits, states)

    def count(resources: NodeSetResources) -> int:
        return _node_count(
            "memory",
            whole(resources.memory or Decimal(0)),
            whole(total or Decimal(0)),
            limits,
            states,
        )

    return per_node, count


def cpu_recommendation(
    limits: PolicyLimits, entry: Mapping[str, Any], states: StateRecorder
) -> Recommendation | None:
    """ECK's cpu recommendation (in millicores, no rounding to a unit)."""
    node, total = _required(entry, "processors")
    if node is None and total is None:
        return None
    bounds = _specified(limits.cpu, "CPU", STATE_CPU_REQUIRED, states)
    maximum = millis(bounds.max)
    wanted = millis(node or Decimal(0))
    if wanted > maximum:
        states.record(
            STATE_VERTICAL_LIMIT,
            f"Required CPU per node {format_quantity(node or Decimal(0), cpu=True)} is greater "
            f"than the maximum allowed: {format_quantity(bounds.max, cpu=True)}",
        )
    min_nodes = int(limits.node_count.min) or 1
    if total is not None:
        wanted = max(wanted, millis(total) // min_nodes)
    per_node = Decimal(min(maximum, max(millis(bounds.min), wanted))) / 1000

    def count(resources: NodeSetResources) -> int:
        return _node_count(
            "cpu",
            millis(resources.cpu or Decimal(0)),
            millis(total or Decimal(0)),
            limits,
            states,
        )

    return per_node, count


def linear_scaling(required: Decimal, source: Bounds, target: Bounds, unit: int) -> Decimal:
    """ECK's linear scaling of one resource from another within their ranges, rounded up to
    ``unit`` (a GiB for memory, a core in millicores for cpu) and at most the target maximum."""
    allowed = whole(source.max) - whole(source.min)
    if allowed == 0:
        return target.min
    ratio = (whole(required) - whole(source.min)) / allowed
    if ratio == 0:
        return target.min
    if ratio == 1:
        return target.max
    if unit == GIB:
        low, high = whole(target.min), whole(target.max)
        value = round_up(low + int((high - low) * ratio), GIB)
        return min(Decimal(value), target.max)
    low, high = millis(target.min), millis(target.max)
    value = round_up(low + int((high - low) * ratio), 1000)
    return min(Decimal(value) / 1000, target.max)


def requires_nothing(entry: Mapping[str, Any]) -> bool:
    """ECK's empty requirement: neither memory nor storage, per node or in total."""
    required = entry.get("required_capacity")
    return not any(
        capacity_value(required, scope, resource) is not None
        for scope in ("node", "total")
        for resource in ("memory", "storage")
    )
