"""ECK's ElasticsearchAutoscaler rules as pure functions: the autoscaler spec's validation, the
node-set resources computed from Elasticsearch's ``_autoscaling/capacity`` response, the
autoscaler's status conditions and the unlicensed case.

Nothing here does I/O: a controller would read the autoscaler, the cluster and the capacity
response, call these functions and write what they return.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from stackflow.models.quantity import parse_quantity, same_quantity

__all__ = [
    "ACTIVE",
    "DATA_VOLUME_CLAIM",
    "DEFAULT_POLLING_SECONDS",
    "DEFAULT_REQUESTS_TO_LIMITS_RATIO",
    "ELASTICSEARCH_CONTAINER",
    "EVENT_ACTION_OFFLINE",
    "EVENT_ACTION_ONLINE",
    "EVENT_STATES",
    "GIB",
    "HEALTHY",
    "INVALID_LICENSE_EVENT_REASON",
    "LIMITED",
    "MIN_MEMORY",
    "ML_ROLE",
    "NOT_ONLINE_ERROR_MESSAGE",
    "OFFLINE_MESSAGE",
    "ONLINE",
    "ONLINE_MESSAGE",
    "STATE_CPU_REQUIRED",
    "STATE_EMPTY_RESPONSE",
    "STATE_HORIZONTAL_LIMIT",
    "STATE_MEMORY_REQUIRED",
    "STATE_NO_NODE_SET",
    "STATE_OVERLAPPING_POLICIES",
    "STATE_STORAGE_REQUIRED",
    "STATE_UNEXPECTED_STORAGE",
    "STATE_VERTICAL_LIMIT",
    "UNLICENSED_MESSAGE",
    "UNLICENSED_RETRY_SECONDS",
    "USABLE_DISK_FRACTION",
    "AutoscalingSpecError",
    "Bounds",
    "CurrentResources",
    "NodeSetResources",
    "PolicyLimits",
    "PolicyResult",
    "VolumeClaimError",
    "compute_policy",
    "conditions",
    "distribute_fairly",
    "format_quantity",
    "imported_status_entry",
    "inactive_conditions",
    "ml_node_settings",
    "node_set_roles",
    "node_sets_by_policy",
    "offline_policy",
    "overlapping_states",
    "parse_policy_limits",
    "policy_for_roles",
    "policy_status",
    "scaled_node_sets",
    "scaling_events",
    "unhealthy_conditions",
    "unlicensed_conditions",
    "unlicensed_event",
    "unused_policies",
    "validate_policies",
    "with_limits",
]

#: Condition types of ``status.conditions``, as ECK names them.
ACTIVE = "Active"
HEALTHY = "Healthy"
LIMITED = "Limited"
ONLINE = "Online"

#: The Warning event's reason when the license does not allow autoscaling.
INVALID_LICENSE_EVENT_REASON = "InvalidLicense"
#: Without an enterprise license the autoscaler is looked at again after this delay: a license
#: may be installed at any time, and nothing else would wake the reconcile.
UNLICENSED_RETRY_SECONDS = 60
#: ECK's message of that event, word for word.
UNLICENSED_MESSAGE = "Autoscaling is an enterprise feature. Enterprise features are disabled"


class AutoscalingSpecError(ValueError):
    """The autoscaler spec cannot be used (its message says which policy and why)."""


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
_REMOTE_CLUSTER_CLIENT = "remote_cluster_client"
#: ECK's smallest memory minimum.
MIN_MEMORY = Decimal(2 * 10**9)


def _path(index: int, *parts: str) -> str:
    # ECK's paths: the resource directly under the policy (``spec.policies[0].memory.min``).
    return ".".join([f"spec.policies[{index}]", *parts])


def _go_strings(values: Sequence[str]) -> str:
    return "[]string{" + ", ".join(f'"{value}"' for value in values) + "}"


def _quantity_problems(index: int, resource: str, data: object) -> list[str]:
    if not isinstance(data, Mapping):
        return []
    low, high = parse_quantity(data.get("min")), parse_quantity(data.get("max"))
    if low is None or high is None:
        return []  # reported by parse_policy_limits
    problems: list[str] = []
    if resource == "memory" and low < MIN_MEMORY:
        problems.append(
            f"{_path(index, resource, 'min')}: Required value: min quantity must be greater than 2G"
        )
    if not math.ceil(low) > 0:
        problems.append(
            f"{_path(index, resource, 'min')}: Required value: min quantity must be greater than 0"
        )
    if low > high:
        problems.append(
            f'{_path(index, resource, "max")}: Invalid value: "{data.get("max")}": max quantity '
            "must be greater or equal than min quantity"
        )
    return problems


def validate_policies(policies: Sequence[Mapping[str, Any]]) -> list[str]:
    """The problems of ``spec.policies`` with ECK's rules and messages (empty: valid).

    A name, unique; roles, not empty, a set no other policy has; one ``ml`` policy at most, with
    no other role (``remote_cluster_client`` aside); ``nodeCount`` from 0, a maximum above 0 and
    at least the minimum; memory from 2G; every range above 0 with ``max >= min``. Then what the
    parser needs (quantities, whole node counts, ``requestsToLimitsRatio``).
    """
    problems: list[str] = []
    seen_names: set[str] = set()
    seen_roles: list[frozenset[str]] = []
    ml_policies = 0
    for index, policy in enumerate(policies):
        before = len(problems)
        name = str(policy.get("name") or "")
        roles = [str(role) for role in policy.get("roles") or ()]
        if not name:
            problems.append(f"{_path(index, 'name')}: Required value: name is mandatory")
        elif name in seen_names:
            problems.append(
                f'{_path(index, "name")}: Invalid value: "{name}": policy is duplicated'
            )
        seen_names.add(name)
        if not roles:
            problems.append(
                f"{_path(index, 'roles')}: Required value: roles field is mandatory and must not "
                "be empty"
            )
        elif frozenset(roles) in seen_roles:
            problems.append(
                f'{_path(index, "name")}: Invalid value: "{",".join(roles)}": roles set is '
                "duplicated"
            )
        else:
            seen_roles.append(frozenset(roles))
        if ML_ROLE in roles:
            ml_policies += 1
        if ml_policies > 1:
            problems.append(
                f'{_path(index, "name")}: Invalid value: "{",".join(roles)}": ML nodes must be '
                "in a dedicated NodeSet"
            )
        if ML_ROLE in roles and len([r for r in roles if r != _REMOTE_CLUSTER_CLIENT]) > 1:
            problems.append(
                f'{_path(index, "name")}: Invalid value: "{",".join(roles)}": ML nodes must be '
                "in a dedicated autoscaling policy"
            )
        resources = policy.get("resources")
        resources = resources if isinstance(resources, Mapping) else {}
        count = resources.get("nodeCount")
        if isinstance(count, Mapping):
            low, high = parse_quantity(count.get("min")), parse_quantity(count.get("max"))
            if low is not None and low < 0:
                problems.append(
                    f"{_path(index, 'resources', 'nodeCount', 'min')}: Invalid value: {count.get('min')}: "
                    "min count must be equal or greater than 0"
                )
            if high is not None and not high > 0:
                problems.append(
                    f"{_path(index, 'resources', 'nodeCount', 'max')}: Invalid value: {count.get('max')}: "
                    "max count must be greater than 0"
                )
            if low is not None and high is not None and high < low:
                problems.append(
                    f"{_path(index, 'resources', 'nodeCount', 'max')}: Invalid value: {count.get('max')}: "
                    "max node count must be an integer greater or equal than the min node count"
                )
        for resource in ("cpu", "memory", "storage"):
            problems.extend(_quantity_problems(index, resource, resources.get(resource)))
        if name and len(problems) == before:
            try:
                parse_policy_limits(policy)
            except AutoscalingSpecError as error:
                problems.append(str(error))
    return problems


def unused_policies(
    policies: Sequence[Mapping[str, Any]], assignments: Mapping[str, Sequence[str]]
) -> list[str]:
    """ECK's check against the cluster: every policy's roles must be those of a node set."""
    return [
        f"{_path(index, 'roles')}: Invalid value: "
        f"{_go_strings([str(r) for r in policy.get('roles') or ()])}: roles must be used in at "
        "least one nodeSet"
        for index, policy in enumerate(policies)
        if not assignments.get(str(policy.get("name") or ""))
    ]


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


def unlicensed_conditions() -> list[dict[str, str]]:
    """ECK's conditions without an enterprise license: inactive, with the license message."""
    return inactive_conditions(UNLICENSED_MESSAGE)


