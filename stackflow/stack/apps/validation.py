"""ECK's webhook validation of the stack applications, as pure functions.

Every problem is returned as ``(field path, message)`` so a reconcile can report them all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.apps.kinds import app_kind
from stackflow.stack.naming import MAX_RESOURCE_NAME_LENGTH
from stackflow.stack.spec_shapes import (
    as_list,
    claim_templates_problems,
    depth_problem,
    not_a,
    pod_template_problems,
)
from stackflow.stack.version import Version, parse_version

FieldError = tuple[str, str]
Spec = Mapping[str, Any]

MAX_SUPPORTED = Version(9, 99, 99)
SUPPORTED_VERSIONS: Mapping[str, tuple[Version, Version]] = {
    "Kibana": (Version(7, 17, 0), MAX_SUPPORTED),
    "ApmServer": (Version(7, 17, 0), MAX_SUPPORTED),
    "EnterpriseSearch": (Version(7, 17, 0), Version(8, 99, 99)),
    "Beat": (Version(7, 17, 0), MAX_SUPPORTED),
    "Agent": (Version(7, 17, 0), MAX_SUPPORTED),
    "Logstash": (Version(8, 12, 0), MAX_SUPPORTED),
    "ElasticMapsServer": (Version(7, 17, 0), MAX_SUPPORTED),
    "PackageRegistry": (Version(7, 17, 0), MAX_SUPPORTED),
}
KNOWN_BEAT_TYPES = ("filebeat", "metricbeat", "heartbeat", "auditbeat", "journalbeat", "packetbeat")
SINGLE_REFS: Mapping[str, tuple[str, ...]] = {
    "Kibana": ("elasticsearchRef", "enterpriseSearchRef", "packageRegistryRef"),
    "ApmServer": ("elasticsearchRef", "kibanaRef"),
    "EnterpriseSearch": ("elasticsearchRef",),
    "Beat": ("elasticsearchRef", "kibanaRef"),
    "Agent": ("kibanaRef", "fleetServerRef"),
    "ElasticMapsServer": ("elasticsearchRef",),
}

NAME_TOO_LONG = f"name exceeds maximum allowed length of {MAX_RESOURCE_NAME_LENGTH}"
NAME_AND_SECRET_NAME = "specify name or secretName, not both"
SECRET_NAME_WITH_NAMESPACE = (
    "namespace and serviceName can only be used in combination with name, not with secretName"
)
BEAT_WORKLOAD = "Specify either daemonSet or deployment, not both"
AGENT_WORKLOAD = "Specify exactly one of daemonSet, deployment or statefulSet"
AGENT_CONFIG_IN_FLEET = "remove config, it can't be set in the fleet mode"
AGENT_CONFIG_REF_IN_FLEET = "remove configRef, it can't be set in the fleet mode"
AGENT_FLEET_SERVER_IN_STANDALONE = (
    "remove fleetServerEnabled, it can't be set in the standalone mode"
)
AGENT_FLEET_SERVER_AND_REF = "don't specify fleetServerRef when fleetServerEnabled is set"
AGENT_HTTP_WITHOUT_FLEET_SERVER = (
    "don't specify http configuration, it can't be set when Fleet Server is not enabled"
)
AGENT_REF_IN_STANDALONE = "don't specify {field}, it can't be set in the standalone mode"
AGENT_ES_REFS_WITHOUT_FLEET_SERVER = (
    "don't specify elasticsearchRefs, it can't be set in the fleet mode "
    "when Fleet Server is not enabled"
)
AGENT_ONE_ES_REF_IN_FLEET = "only one elasticsearchRef is supported in the fleet mode"
AGENT_ONE_DEFAULT_OUTPUT = "only one elasticsearchRef can have outputName default"
AGENT_UNNAMED_REFS = "when declaring multiple refs all have to be named"
AGENT_POLICY_ID_WARNING = (
    "spec.PolicyID is empty, spec.PolicyID will become mandatory in a future release"
)
LOGSTASH_CLUSTER_NAME = "clusterName is a mandatory field and missing on this reference"
LOGSTASH_DUPLICATE_CLUSTER_NAME = "clusterName {name!r} is used by more than one reference"


def single_source(spec: Spec, *, first: str, second: str) -> list[FieldError]:
    """Return an error when both ``first`` and ``second`` are set (one source of config only)."""
    if spec.get(first) and spec.get(second):
        return [("spec", f"Specify at most one of [{first}, {second}], not both")]
    return []


def validate_ref(path: str, ref: object) -> list[FieldError]:
    """Return the problems of one reference: ``name`` xor ``secretName``, secretName stands alone."""
    if not ref:
        return []
    if not isinstance(ref, Mapping):
        return [not_a(path, ref, "a map (a reference: name, namespace or secretName)")]
    errors: list[FieldError] = []
    if ref.get("name") and ref.get("secretName"):
        errors.append((path, NAME_AND_SECRET_NAME))
    elif ref.get("secretName") and (ref.get("namespace") or ref.get("serviceName")):
        errors.append((path, SECRET_NAME_WITH_NAMESPACE))
    return errors


def validate_version(kind: str, raw: object) -> list[FieldError]:
    """Return the problems of ``spec.version``: missing, unparseable or out of the kind's range."""
    if not raw:
        return [("spec.version", "version is required")]
    try:
        version = parse_version(str(raw))
    except ValueError as error:
        return [("spec.version", f"Invalid version: {error}")]
    lowest, highest = SUPPORTED_VERSIONS[kind]
    if not version.at_least(lowest.major, lowest.minor, lowest.patch):
        return [
            (
                "spec.version",
                f"unsupported version: version {version} is lower than the lowest "
                f"supported version of {lowest}",
            )
        ]
    if (version.major, version.minor, version.patch) > (
        highest.major,
        highest.minor,
        highest.patch,
    ):
        return [
            (
                "spec.version",
                f"unsupported version: version {version} is higher than the highest "
                f"supported version of {highest}",
            )
        ]
    return []


