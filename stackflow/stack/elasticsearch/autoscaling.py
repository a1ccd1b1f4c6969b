"""ECK's ElasticsearchAutoscaler rules as pure functions: the autoscaler spec's validation, the
node-set resources computed from Elasticsearch's ``_autoscaling/capacity`` response, the
autoscaler's status conditions and the unlicensed case.

Nothing here does I/O: a controller would read the autoscaler, the cluster and the capacity
response, call these functions and write what they return.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    "ERROR_STATES",
    "HEALTHY",
    "INVALID_LICENSE_EVENT_REASON",
    "LIMITED",
    "ONLINE",
    "STATE_EMPTY_RESPONSE",
    "STATE_HORIZONTAL_LIMIT",
    "STATE_NO_NODE_SET",
    "STATE_OVERLAPPING_POLICIES",
    "STATE_UNEXPECTED_STORAGE",
    "STATE_VERTICAL_LIMIT",
    "UNLICENSED_MESSAGE",
    "UNLICENSED_RETRY_SECONDS",
    "AutoscalingSpecError",
    "Bounds",
    "NodeSetResources",
    "PolicyLimits",
    "PolicyResult",
    "compute_policy",
    "conditions",
    "distribute",
    "format_quantity",
    "node_set_roles",
    "node_sets_by_policy",
    "parse_policy_limits",
    "policy_for_roles",
    "policy_status",
    "scaled_node_sets",
    "unlicensed_conditions",
    "unlicensed_event",
    "validate_policies",
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


def _ratio(data: object, field_name: str) -> Decimal:
    """``requestsToLimitsRatio`` of a memory or cpu range (ECK's default 1 when unset)."""
    if not isinstance(data, Mapping) or data.get("requestsToLimitsRatio") is None:
        return DEFAULT_REQUESTS_TO_LIMITS_RATIO
    ratio = parse_quantity(data.get("requestsToLimitsRatio"))
    # A ratio above 1 would give a limit below the request, which Kubernetes refuses.
    if ratio is None or not 0 < ratio <= 1:
        raise AutoscalingSpecError(
            f"{field_name}.requestsToLimitsRatio: need 0 < ratio <= 1, "
            f"got {data.get('requestsToLimitsRatio')!r}"
        )
    return ratio


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


def validate_policies(policies: Sequence[Mapping[str, Any]]) -> list[str]:
    """The problems of ``spec.policies``, one clear message each (empty: valid).

    Every policy needs a name (unique) and a non-empty role list; two policies may not have
    the same roles, since a node set is matched to the single policy with exactly its roles.
    """
    problems: list[str] = []
    seen_names: set[str] = set()
    roles_owner: dict[frozenset[str], str] = {}
    for index, policy in enumerate(policies):
        name = str(policy.get("name") or "")
        label = name or f"#{index}"
        if not name:
            problems.append(f"spec.policies[{index}]: name is required")
        elif name in seen_names:
            problems.append(f"spec.policies[{index}]: policy name {name!r} is used twice")
        seen_names.add(name)
        roles = frozenset(str(role) for role in policy.get("roles") or ())
        if not roles:
            problems.append(f"spec.policies[{index}] ({label}): roles must not be empty")
        elif roles in roles_owner:
            problems.append(
                f"spec.policies[{index}] ({label}): roles {sorted(roles)} are already "
                f"those of policy {roles_owner[roles]!r}"
            )
        else:
            roles_owner[roles] = label
        if name:
            try:
                parse_policy_limits(policy)
            except AutoscalingSpecError as error:
                problems.append(str(error))
    return problems


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


@dataclass(frozen=True)
class NodeSetResources:
    """What the node sets of one policy get: node count and per-node memory and storage.

    ``memory`` and ``cpu`` are the requests (the required amounts, as ECK); the limits are the
    requests divided by the policy's ``requestsToLimitsRatio`` (1: limits equal requests).
    """

    node_count: int
    memory: Decimal | None = None
    storage: Decimal | None = None
    cpu: Decimal | None = None
    memory_ratio: Decimal = Decimal(1)
    cpu_ratio: Decimal = Decimal(1)

    @property
    def memory_limit(self) -> Decimal | None:
        """The memory limit per node: the request over the ratio."""
        return None if self.memory is None else self.memory / self.memory_ratio

    @property
    def cpu_limit(self) -> Decimal | None:
        """The cpu limit per node: the request over the ratio."""
        return None if self.cpu is None else self.cpu / self.cpu_ratio


@dataclass(frozen=True)
class PolicyResult:
    """The outcome for one policy: the resources, whether a maximum capped them, and why."""

    policy: str
    resources: NodeSetResources
    #: Whether the response had this policy at all (False: kept at the minimums, ``Online``).
    in_response: bool
    limited: bool = False
    messages: tuple[str, ...] = field(default_factory=tuple)


def _amount(capacity: Mapping[str, Any], scope: str, resource: str) -> Decimal:
    part = capacity.get(scope)
    value = parse_quantity(part.get(resource)) if isinstance(part, Mapping) else None
    return value if value is not None and value > 0 else Decimal(0)


def _ceil_div(total: Decimal, per_node: Decimal) -> int:
    return math.ceil(total / per_node) if per_node > 0 else 0


def compute_policy(limits: PolicyLimits, capacity_response: Mapping[str, Any]) -> PolicyResult:
    """The node-set resources of one policy from an ``_autoscaling/capacity`` response.

    Per node, memory and storage are the required ``node`` amounts (at least the minimums) kept
    within the bounds. The node count is the largest of ``ceil(required total / per-node)`` over
    memory and storage, within ``nodeCount``. A policy absent from the response, or with nothing
    required, gets its minimums. A maximum that had to be applied marks the result ``limited``.
    """
    policies = capacity_response.get("policies")
    entry = policies.get(limits.name) if isinstance(policies, Mapping) else None
    if not isinstance(entry, Mapping):
        return PolicyResult(
            policy=limits.name,
            resources=_minimums(limits),
            in_response=False,
            messages=(f"policy {limits.name} is not in the autoscaling capacity response",),
        )
    required = entry.get("required_capacity")
    required = required if isinstance(required, Mapping) else {}
    limited = False
    messages: list[str] = []
    per_node: dict[str, Decimal | None] = {}
    counts: list[int] = []
    for resource, bounds in (("memory", limits.memory), ("storage", limits.storage)):
        if bounds is None:
            per_node[resource] = None
            continue
        wanted = max(_amount(required, "node", resource), bounds.min)
        value, capped = bounds.clamp(wanted)
        if capped:
            limited = True
            messages.append(
                f"{resource} per node limited to {bounds.max} (required {wanted}) "
                f"in policy {limits.name}"
            )
        per_node[resource] = value
        counts.append(_ceil_div(_amount(required, "total", resource), value))
    count, capped = limits.node_count.clamp(Decimal(max(counts, default=0)))
    if capped:
        limited = True
        messages.append(
            f"node count limited to {limits.node_count.max} (required {max(counts)}) "
            f"in policy {limits.name}"
        )
    return PolicyResult(
        policy=limits.name,
        resources=NodeSetResources(
            node_count=int(count),
            memory=per_node.get("memory"),
            storage=per_node.get("storage"),
            cpu=limits.cpu.min if limits.cpu is not None else None,
            memory_ratio=limits.memory_ratio,
            cpu_ratio=limits.cpu_ratio,
        ),
        in_response=True,
        limited=limited,
        messages=tuple(messages),
    )


def _minimums(limits: PolicyLimits) -> NodeSetResources:
    return NodeSetResources(
        node_count=int(limits.node_count.min),
        memory=limits.memory.min if limits.memory is not None else None,
        storage=limits.storage.min if limits.storage is not None else None,
        cpu=limits.cpu.min if limits.cpu is not None else None,
        memory_ratio=limits.memory_ratio,
        cpu_ratio=limits.cpu_ratio,
    )


def _condition(type_: str, status: bool, message: str) -> dict[str, str]:
    return {"type": type_, "status": "True" if status else "False", "message": message}


def conditions(
    results: Sequence[PolicyResult],
    *,
    online: bool,
    spec_errors: Sequence[str] = (),
    policies: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, str]]:
    """The autoscaler's ``status.conditions`` (without transition times, which the writer keeps).

    ``Active``: the license allows autoscaling (this function is for the licensed case).
    ``Online``: the autoscaling API answered (``online``). ``Limited``: a maximum capped some
    policy. ``Healthy``: the spec is valid, no ``status.policies[]`` entry (``policies``) has a
    state of error severity (``ERROR_STATES``, as ECK) and every policy was computed from the
    response.
    """
    limited_messages = [
        message for result in results if result.limited for message in result.messages
    ]
    missing = [result.policy for result in results if not result.in_response]
    in_error = sorted(
        str(entry.get("name"))
        for entry in policies
        if any(state.get("type") in ERROR_STATES for state in entry.get("state") or ())
    )
    if spec_errors:
        health = _condition(HEALTHY, False, "; ".join(spec_errors))
    elif not online:
        health = _condition(HEALTHY, False, "the Elasticsearch autoscaling API is not reachable")
    elif in_error:
        health = _condition(
            HEALTHY,
            False,
            "issues reported for the following policies: "
            + ", ".join(in_error)
            + "; see status.policies for details",
        )
    elif missing:
        health = _condition(
            HEALTHY,
            False,
            "policies missing from the capacity response: " + ", ".join(sorted(missing)),
        )
    else:
        health = _condition(HEALTHY, True, "")
    return [
        _condition(ACTIVE, True, ""),
        health,
        _condition(LIMITED, bool(limited_messages), "; ".join(limited_messages)),
        _condition(
            ONLINE,
            online,
            ""
            if online
            else "the autoscaling capacity could not be read; using the last known resources",
        ),
    ]