def unlicensed_event() -> dict[str, str]:
    """The Warning event recorded on the autoscaler without an enterprise license."""
    return {
        "type": "Warning",
        "reason": INVALID_LICENSE_EVENT_REASON,
        "action": "LicenseCheck",
        "message": UNLICENSED_MESSAGE,
    }


#: ECK's period between two reads of ``_autoscaling/capacity`` when ``spec.pollingPeriod`` is unset.
DEFAULT_POLLING_SECONDS = 60.0
#: The container whose resources a policy sets, and the claim holding a node's data (ECK's names).
ELASTICSEARCH_CONTAINER = "elasticsearch"
DATA_VOLUME_CLAIM = "elasticsearch-data"
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


GIB = 2**30
_GB = 10**9
#: ECK keeps 5% of a data volume free: required storage is divided by this before sizing.
USABLE_DISK_FRACTION = Decimal("0.95")
#: Online condition messages (ECK's).
ONLINE_MESSAGE = "Elasticsearch is available"
OFFLINE_MESSAGE = "Elasticsearch is not available"
NOT_ONLINE_ERROR_MESSAGE = (
    "An error prevented resource calculation from the Elasticsearch autoscaling API"
)
_ONLINE_MESSAGE_LIMIT = 256
#: The event actions of the Warning events a reconcile records on the Elasticsearch resource.
EVENT_ACTION_ONLINE = "AutoscalingOnlineReconciliation"
EVENT_ACTION_OFFLINE = "AutoscalingOfflineReconciliation"


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


