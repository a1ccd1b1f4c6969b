"""ECK's webhook rules for the policy kinds, as pure functions.

StackConfigPolicy, ElasticsearchAutoscaler and AutoOpsAgentPolicy: each validator takes the object
as a mapping and returns every problem as ``(field path, message)``, the shape the other
validators return, so the webhook can list them all in one denial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.models.quantity import parse_quantity
from stackflow.stack.elasticsearch.autoscaling import ratio_problem
from stackflow.stack.elasticsearch.version import Version, parse_version

FieldError = tuple[str, str]

#: The settings groups of ``spec.elasticsearch``; a policy must set at least one of them (or Kibana's).
ELASTICSEARCH_SETTINGS = (
    "clusterSettings",
    "snapshotRepositories",
    "snapshotLifecyclePolicies",
    "securityRoleMappings",
    "securityRoles",
    "indexLifecyclePolicies",
    "ingestPipelines",
    "config",
    "secretMounts",
    "secureSettings",
)
INDEX_TEMPLATE_SETTINGS = ("componentTemplates", "composableIndexTemplates")
KIBANA_SETTINGS = ("config", "secureSettings")

#: The AutoOps agent versions ECK accepts: the lowest depends on the operator's license.
AUTOOPS_LOWEST_ENTERPRISE = Version(9, 2, 1)
AUTOOPS_LOWEST_BASIC = Version(9, 2, 4)
AUTOOPS_MAJOR_LIMIT = 10

#: The resources of an autoscaling policy that are given as quantities with a min and a max.
AUTOSCALING_QUANTITIES = ("cpu", "memory", "storage")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("spec"))


def _is_set(value: object) -> bool:
    # An empty map or list configures nothing, the same as an absent one.
    return value is not None and value != {} and value != []


def stack_config_policy_sets_something(spec: Mapping[str, Any]) -> bool:
    """Whether the policy's spec sets at least one Elasticsearch or Kibana setting."""
    elasticsearch = _mapping(spec.get("elasticsearch"))
    templates = _mapping(elasticsearch.get("indexTemplates"))
    kibana = _mapping(spec.get("kibana"))
    return (
        _is_set(spec.get("secureSettings"))
        or any(_is_set(elasticsearch.get(key)) for key in ELASTICSEARCH_SETTINGS)
        or any(_is_set(templates.get(key)) for key in INDEX_TEMPLATE_SETTINGS)
        or any(_is_set(kibana.get(key)) for key in KIBANA_SETTINGS)
    )


def _secret_mount_problems(spec: Mapping[str, Any]) -> list[FieldError]:
    # Two mounts at one path would hide one Secret behind the other in the Elasticsearch Pods.
    problems: list[FieldError] = []
    seen: set[str] = set()
    mounts = _list(_mapping(spec.get("elasticsearch")).get("secretMounts"))
    for index, mount in enumerate(mounts):
        path = f"spec.elasticsearch.secretMounts[{index}].mountPath"
        mount_path = _mapping(mount).get("mountPath")
        if not mount_path:
            problems.append((path, "mountPath is required"))
        elif mount_path in seen:
            problems.append((path, "mountPath is already used by another secret mount"))
        else:
            seen.add(str(mount_path))
    return problems


def validate_stack_config_policy(policy: Mapping[str, Any]) -> list[FieldError]:
    """Return the problems of a StackConfigPolicy: nothing set, or secret mounts sharing a path."""
    spec = _spec(policy)
    problems: list[FieldError] = []
    if not stack_config_policy_sets_something(spec):
        problems.append(
            (
                "spec",
                "One out of Elasticsearch or Kibana settings is mandatory, both must not be empty",
            )
        )
    problems.extend(_secret_mount_problems(spec))
    problems.extend(_variables_from_problems(spec))
    return problems


def _variables_from_problems(spec: Mapping[str, Any]) -> list[FieldError]:
    """``spec.variablesFrom[]``: a ConfigMap or a Secret, named."""
    problems: list[FieldError] = []
    for index, entry in enumerate(_list(spec.get("variablesFrom"))):
        item = _mapping(entry)
        if item.get("kind") not in ("ConfigMap", "Secret"):
            problems.append(
                (f"spec.variablesFrom[{index}].kind", "kind must be ConfigMap or Secret")
            )
        if not item.get("name"):
            problems.append((f"spec.variablesFrom[{index}].name", "name is required"))
    return problems


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
    spec = _spec(autoscaler)
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


def _autoops_version_problems(raw: object, *, enterprise: bool) -> list[FieldError]:
    if not raw:
        return [("spec.version", "version is required")]
    try:
        version = parse_version(str(raw))
    except ValueError as error:
        return [("spec.version", f"Invalid version: {error}")]
    lowest = AUTOOPS_LOWEST_ENTERPRISE if enterprise else AUTOOPS_LOWEST_BASIC
    if not version.at_least(lowest.major, lowest.minor, lowest.patch):
        return [
            (
                "spec.version",
                f"unsupported version: version {version} is lower than the lowest "
                f"supported version of {lowest}",
            )
        ]
    if version.major >= AUTOOPS_MAJOR_LIMIT:
        return [
            (
                "spec.version",
                f"unsupported version: version {version} is higher than the highest "
                f"supported major version {AUTOOPS_MAJOR_LIMIT - 1}",
            )
        ]
    return []


def validate_autoops_agent_policy(
    policy: Mapping[str, Any], *, enterprise: bool
) -> list[FieldError]:
    """Return the problems of an AutoOpsAgentPolicy.

    The agent version must be in ECK's range (its lowest bound is lower with an enterprise
    license, hence ``enterprise``), ``autoOpsRef.secretName`` is required, the resource selector
    must select by labels or expressions, and at most one of ``config`` and ``configRef`` is set.
    """
    spec = _spec(policy)
    problems = _autoops_version_problems(spec.get("version"), enterprise=enterprise)
    if not _mapping(spec.get("autoOpsRef")).get("secretName"):
        problems.append(("spec.autoOpsRef.secretName", "autoOpsRef.secretName is required"))
    selector = _mapping(spec.get("resourceSelector"))
    if not (_is_set(selector.get("matchLabels")) or _is_set(selector.get("matchExpressions"))):
        problems.append(
            ("spec.resourceSelector", "resourceSelector must have matchLabels or matchExpressions")
        )
    if _is_set(spec.get("config")) and _is_set(spec.get("configRef")):
        problems.append(("spec.config", "Specify at most one of [config, configRef], not both"))
    return problems