def unlicensed_conditions() -> list[dict[str, str]]:
    """The conditions without an enterprise license: ``Active`` false, nothing else decided."""
    return [
        _condition(
            ACTIVE,
            False,
            "autoscaling is inactive: an enterprise license is required",
        )
    ]


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
# Not produced here (identical roles are refused by validate_policies and storage is not read
# from the Pods), but of error severity in ECK all the same when a status carries them.
STATE_OVERLAPPING_POLICIES = "OverlappingPolicies"
STATE_UNEXPECTED_STORAGE = "UnexpectedNodeStorageCapacity"
#: The states of error severity: any of them in a policy makes ``Healthy`` false, as ECK.
ERROR_STATES = frozenset({STATE_NO_NODE_SET, STATE_OVERLAPPING_POLICIES, STATE_UNEXPECTED_STORAGE})


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


def distribute(count: int, slots: int) -> list[int]:
    """``count`` nodes spread over ``slots`` node sets as evenly as possible, first ones first."""
    if slots <= 0:
        return []
    base, extra = divmod(count, slots)
    return [base + (1 if index < extra else 0) for index in range(slots)]


def format_quantity(amount: Decimal, *, cpu: bool = False) -> str:
    """A Kubernetes quantity for ``amount``: ``Gi``/``Mi`` when exact (bytes), millicores (cpu)."""
    if cpu:
        if amount == amount.to_integral_value():
            return str(int(amount))
        return f"{math.ceil(amount * 1000)}m"
    whole = math.ceil(amount)
    for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if whole and whole % unit == 0:
            return f"{whole // unit}{suffix}"
    return str(whole)