def _validate_refs(kind: str, spec: Spec) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in SINGLE_REFS.get(kind, ()):
        errors += validate_ref(f"spec.{field}", spec.get(field))
    errors += _validate_ref_list("spec.elasticsearchRefs", spec.get("elasticsearchRefs"))
    monitoring = spec.get("monitoring") or {}
    if not isinstance(monitoring, Mapping):
        return [*errors, not_a("spec.monitoring", monitoring, "a map")]
    for section in ("metrics", "logs"):
        target = monitoring.get(section) or {}
        if not isinstance(target, Mapping):
            errors.append(not_a(f"spec.monitoring.{section}", target, "a map"))
            continue
        errors += _validate_ref_list(
            f"spec.monitoring.{section}.elasticsearchRefs", target.get("elasticsearchRefs")
        )
    return errors


def _validate_ref_list(path: str, refs: object) -> list[FieldError]:
    if not refs:
        return []
    listed = as_list(refs)
    if listed is None:
        return [not_a(path, refs, "a list of references")]
    errors: list[FieldError] = []
    for index, ref in enumerate(listed):
        errors += validate_ref(f"{path}[{index}]", ref)
    return errors


def _ref_maps(refs: object) -> list[Mapping[str, Any]]:
    """The references of a list that are maps: `_validate_ref_list` names every other shape, so
    the kind's own checks read only these."""
    return [ref for ref in as_list(refs) or [] if isinstance(ref, Mapping)]


def _validate_count(spec: Spec) -> list[FieldError]:
    count = spec.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
        return [("spec.count", "count must be a non-negative integer")]
    return []


def _validate_beat(spec: Spec) -> list[FieldError]:
    errors: list[FieldError] = []
    if (spec.get("daemonSet") is None) == (spec.get("deployment") is None):
        errors.append(("spec", BEAT_WORKLOAD))
    beat_type = str(spec.get("type") or "")
    if not beat_type:
        errors.append(("spec.type", "type is required"))
    elif beat_type not in KNOWN_BEAT_TYPES and not spec.get("image"):
        errors.append(
            (
                "spec.image",
                "Image is required if Beat type is not one of ["
                + ", ".join(KNOWN_BEAT_TYPES)
                + "]",
            )
        )
    return errors


