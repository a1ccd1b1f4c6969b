"""ECK's webhook rules for the policy kinds, as pure functions.

StackConfigPolicy and AutoOpsAgentPolicy (the ElasticsearchAutoscaler's are in
``stackflow.stack.policies.autoscaling.validation``): each validator takes the object
as a mapping and returns every problem as ``(field path, message)``, the shape the other
validators return, so the webhook can list them all in one denial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stackflow.stack.version import Version, parse_version

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