def _set_quantity(section: dict[str, Any], key: str, value: str) -> bool:
    if same_quantity(section.get(key), value):
        return False
    section[key] = value
    return True


def _apply(node_set: dict[str, Any], resources: NodeSetResources, count: int) -> bool:
    """Give one node set (a copy) its count and resources; whether anything changed."""
    changed = node_set.get("count") != count
    node_set["count"] = count
    wanted = {"requests": _requests(resources, storage=False), "limits": _limits(resources)}
    if wanted["requests"]:
        spec = node_set.setdefault("podTemplate", {}).setdefault("spec", {})
        containers = spec.setdefault("containers", [])
        container = next((c for c in containers if c.get("name") == ELASTICSEARCH_CONTAINER), None)
        if container is None:
            container = {"name": ELASTICSEARCH_CONTAINER}
            containers.append(container)
        container_resources = container.setdefault("resources", {})
        for part, amounts in wanted.items():
            section = container_resources.setdefault(part, {})
            for key, value in amounts.items():
                changed = _set_quantity(section, key, value) or changed
    if resources.storage is not None:
        claims = node_set.setdefault("volumeClaimTemplates", [])
        claim = next(
            (c for c in claims if (c.get("metadata") or {}).get("name") == DATA_VOLUME_CLAIM),
            None,
        )
        if claim is None:
            claim = {
                "metadata": {"name": DATA_VOLUME_CLAIM},
                "spec": {"accessModes": ["ReadWriteOnce"]},
            }
            claims.append(claim)
            changed = True
        requests = (
            claim.setdefault("spec", {}).setdefault("resources", {}).setdefault("requests", {})
        )
        changed = _set_quantity(requests, "storage", format_quantity(resources.storage)) or changed
    return changed