class _States:
    """ECK's status builder for one policy: messages recorded by state type."""

    def __init__(self) -> None:
        self.by_type: dict[str, list[str]] = {}

    def record(self, state: str, message: str) -> None:
        self.by_type.setdefault(state, []).append(message)

    def frozen(self) -> dict[str, tuple[str, ...]]:
        return {state: tuple(messages) for state, messages in self.by_type.items()}


class _PolicySkippedError(Exception):
    """A policy whose resources cannot be computed (ECK logs it and leaves its node sets)."""


def _whole(value: Decimal) -> int:
    """A quantity's ``Value()`` in ECK: the amount rounded up to a whole unit."""
    return math.ceil(value)


def _round_up(value: int, multiple: int) -> int:
    return value if value % multiple == 0 else value + multiple - value % multiple


def _clamp_count(count: int, bounds: Bounds) -> int:
    return int(min(max(Decimal(count), bounds.min), bounds.max))


def _clamp(value: Decimal, bounds: Bounds) -> Decimal:
    return min(max(value, bounds.min), bounds.max)


def distribute_fairly(names: Sequence[str], count: int) -> tuple[tuple[str, int], ...]:
    """ECK's spread of ``count`` nodes over node sets: one at a time to the node set with the
    fewest (ties by name); the result is in that order (fewest first, then by name)."""
    counts = dict.fromkeys(names, 0)
    if not counts:
        return ()
    for _ in range(max(count, 0)):
        smallest = min(counts, key=lambda name: (counts[name], name))
        counts[smallest] += 1
    return tuple(sorted(counts.items(), key=lambda item: (item[1], item[0])))


def _capacity(section: object, scope: str, resource: str) -> Decimal | None:
    part = section.get(scope) if isinstance(section, Mapping) else None
    value = part.get(resource) if isinstance(part, Mapping) else None
    return parse_quantity(value) if value is not None else None


