"""The autoscaler spec's problems: ECK's rules and messages for ``spec.policies`` (what the
reconcile reports), the check against the cluster's node sets, and the admission webhook's
field errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from stackflow.models.quantity import parse_quantity
from stackflow.stack.policies.autoscaling.spec import (
    ML_ROLE,
    REMOTE_CLUSTER_CLIENT,
    AutoscalingSpecError,
    parse_policy_limits,
    ratio_problem,
)

__all__ = [
    "AUTOSCALING_QUANTITIES",
    "MIN_MEMORY",
    "FieldError",
    "unused_policies",
    "validate_elasticsearch_autoscaler",
    "validate_policies",
]

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
        if ML_ROLE in roles and len([r for r in roles if r != REMOTE_CLUSTER_CLIENT]) > 1:
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


FieldError = tuple[str, str]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else []


#: The resources of an autoscaling policy that are given as quantities with a min and a max.
AUTOSCALING_QUANTITIES = ("cpu", "memory", "storage")


def _min_max_problems(path: str, limits: Mapping[str, Any], *, counts: bool) -> list[FieldError]:
    low, high = limits.get("min"), limits.get("max")
    parsed_low = parse_quantity(low) if low is not None else None
    parsed_high = parse_quantity(high) if high is not None else None
    problems: list[FieldError] = []
    if low is not None and (parsed_low is None or parsed_low < 0):
        problems.append((f"{path}.min", "min must be a non-negative quantity"))
    if high is not None and (parsed_high is None or parsed_high <= 0):
        problems.append((f"{path}.max", "max must be a positive quantity"))
    if problems:
        return problems
    if counts and high is None:
        # A node count's min defaults to 0, its max has no default.
        problems.append((f"{path}.max", "max node count is required"))
    elif parsed_low is not None and parsed_high is not None and parsed_low > parsed_high:
        problems.append((f"{path}.max", "max must be greater than or equal to min"))
    return problems


def _autoscaling_policy_problems(index: int, policy: Mapping[str, Any]) -> list[FieldError]:
    path = f"spec.policies[{index}]"
    problems: list[FieldError] = []
    if not policy.get("name"):
        problems.append((f"{path}.name", "name is required"))
    if not _list(policy.get("roles")):
        problems.append((f"{path}.roles", "roles are required"))
    resources = _mapping(policy.get("resources"))
    problems.extend(
        _min_max_problems(
            f"{path}.resources.nodeCount", _mapping(resources.get("nodeCount")), counts=True
        )
    )
    for resource in AUTOSCALING_QUANTITIES:
        if resource not in resources:
            continue
        limits = _mapping(resources.get(resource))
        resource_path = f"{path}.resources.{resource}"
        problems.extend(_min_max_problems(resource_path, limits, counts=False))
        ratio = limits.get("requestsToLimitsRatio")
        problem = ratio_problem(ratio) if ratio is not None else None
        if problem is not None:
            problems.append((f"{resource_path}.requestsToLimitsRatio", problem))
    return problems


def validate_elasticsearch_autoscaler(autoscaler: Mapping[str, Any]) -> list[FieldError]:
    """Return the problems of an ElasticsearchAutoscaler's reference and policies.

    Each policy needs a unique name, roles (a set of roles used by one policy only) and a node
    count range; every min/max pair given must have min ≤ max.
    """
    spec = _mapping(autoscaler.get("spec"))
    problems: list[FieldError] = []
    if not _mapping(spec.get("elasticsearchRef")).get("name"):
        problems.append(("spec.elasticsearchRef.name", "elasticsearchRef.name is required"))
    names: set[str] = set()
    role_sets: set[frozenset[str]] = set()
    for index, raw in enumerate(_list(spec.get("policies"))):
        policy = _mapping(raw)
        problems.extend(_autoscaling_policy_problems(index, policy))
        name = policy.get("name")
        if name and name in names:
            problems.append((f"spec.policies[{index}].name", "policy name is duplicated"))
        elif name:
            names.add(str(name))
        roles = frozenset(str(role) for role in _list(policy.get("roles")))
        if roles and roles in role_sets:
            problems.append(
                (f"spec.policies[{index}].roles", "roles set is already used by another policy")
            )
        elif roles:
            role_sets.add(roles)
    return problems