def scaled_node_sets(
    node_sets: Sequence[Mapping[str, Any]],
    results: Sequence[PolicyResult],
    assignments: Mapping[str, Sequence[str]],
) -> list[dict[str, Any]] | None:
    """``spec.nodeSets`` with each policy's resources on its node sets (its node count spread
    over them), or None when every node set already has them (nothing to write)."""
    scaled = copy.deepcopy([dict(node_set) for node_set in node_sets])
    by_name = {str(node_set.get("name")): node_set for node_set in scaled}
    changed = False
    for result in results:
        names = list(assignments.get(result.policy, ()))
        for name, count in zip(
            names, distribute(result.resources.node_count, len(names)), strict=True
        ):
            changed = _apply(by_name[name], result.resources, count) or changed
    return scaled if changed else None


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


def policy_status(
    result: PolicyResult,
    node_sets: Sequence[str],
    *,
    now: datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``status.policies[]`` entry: its node sets and counts, its resources, its states.

    ``lastModificationTime`` is ``now`` when the node sets or their resources differ from the
    ``previous`` entry of the policy (or there is none), and the previous time otherwise.
    """
    counts = distribute(result.resources.node_count, len(node_sets))
    states: list[dict[str, Any]] = []
    if not node_sets:
        states.append(
            {
                "type": STATE_NO_NODE_SET,
                "messages": [f"no node set has the roles of policy {result.policy}"],
            }
        )
    if not result.in_response:
        states.append({"type": STATE_EMPTY_RESPONSE, "messages": list(result.messages)})
    horizontal = [m for m in result.messages if m.startswith("node count limited")]
    vertical = [m for m in result.messages if result.limited and m not in horizontal]
    if horizontal:
        states.append({"type": STATE_HORIZONTAL_LIMIT, "messages": horizontal})
    if vertical:
        states.append({"type": STATE_VERTICAL_LIMIT, "messages": vertical})
    entry: dict[str, Any] = {
        "name": result.policy,
        "nodeSets": [
            {"name": name, "nodeCount": count}
            for name, count in zip(node_sets, counts, strict=True)
        ],
        "resources": {"requests": _requests(result.resources)},
    }
    limits = _limits(result.resources)
    if limits:
        entry["resources"]["limits"] = limits
    unchanged = (
        previous is not None
        and previous.get("nodeSets") == entry["nodeSets"]
        and previous.get("resources") == entry["resources"]
        and previous.get("lastModificationTime")
    )
    entry["lastModificationTime"] = (
        previous["lastModificationTime"]
        if unchanged and previous is not None
        else now.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    if states:
        entry["state"] = states
    return entry