def _resource_value(
    resource: str,
    node: Decimal,
    total: Decimal | None,
    bounds: Bounds,
    limits: PolicyLimits,
    states: _States,
) -> Decimal:
    """ECK's per-node memory or storage: the node requirement, at least the total over the
    minimum node count, rounded up to a GiB and kept within the range."""
    maximum = _whole(bounds.max)
    if _whole(node) > maximum:
        states.record(
            STATE_VERTICAL_LIMIT,
            f"{resource} required per node, {_whole(node)}, is greater than the maximum "
            f"allowed: {maximum}",
        )
    value = _whole(node)
    min_nodes = int(limits.node_count.min) or 1
    if total is not None:
        value = max(value, _whole(total) // min_nodes)
    return Decimal(min(maximum, max(_whole(bounds.min), _round_up(value, GIB))))


def _node_count(
    resource: str, per_node: int, total: int, limits: PolicyLimits, states: _States
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
    return _clamp_count(wanted, limits.node_count)


def _adjusted(value: Decimal | None) -> Decimal:
    return Decimal(math.ceil((value or Decimal(0)) / USABLE_DISK_FRACTION))


def _storage(
    limits: PolicyLimits,
    entry: Mapping[str, Any],
    current: CurrentResources | None,
    states: _States,
) -> tuple[Decimal, Callable[[NodeSetResources], int]] | None:
    """ECK's storage recommendation: the per-node storage and the node-count rule."""
    required = entry.get("required_capacity") or {}
    node, total = _capacity(required, "node", "storage"), _capacity(required, "total", "storage")
    bounds = limits.storage
    if bounds is None and node is None and total is None:
        return None
    observed = entry.get("current_capacity") or {}
    observed_node = _capacity(observed, "node", "storage")
    observed_total = _capacity(observed, "total", "storage")
    if observed_node is None or observed_total is None:
        raise _PolicySkippedError(
            "observed storage capacity is expected in Elasticsearch autoscaling API response"
        )
    if bounds is None:
        states.record(STATE_STORAGE_REQUIRED, "Min and max storage must be specified")
        raise _PolicySkippedError("min and max storage must be specified")
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
            elif _whole(observed_node) > _whole(claimed):
                states.record(
                    STATE_UNEXPECTED_STORAGE,
                    "Vertical Pod autoscaling is not supported: current node storage capacity "
                    f"{_whole(observed_node)} is greater than the claimed capacity {_whole(claimed)}",
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
            return _clamp_count(0, limits.node_count)
        if current is None or total_required > observed_total:
            return _node_count(
                "storage",
                _whole(resources.storage or Decimal(0)),
                _whole(_adjusted(total)),
                limits,
                states,
            )
        return _clamp_count(current.node_count, limits.node_count)

    return per_node, count


def _memory(
    limits: PolicyLimits, entry: Mapping[str, Any], states: _States
) -> tuple[Decimal, Callable[[NodeSetResources], int]] | None:
    """ECK's memory recommendation: the per-node memory and the node-count rule."""
    required = entry.get("required_capacity") or {}
    node, total = _capacity(required, "node", "memory"), _capacity(required, "total", "memory")
    if node is None and total is None:
        return None
    bounds = limits.memory
    if bounds is None:
        states.record(STATE_MEMORY_REQUIRED, "Min and max memory must be specified")
        raise _PolicySkippedError("min and max memory must be specified")
    per_node = _resource_value("memory", node or Decimal(0), total, bounds, limits, states)

    def count(resources: NodeSetResources) -> int:
        return _node_count(
            "memory",
            _whole(resources.memory or Decimal(0)),
            _whole(total or Decimal(0)),
            limits,
            states,
        )

    return per_node, count


def _millis(value: Decimal) -> int:
    return math.ceil(value * 1000)


def _cpu(
    limits: PolicyLimits, entry: Mapping[str, Any], states: _States
) -> tuple[Decimal, Callable[[NodeSetResources], int]] | None:
    """ECK's cpu recommendation (in millicores, no rounding to a unit)."""
    required = entry.get("required_capacity") or {}
    node = _capacity(required, "node", "processors")
    total = _capacity(required, "total", "processors")
    if node is None and total is None:
        return None
    bounds = limits.cpu
    if bounds is None:
        states.record(STATE_CPU_REQUIRED, "Min and max CPU must be specified")
        raise _PolicySkippedError("min and max CPU must be specified")
    maximum = _millis(bounds.max)
    wanted = _millis(node or Decimal(0))
    if wanted > maximum:
        states.record(
            STATE_VERTICAL_LIMIT,
            f"Required CPU per node {format_quantity(node or Decimal(0), cpu=True)} is greater "
            f"than the maximum allowed: {format_quantity(bounds.max, cpu=True)}",
        )
    min_nodes = int(limits.node_count.min) or 1
    if total is not None:
        wanted = max(wanted, _millis(total) // min_nodes)
    per_node = Decimal(min(maximum, max(_millis(bounds.min), wanted))) / 1000

    def count(resources: NodeSetResources) -> int:
        return _node_count(
            "cpu",
            _millis(resources.cpu or Decimal(0)),
            _millis(total or Decimal(0)),
            limits,
            states,
        )

    return per_node, count


def _linear(required: Decimal, source: Bounds, target: Bounds, unit: int) -> Decimal:
    """ECK's linear scaling of one resource from another within their ranges, rounded up to
    ``unit`` (a GiB for memory, a core in millicores for cpu) and at most the target maximum."""
    allowed = _whole(source.max) - _whole(source.min)
    if allowed == 0:
        return target.min
    ratio = (_whole(required) - _whole(source.min)) / allowed
    if ratio == 0:
        return target.min
    if ratio == 1:
        return target.max
    if unit == GIB:
        low, high = _whole(target.min), _whole(target.max)
        value = _round_up(low + int((high - low) * ratio), GIB)
        return min(Decimal(value), target.max)
    low, high = _millis(target.min), _millis(target.max)
    value = _round_up(low + int((high - low) * ratio), 1000)
    return min(Decimal(value) / 1000, target.max)


def with_limits(resources: NodeSetResources, limits: PolicyLimits) -> NodeSetResources:
    """ECK's limits: the request times ``requestsToLimitsRatio`` rounded up to a whole unit
    (bytes; cores for cpu, from the request rounded up to a core); a ratio of 0 sets none."""
    memory_limit = cpu_limit = None
    if resources.memory is not None and limits.memory_ratio > 0:
        memory_limit = Decimal(math.ceil(_whole(resources.memory) * limits.memory_ratio))
    if resources.cpu is not None and limits.cpu_ratio > 0:
        cpu_limit = Decimal(math.ceil(_whole(resources.cpu) * limits.cpu_ratio))
    return replace(resources, memory_limit=memory_limit, cpu_limit=cpu_limit)


def offline_policy(
    limits: PolicyLimits,
    node_sets: Sequence[str],
    current: CurrentResources | None,
    states: Mapping[str, tuple[str, ...]] | None = None,
) -> PolicyResult:
    """ECK's resources without an answer for the policy: those of its status, kept within the
    ranges (storage never shrinks), or the minimums; the node count likewise."""
    memory = storage = cpu = None
    if current is None:
        memory = limits.memory.min if limits.memory is not None else None
        cpu = limits.cpu.min if limits.cpu is not None else None
        storage = limits.storage.min if limits.storage is not None else None
        count = _clamp_count(0, limits.node_count)
    else:
        if limits.memory is not None:
            memory = (
                _clamp(current.memory, limits.memory)
                if current.memory is not None
                else limits.memory.min
            )
        if limits.cpu is not None:
            cpu = _clamp(current.cpu, limits.cpu) if current.cpu is not None else limits.cpu.min
        if limits.storage is not None:
            storage = limits.storage.min
            if current.storage is not None and current.storage > storage:
                storage = current.storage
        count = _clamp_count(current.node_count, limits.node_count)
    resources = with_limits(
        NodeSetResources(node_count=count, memory=memory, storage=storage, cpu=cpu), limits
    )
    return PolicyResult(
        policy=limits.name,
        resources=resources,
        node_sets=distribute_fairly(node_sets, count),
        states=dict(states or {}),
    )


def _stabilized(
    limits: PolicyLimits,
    computed: NodeSetResources,
    node_sets: Sequence[str],
    current: CurrentResources | None,
    observed_nodes: int,
) -> tuple[NodeSetResources, tuple[tuple[str, int], ...]]:
    """ECK's guard: no scale-down while Elasticsearch sees fewer nodes than the status has."""
    distributed = distribute_fairly(node_sets, computed.node_count)
    if current is None or not (
        computed.node_count < current.node_count and observed_nodes < current.node_count
    ):
        return computed, distributed
    count = _clamp_count(current.node_count, limits.node_count)
    memory, cpu, storage = current.memory, current.cpu, current.storage
    if limits.memory is not None and memory is not None:
        memory = _clamp(memory, limits.memory)
    if limits.cpu is not None and cpu is not None:
        cpu = _clamp(cpu, limits.cpu)
    if limits.storage is not None and storage is not None and storage < limits.storage.min:
        storage = limits.storage.min
    kept = with_limits(
        NodeSetResources(node_count=count, memory=memory, storage=storage, cpu=cpu), limits
    )
    return kept, distribute_fairly([name for name, _ in current.node_sets], count)


def _required_is_empty(entry: Mapping[str, Any]) -> bool:
    """ECK's empty requirement: neither memory nor storage, per node or in total."""
    required = entry.get("required_capacity")
    return not any(
        _capacity(required, scope, resource) is not None
        for scope in ("node", "total")
        for resource in ("memory", "storage")
    )


def compute_policy(
    limits: PolicyLimits,
    capacity_response: Mapping[str, Any],
    node_sets: Sequence[str],
    previous: Mapping[str, Any] | None = None,
    states: Mapping[str, tuple[str, ...]] | None = None,
) -> PolicyResult:
    """The resources of one policy's node sets from an ``_autoscaling/capacity`` response, as
    ECK computes them.

    No node set: ``NoNodeSet`` and nothing to write. No requirement for the policy:
    ``EmptyResponse`` and the offline resources (:func:`offline_policy`). Otherwise storage,
    memory and cpu are each sized per node (the node requirement, at least the total over the
    minimum node count, storage over 95% usable, memory and storage rounded up to a GiB, within
    the range; storage does not shrink), memory follows storage and cpu follows memory linearly
    when Elasticsearch asks for neither, the node count is the largest any resource needs
    within ``nodeCount``, spread over the node sets, and no scale-down happens while
    Elasticsearch sees fewer nodes than the status has. ``states`` are already recorded ones
    (``OverlappingPolicies``).
    """
    recorder = _States()
    for state, messages in (states or {}).items():
        for message in messages:
            recorder.record(state, message)
    if not node_sets:
        recorder.record(STATE_NO_NODE_SET, f"no nodeSets for tier {limits.name}")
        return PolicyResult(policy=limits.name, states=recorder.frozen())
    current = CurrentResources.of(previous)
    policies = capacity_response.get("policies")
    entry = policies.get(limits.name) if isinstance(policies, Mapping) else None
    if not isinstance(entry, Mapping) or _required_is_empty(entry):
        recorder.record(STATE_EMPTY_RESPONSE, "No required capacity from Elasticsearch")
        return offline_policy(limits, node_sets, current, recorder.frozen())
    try:
        recommenders = [
            ("storage", _storage(limits, entry, current, recorder)),
            ("memory", _memory(limits, entry, recorder)),
            ("cpu", _cpu(limits, entry, recorder)),
        ]
    except _PolicySkippedError:
        return PolicyResult(policy=limits.name, states=recorder.frozen())
    values = {name: found[0] for name, found in recommenders if found is not None}
    memory, storage, cpu = values.get("memory"), values.get("storage"), values.get("cpu")
    if memory is None and limits.memory is not None and limits.storage is not None and storage:
        memory = _linear(storage, limits.storage, limits.memory, GIB)
    if cpu is None and limits.cpu is not None and limits.memory is not None and memory:
        cpu = _linear(memory, limits.memory, limits.cpu, 1000)
    per_node = NodeSetResources(node_count=0, memory=memory, storage=storage, cpu=cpu)
    count = max((found[1](per_node) for _, found in recommenders if found is not None), default=0)
    computed = with_limits(replace(per_node, node_count=count), limits)
    observed_nodes = len(entry.get("current_nodes") or ())
    resources, distributed = _stabilized(limits, computed, node_sets, current, observed_nodes)
    return PolicyResult(
        policy=limits.name, resources=resources, node_sets=distributed, states=recorder.frozen()
    )


def overlapping_states(policies: Sequence[PolicyLimits]) -> dict[str, dict[str, tuple[str, ...]]]:
    """ECK's ``OverlappingPolicies`` states: a role (other than ``remote_cluster_client``)
    declared by several policies, recorded on each of them."""
    by_role: dict[str, list[str]] = {}
    for policy in policies:
        for role in policy.roles:
            by_role.setdefault(role, []).append(policy.name)
    found: dict[str, dict[str, list[str]]] = {}
    for role in sorted(by_role):
        names = sorted(by_role[role])
        if role == _REMOTE_CLUSTER_CLIENT or len(names) < 2:
            continue
        message = f"role {role} is declared in autoscaling policies {','.join(names)}"
        for name in names:
            found.setdefault(name, {}).setdefault(STATE_OVERLAPPING_POLICIES, []).append(message)
    return {
        name: {state: tuple(messages) for state, messages in states.items()}
        for name, states in found.items()
    }


def _condition(type_: str, status: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "message": message}


def conditions(
    results: Sequence[PolicyResult], *, online: bool | None, online_message: str = ""
) -> list[dict[str, str]]:
    """ECK's ``status.conditions`` of a licensed reconcile (without transition times), in its
    order: ``Limited`` (a scaling limit reached), ``Healthy`` (no other state, and online),
    ``Active`` and ``Online`` (None: unknown)."""
    limited = sorted(
        {
            r.policy
            for r in results
            if set(r.states) & {STATE_VERTICAL_LIMIT, STATE_HORIZONTAL_LIMIT}
        }
    )
    issues = sorted(
        {
            r.policy
            for r in results
            if set(r.states) - {STATE_VERTICAL_LIMIT, STATE_HORIZONTAL_LIMIT}
        }
    )
    found = [
        _condition(LIMITED, "True", f"Limit reached for policies {','.join(limited)}")
        if limited
        else _condition(LIMITED, "False"),
        _condition(
            HEALTHY,
            "False",
            f"Issues reported for the following policies: [{','.join(issues)}]. Check "
            "operator logs, Kubernetes events, and policies status for more details",
        )
        if issues
        else _condition(HEALTHY, "True"),
        _condition(ACTIVE, "True"),
    ]
    if online is None:
        found.append(_condition(ONLINE, "Unknown"))
    else:
        message = online_message
        if len(message) >= _ONLINE_MESSAGE_LIMIT:
            message = message[:_ONLINE_MESSAGE_LIMIT] + "[...]"
        found.append(_condition(ONLINE, "True" if online else "False", message))
    if not online:
        previous = found[1]["message"]
        found[1] = _condition(HEALTHY, "False", f"{NOT_ONLINE_ERROR_MESSAGE}. {previous}".strip())
    return found


def unhealthy_conditions(message: str) -> list[dict[str, str]]:
    """ECK's conditions when the spec cannot be used: ``Active`` true, ``Healthy`` false with
    the reason, ``Online`` false (``Limited`` unknown when it was never set)."""
    return [
        _condition(ACTIVE, "True", "Autoscaler is unhealthy"),
        _condition(HEALTHY, "False", message),
        _condition(ONLINE, "False", "Autoscaler is unhealthy"),
        _condition(LIMITED, "Unknown"),
    ]


def inactive_conditions(message: str) -> list[dict[str, str]]:
    """ECK's conditions of an inactive autoscaler (no license, no Elasticsearch): ``Active``
    false with the reason, the others unknown or false."""
    return [
        _condition(ACTIVE, "False", message),
        _condition(HEALTHY, "Unknown", "Autoscaler is inactive"),
        _condition(ONLINE, "False", "Autoscaler is inactive"),
        _condition(LIMITED, "Unknown"),
    ]


#: The states ECK turns into Warning events on the Elasticsearch resource.
EVENT_STATES = (
    STATE_VERTICAL_LIMIT,
    STATE_HORIZONTAL_LIMIT,
    STATE_MEMORY_REQUIRED,
    STATE_STORAGE_REQUIRED,
    STATE_UNEXPECTED_STORAGE,
)


def scaling_events(results: Sequence[PolicyResult], *, online: bool) -> list[dict[str, str]]:
    """ECK's Warning events of a reconcile, recorded on the Elasticsearch resource: one per
    policy and state of :data:`EVENT_STATES`, reason the state, its messages joined by ". "."""
    action = EVENT_ACTION_ONLINE if online else EVENT_ACTION_OFFLINE
    return [
        {
            "type": "Warning",
            "reason": state,
            "action": action,
            "message": ". ".join(messages),
        }
        for result in results
        for state, messages in result.states.items()
        if state in EVENT_STATES
    ]


def format_quantity(amount: Decimal, *, cpu: bool = False) -> str:
    """ECK's rendering of an amount: cpu in cores or millicores; bytes as ``<n>Gi`` when a
    whole number of GiB, ``<n>G`` when a whole number of GB, else the plain number of bytes."""
    if cpu:
        if amount == amount.to_integral_value():
            return str(int(amount))
        return f"{math.ceil(amount * 1000)}m"
    whole = math.ceil(amount)
    if whole >= GIB and whole % GIB == 0:
        return f"{whole // GIB}Gi"
    if whole >= _GB and whole % _GB == 0:
        return f"{whole // _GB}G"
    return str(whole)


def _requests(resources: NodeSetResources, *, storage: bool = True) -> dict[str, str]:
    requests: dict[str, str] = {}
    if resources.cpu is not None:
        requests["cpu"] = format_quantity(resources.cpu, cpu=True)
    if resources.memory is not None:
        requests["memory"] = format_quantity(resources.memory)
    if storage and resources.storage is not None:
        requests["storage"] = format_quantity(resources.storage)
    return requests


def _limits(resources: NodeSetResources) -> dict[str, str]:
    limits: dict[str, str] = {}
    if resources.cpu_limit is not None:
        limits["cpu"] = format_quantity(resources.cpu_limit, cpu=True)
    if resources.memory_limit is not None:
        limits["memory"] = format_quantity(resources.memory_limit)
    return limits


def _merge_quantities(
    section: Mapping[str, Any] | None, wanted: Mapping[str, str]
) -> dict[str, Any]:
    merged = dict(section or {})
    for key, value in wanted.items():
        if not same_quantity(merged.get(key), value):
            merged[key] = value
    return merged


def _strip_container_resources(node_set: dict[str, Any]) -> None:
    """ECK drops cpu and memory from the ``elasticsearch`` container of the pod template: the
    node set's ``resources`` carries them."""
    spec = (node_set.get("podTemplate") or {}).get("spec") or {}
    for container in spec.get("containers") or ():
        if container.get("name") != ELASTICSEARCH_CONTAINER:
            continue
        resources = container.get("resources") or {}
        for part in ("requests", "limits"):
            section = resources.get(part)
            if isinstance(section, dict):
                for key in ("cpu", "memory"):
                    section.pop(key, None)
                if not section:
                    resources.pop(part)
        if "resources" in container and not resources:
            container.pop("resources")
        break


class VolumeClaimError(AutoscalingSpecError):
    """A node set with several volume claim templates cannot have its storage autoscaled."""


def _apply(node_set: dict[str, Any], resources: NodeSetResources, count: int) -> None:
    """Give one node set (a copy) its count, its ``resources`` (cpu and memory, merged into
    what it has) and its data claim's storage, as ECK writes them."""
    node_set["count"] = count
    requests, limits = _requests(resources, storage=False), _limits(resources)
    if requests or limits or node_set.get("resources"):
        current = dict(node_set.get("resources") or {})
        merged = {
            part: _merge_quantities(current.get(part), wanted)
            for part, wanted in (("requests", requests), ("limits", limits))
        }
        node_set["resources"] = {**current, **{k: v for k, v in merged.items() if v}}
    _strip_container_resources(node_set)
    if resources.storage is None:
        return
    claims = list(node_set.get("volumeClaimTemplates") or [])
    if len(claims) > 1:
        raise VolumeClaimError(
            f"node set {node_set.get('name')}: autoscaling supports one volume claim template"
        )
    claim: dict[str, Any] = (
        copy.deepcopy(dict(claims[0]))
        if claims
        else {"metadata": {"name": DATA_VOLUME_CLAIM}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    )
    requests_section = (
        claim.setdefault("spec", {}).setdefault("resources", {}).setdefault("requests", {})
    )
    if not same_quantity(requests_section.get("storage"), format_quantity(resources.storage)):
        requests_section["storage"] = format_quantity(resources.storage)
    node_set["volumeClaimTemplates"] = [claim]


def scaled_node_sets(
    node_sets: Sequence[Mapping[str, Any]], results: Sequence[PolicyResult]
) -> list[dict[str, Any]] | None:
    """``spec.nodeSets`` with each policy's resources and counts on its node sets, or None when
    every node set already has them (nothing to write). A policy without resources leaves its
    node sets alone; VolumeClaimError for a node set ECK could not size."""
    scaled = copy.deepcopy([dict(node_set) for node_set in node_sets])
    by_name = {str(node_set.get("name")): node_set for node_set in scaled}
    for result in results:
        if result.resources is None:
            continue
        for name, count in result.node_sets:
            if name in by_name:
                _apply(by_name[name], result.resources, count)
    return scaled if scaled != [dict(node_set) for node_set in node_sets] else None


def policy_status(
    result: PolicyResult,
    *,
    now: datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``status.policies[]`` entry as ECK writes it: node sets and counts, resources,
    states, and ``lastModificationTime``, ``now`` when the node sets or their resources differ
    from the ``previous`` entry (or there is none), the previous time otherwise."""
    entry: dict[str, Any] = {
        "name": result.policy,
        "nodeSets": [{"name": name, "nodeCount": count} for name, count in result.node_sets],
        "resources": {},
        "state": [
            {"type": state, "messages": list(messages)} for state, messages in result.states.items()
        ],
    }
    if result.resources is None:
        if previous is not None and previous.get("lastModificationTime"):
            entry["lastModificationTime"] = previous["lastModificationTime"]
        return entry
    requests, limits = _requests(result.resources), _limits(result.resources)
    if limits:
        entry["resources"]["limits"] = limits
    if requests:
        entry["resources"]["requests"] = requests
    unchanged = (
        previous is not None
        and previous.get("lastModificationTime")
        and _same_resources(previous, entry)
    )
    entry["lastModificationTime"] = (
        previous["lastModificationTime"]
        if unchanged and previous is not None
        else now.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    return entry


def _same_resources(previous: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """ECK's ``SameResources``: the same node counts by node set and equal quantities."""
    counts = {str(n.get("name")): n.get("nodeCount") for n in previous.get("nodeSets") or ()}
    if counts != {n["name"]: n["nodeCount"] for n in entry["nodeSets"]}:
        return False
    before, after = previous.get("resources") or {}, entry["resources"]
    for part in ("requests", "limits"):
        old, new = before.get(part) or {}, after.get(part) or {}
        if set(old) != set(new) or not all(same_quantity(old[k], new[k]) for k in new):
            return False
    return True


def ml_node_settings(policies: Sequence[PolicyLimits]) -> dict[str, Any]:
    """ECK's persistent cluster settings for machine learning, put on every online reconcile:
    as many lazy ML nodes as the ``ml`` policies' maximum node counts add up to, the largest
    maximum memory of them as the largest ML node (``<bytes>b``), and automatic memory."""
    ml = [policy for policy in policies if ML_ROLE in policy.roles]
    nodes = sum(int(policy.node_count.max) for policy in ml)
    memory = max((_whole(p.memory.max) for p in ml if p.memory is not None), default=0)
    return {
        "xpack.ml.max_ml_node_size": f"{memory}b",
        "xpack.ml.max_lazy_ml_nodes": nodes,
        "xpack.ml.use_auto_machine_memory_percent": True,
    }


def _max_quantity(values: Sequence[object]) -> str | None:
    parsed = [(parse_quantity(value), value) for value in values if value is not None]
    found = [(amount, value) for amount, value in parsed if amount is not None]
    return str(max(found, key=lambda item: item[0])[1]) if found else None


def imported_status_entry(
    limits: PolicyLimits, stateful_sets: Sequence[tuple[str, Mapping[str, Any] | None]]
) -> dict[str, Any] | None:
    """ECK's import of a policy's current resources from its node sets' StatefulSets, for a
    policy the status does not know yet: their replicas, the largest data claim (when the policy
    sizes storage) and the largest cpu and memory of their ``elasticsearch`` container (requests
    and limits, when the policy sizes them). None when no StatefulSet exists; VolumeClaimError
    for a StatefulSet with several claims."""
    node_sets: list[dict[str, Any]] = []
    storage: list[object] = []
    amounts: dict[str, dict[str, list[object]]] = {"requests": {}, "limits": {}}
    for name, stateful_set in stateful_sets:
        if stateful_set is None:
            continue
        spec = stateful_set.get("spec") or {}
        node_sets.append({"name": name, "nodeCount": int(spec.get("replicas") or 0)})
        claims = spec.get("volumeClaimTemplates") or []
        if len(claims) > 1:
            raise VolumeClaimError(
                "autoscaling does not support nodeSet with more than one volume claim"
            )
        if claims and limits.storage is not None:
            storage.append(
                (((claims[0].get("spec") or {}).get("resources") or {}).get("requests") or {}).get(
                    "storage"
                )
            )
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        container = next((c for c in containers if c.get("name") == ELASTICSEARCH_CONTAINER), None)
        if container is None:
            continue
        wanted = [
            resource
            for resource, bounds in (("memory", limits.memory), ("cpu", limits.cpu))
            if bounds is not None
        ]
        for part in ("requests", "limits"):
            section = (container.get("resources") or {}).get(part) or {}
            for resource in wanted:
                amounts[part].setdefault(resource, []).append(section.get(resource))
    if not node_sets:
        return None
    resources: dict[str, dict[str, str]] = {}
    for part, by_resource in amounts.items():
        for resource, values in by_resource.items():
            value = _max_quantity(values)
            if value is not None:
                resources.setdefault(part, {})[resource] = value
    largest = _max_quantity(storage)
    if largest is not None:
        resources.setdefault("requests", {})["storage"] = largest
    return {"name": limits.name, "nodeSets": node_sets, "resources": resources}
