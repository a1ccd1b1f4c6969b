"""The ElasticsearchAutoscaler's spec read as ECK reads it: each ``spec.policies[]`` entry parsed
into :class:`PolicyLimits`, and the node sets whose roles are exactly a policy's roles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from stackflow.models.quantity import parse_quantity

__all__ = [
    "DEFAULT_POLLING_SECONDS",
    "DEFAULT_REQUESTS_TO_LIMITS_RATIO",
    "ML_ROLE",
    "REMOTE_CLUSTER_CLIENT",
    "AutoscalingSpecError",
    "Bounds",
    "PolicyLimits",
    "VolumeClaimError",
    "node_set_roles",
    "node_sets_by_policy",
    "parse_policy_limits",
    "policy_for_roles",
    "ratio_problem",
]


class AutoscalingSpecError(ValueError):
    """The autoscaler spec cannot be used (its message says which policy and why)."""


class VolumeClaimError(AutoscalingSpecError):
    """A node set with several volume claim templates cannot have its storage autoscaled."""


@dataclass(frozen=True)
class Bounds:
    """An inclusive ``[min, max]`` range; amounts in base units (bytes, cores, nodes)."""

    min: Decimal
    max: Decimal

    def clamp(self, value: Decimal) -> tuple[Decimal, bool]:
        """``value`` within the bounds, and whether a bound had to be applied (``Limited``)."""
        if value < self.min:
            # Below the floor is not a limit being hit: the minimum is what the user asked for.
            return self.min, False
        if value > self.max:
            return self.max, True
        return value, False


@dataclass(frozen=True)
class PolicyLimits:
    """One ``spec.policies[]`` entry: its roles and resource bounds (None: not autoscaled)."""

    name: str
    roles: frozenset[str]
    node_count: Bounds
    memory: Bounds | None = None
    storage: Bounds | None = None
    cpu: Bounds | None = None
    #: ``resources.memory.requestsToLimitsRatio`` and ``resources.cpu.requestsToLimitsRatio``.
    memory_ratio: Decimal = Decimal(1)
    cpu_ratio: Decimal = Decimal(1)


#: ECK's ``requestsToLimitsRatio`` when unset, for memory and cpu alike: limits equal requests.
DEFAULT_REQUESTS_TO_LIMITS_RATIO = Decimal(1)


def ratio_problem(value: object) -> str | None:
    """What is wrong with a ``requestsToLimitsRatio`` value, or None.

    ECK's limit is the request times the ratio, and a ratio of 0 or less sets no limit. A ratio
    between 0 and 1 would give a limit below the request, which Kubernetes refuses: refused here
    (ECK lets the StatefulSet fail instead). The reconcile and the admission webhook both ask this.
    """
    ratio = parse_quantity(value)
    if ratio is None or 0 < ratio < 1:
        return (
            "need a ratio of at least 1 (the limit is the request times the ratio) "
            f"or 0 (no limit), got {value!r}"
        )
    return None


def _ratio(data: object, field_name: str) -> Decimal:
    """``requestsToLimitsRatio`` of a memory or cpu range (ECK's default 1 when unset; 0 or
    less: no limit); AutoscalingSpecError for one ``ratio_problem`` refuses."""
    if not isinstance(data, Mapping) or data.get("requestsToLimitsRatio") is None:
        return DEFAULT_REQUESTS_TO_LIMITS_RATIO
    value = data.get("requestsToLimitsRatio")
    problem = ratio_problem(value)
    ratio = parse_quantity(value)
    if problem is not None or ratio is None:
        raise AutoscalingSpecError(f"{field_name}.requestsToLimitsRatio: {problem}")
    return max(ratio, Decimal(0))


def _bounds(data: object, field_name: str, *, integer: bool = False) -> Bounds | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise AutoscalingSpecError(f"{field_name}: expected an object with min and max")
    low = parse_quantity(data.get("min"))
    high = parse_quantity(data.get("max"))
    if low is None or high is None:
        raise AutoscalingSpecError(f"{field_name}: min and max must both be quantities")
    if integer and (low != low.to_integral_value() or high != high.to_integral_value()):
        raise AutoscalingSpecError(f"{field_name}: min and max must be whole numbers")
    if low < 0 or high < low:
        raise AutoscalingSpecError(f"{field_name}: need 0 <= min <= max, got {low} and {high}")
    return Bounds(low, high)


def parse_policy_limits(policy: Mapping[str, Any]) -> PolicyLimits:
    """The limits of one ``spec.policies[]`` entry; AutoscalingSpecError when unusable."""
    name = str(policy.get("name") or "")
    if not name:
        raise AutoscalingSpecError("a policy has no name")
    resources = policy.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise AutoscalingSpecError(f"policy {name}: resources must be an object")
    node_count = _bounds(
        resources.get("nodeCount"), f"policy {name}: resources.nodeCount", integer=True
    )
    if node_count is None:
        raise AutoscalingSpecError(f"policy {name}: resources.nodeCount is required")
    return PolicyLimits(
        name=name,
        roles=frozenset(str(role) for role in policy.get("roles") or ()),
        node_count=node_count,
        memory=_bounds(resources.get("memory"), f"policy {name}: resources.memory"),
        storage=_bounds(resources.get("storage"), f"policy {name}: resources.storage"),
        cpu=_bounds(resources.get("cpu"), f"policy {name}: resources.cpu"),
        memory_ratio=_ratio(resources.get("memory"), f"policy {name}: resources.memory"),
        cpu_ratio=_ratio(resources.get("cpu"), f"policy {name}: resources.cpu"),
    )


ML_ROLE = "ml"


#: The role an overlap of policies may share (ECK ignores it when looking for overlaps).
REMOTE_CLUSTER_CLIENT = "remote_cluster_client"


#: ECK's period between two reads of ``_autoscaling/capacity`` when ``spec.pollingPeriod`` is unset.
DEFAULT_POLLING_SECONDS = 60.0


def policy_for_roles(
    node_set_roles: Sequence[str], policies: Sequence[PolicyLimits]
) -> PolicyLimits:
    """The one policy whose roles are exactly the node set's; AutoscalingSpecError otherwise."""
    roles = frozenset(node_set_roles)
    if not roles:
        raise AutoscalingSpecError("a node set without roles cannot be autoscaled")
    found = [policy for policy in policies if policy.roles == roles]
    if not found:
        raise AutoscalingSpecError(f"no autoscaling policy has the roles {sorted(roles)}")
    if len(found) > 1:
        names = ", ".join(sorted(policy.name for policy in found))
        raise AutoscalingSpecError(
            f"several autoscaling policies have the roles {sorted(roles)}: {names}"
        )
    return found[0]


def node_set_roles(node_set: Mapping[str, Any]) -> frozenset[str] | None:
    """The ``node.roles`` of a node set's config (dotted or nested), None when not set."""
    config = node_set.get("config")
    if not isinstance(config, Mapping):
        return None
    roles = config.get("node.roles")
    if roles is None and isinstance(config.get("node"), Mapping):
        roles = config["node"].get("roles")
    if not isinstance(roles, list):
        return None
    return frozenset(str(role) for role in roles)


def node_sets_by_policy(
    node_sets: Sequence[Mapping[str, Any]], policies: Sequence[PolicyLimits]
) -> dict[str, list[str]]:
    """The names of the node sets each policy scales: those whose roles are exactly its roles
    (sorted; a policy no node set matches maps to an empty list). Others are left alone."""
    assigned: dict[str, list[str]] = {policy.name: [] for policy in policies}
    for node_set in node_sets:
        roles = node_set_roles(node_set)
        for policy in policies:
            if roles is not None and roles == policy.roles:
                assigned[policy.name].append(str(node_set.get("name")))
    return {name: sorted(names) for name, names in assigned.items()}