def _validate_agent(spec: Spec) -> list[FieldError]:
    errors: list[FieldError] = []
    sections = [
        key for key in ("daemonSet", "deployment", "statefulSet") if spec.get(key) is not None
    ]
    if len(sections) != 1:
        errors.append(("spec", AGENT_WORKLOAD))
    fleet = spec.get("mode") == "fleet"
    fleet_server = bool(spec.get("fleetServerEnabled"))
    refs = _ref_maps(spec.get("elasticsearchRefs"))
    if fleet:
        if spec.get("config"):
            errors.append(("spec.config", AGENT_CONFIG_IN_FLEET))
        if spec.get("configRef"):
            errors.append(("spec.configRef", AGENT_CONFIG_REF_IN_FLEET))
        if refs and not fleet_server:
            errors.append(("spec.elasticsearchRefs", AGENT_ES_REFS_WITHOUT_FLEET_SERVER))
        elif len(refs) > 1:
            errors.append(("spec.elasticsearchRefs", AGENT_ONE_ES_REF_IN_FLEET))
    else:
        if fleet_server:
            errors.append(("spec.fleetServerEnabled", AGENT_FLEET_SERVER_IN_STANDALONE))
        for field in ("kibanaRef", "fleetServerRef"):
            if spec.get(field):
                errors.append((f"spec.{field}", AGENT_REF_IN_STANDALONE.format(field=field)))
    if fleet_server and spec.get("fleetServerRef"):
        errors.append(("spec.fleetServerRef", AGENT_FLEET_SERVER_AND_REF))
    if spec.get("http") and not (fleet and fleet_server):
        errors.append(("spec.http", AGENT_HTTP_WITHOUT_FLEET_SERVER))
    if sum(1 for ref in refs if ref.get("outputName") == "default") > 1:
        errors.append(("spec.elasticsearchRefs", AGENT_ONE_DEFAULT_OUTPUT))
    if len(refs) > 1:
        errors += [
            (f"spec.elasticsearchRefs[{index}].outputName", AGENT_UNNAMED_REFS)
            for index, ref in enumerate(refs)
            if not ref.get("outputName")
        ]
    return errors


def _validate_logstash(spec: Spec) -> list[FieldError]:
    errors = single_source(spec, first="pipelines", second="pipelinesRef")
    seen: set[str] = set()
    for index, ref in enumerate(as_list(spec.get("elasticsearchRefs")) or []):
        if ref is None:
            ref = {}  # an empty entry: it names no cluster either
        elif not isinstance(ref, Mapping):
            continue  # `_validate_ref_list` names it
        path = f"spec.elasticsearchRefs[{index}].clusterName"
        cluster_name = str(ref.get("clusterName") or "")
        if not cluster_name:
            errors.append((path, LOGSTASH_CLUSTER_NAME))
        elif cluster_name in seen:
            errors.append((path, LOGSTASH_DUPLICATE_CLUSTER_NAME.format(name=cluster_name)))
        seen.add(cluster_name)
    return errors


_KIND_CHECKS: Mapping[str, Callable[[Spec], list[FieldError]]] = {
    "Beat": _validate_beat,
    "Agent": _validate_agent,
    "Logstash": _validate_logstash,
}


def _validate_shapes(app: str, spec: Spec) -> list[FieldError]:
    """The free-form parts the workload is built from: the pod template and volume claims, at
    ``spec`` or in the workload section (Beat's and Agent's ``daemonSet``/``deployment``/...)."""
    sections: list[tuple[str, object]] = [("spec", spec)]
    sections += [
        (f"spec.{key}", spec.get(key))
        for key in app_kind(app).workload_sections
        if spec.get(key) is not None
    ]
    errors: list[FieldError] = []
    for path, section in sections:
        if not isinstance(section, Mapping):
            errors.append(not_a(path, section, "a map"))
            continue
        errors += pod_template_problems(section.get("podTemplate"), f"{path}.podTemplate")
        errors += claim_templates_problems(
            section.get("volumeClaimTemplates"), f"{path}.volumeClaimTemplates"
        )
    return errors


def validate_application(kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    """Return the problems of an application object as ``(field, message)``; empty when valid."""
    app = app_kind(kind).kind
    spec: Spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        return [not_a("spec", spec, "a map")]
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        return [not_a("metadata", metadata, "a map")]
    deep = depth_problem(spec, "spec")
    if deep is not None:
        # Nothing else is read: every other check walks the spec.
        return [deep]
    errors: list[FieldError] = _validate_shapes(app, spec)
    if len(view(obj).name) > MAX_RESOURCE_NAME_LENGTH:
        errors.append(("metadata.name", NAME_TOO_LONG))
    errors += validate_version(app, spec.get("version"))
    errors += _validate_count(spec)
    errors += _validate_refs(app, spec)
    errors += single_source(spec, first="config", second="configRef")
    check = _KIND_CHECKS.get(app)
    if check is not None:
        errors += check(spec)
    return errors


def application_warnings(kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    """Return the admission warnings (accepted, but worth telling the user)."""
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        return []  # the rules name the wrong shape
    if app_kind(kind).kind == "Agent" and spec.get("mode") == "fleet" and not spec.get("policyID"):
        return [("spec.policyID", AGENT_POLICY_ID_WARNING)]
    return []
