"""Schema handling: CRD validation and defaulting, custom-object admission, unknown built-in fields,
and the defaults of the built-in kinds (:func:`default_builtin`).

Causes are shaped like apimachinery's ``field.Error``: ``field`` is the dotted path and ``message`` the
error body (``Required value``, ``Invalid value: "x": detail``…); the server wraps them with
:func:`kubesim.errors.invalid`.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from kubesim.errors import Cause
from kubesim.meta import ResourceTypeLike
from kubesim.resource_type import ResourceType
from kubesim.structural import (
    OBJECT_META_FIELDS,
    apply_defaults,
    go_value,
    prune,
    prune_object_meta,
    validate,
)

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_VERSIONS_VALUE = "[]apiextensions.CustomResourceDefinitionVersion{...}"
_TYPE_META_FIELDS = ("apiVersion", "kind", "metadata")


def default_crd(crd: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``crd`` with ``spec.names.singular`` (lower-case kind) and ``listKind`` filled."""
    out: dict[str, Any] = copy.deepcopy(dict(crd))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    names = spec.get("names")
    if isinstance(names, dict) and names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    return out


def _required(field_path: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return Cause("FieldValueRequired", message, field_path)


def _invalid(field_path: str, value: Any, detail: str, *, rendered: str | None = None) -> Cause:
    shown = rendered if rendered is not None else go_value(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", field_path)


def _structural_causes(schema: Any, path: str, *, where: str) -> list[Cause]:
    """Every node must carry a ``type`` unless int-or-string or preserve-unknown-fields."""
    if not isinstance(schema, Mapping):
        return [_invalid(path, schema, "must be an object")]
    causes: list[Cause] = []
    exempt = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    if not schema.get("type") and not exempt:
        causes.append(_required(f"{path}.type", f"must not be empty {where}"))
    for name, sub in (schema.get("properties") or {}).items():
        causes.extend(
            _structural_causes(
                sub, f"{path}.properties[{name}]", where="for specified object fields"
            )
        )
    items = schema.get("items")
    if items is not None:
        causes.extend(_structural_causes(items, f"{path}.items", where="for specified array items"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        causes.extend(
            _structural_causes(
                additional, f"{path}.additionalProperties", where="for specified object fields"
            )
        )
    return causes


def _root_schema_causes(schema: Any, path: str) -> list[Cause]:
    if schema is None:
        return [_required(path)]
    if isinstance(schema, Mapping) and schema.get("type") not in (None, "object"):
        return [_invalid(f"{path}.type", schema.get("type"), "must be object at the root")]
    return _structural_causes(schema, path, where="at the root")


def _version_schema(version: Any) -> Any:
    if not isinstance(version, Mapping):
        return None
    holder = version.get("schema")
    return holder.get("openAPIV3Schema") if isinstance(holder, Mapping) else None


def _hoisted(versions: list[Any], field: str) -> bool:
    """Whether the internal CRD type moves ``field`` out of the versions: all of them agree.

    The real server validates the internal type, so a shared schema is reported under
    ``spec.validation`` and a shared field is ``null`` in a rendered version.
    """
    values = [v.get(field) if isinstance(v, Mapping) else None for v in versions]
    return all(value == values[0] for value in values)


def _versions_value(versions: list[Any]) -> str:
    """The versions as the internal Go type prints in messages (when its fields are hoisted)."""
    fields = ("schema", "subresources", "additionalPrinterColumns", "selectableFields")
    if not all(_hoisted(versions, f) for f in fields) or not all(
        isinstance(v, Mapping) for v in versions
    ):
        return _VERSIONS_VALUE
    rendered = [
        {
            "Name": str(v.get("name", "")),
            "Served": bool(v.get("served")),
            "Storage": bool(v.get("storage")),
            "Deprecated": bool(v.get("deprecated")),
            "DeprecationWarning": v.get("deprecationWarning"),
            "Schema": None,
            "Subresources": None,
            "AdditionalPrinterColumns": None,
            "SelectableFields": None,
        }
        for v in versions
    ]
    return json.dumps(rendered, separators=(",", ":"))


def _names_causes(names: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("plural", "singular"):
        value = names.get(key)
        if key == "plural" and not value:
            causes.append(_required("spec.names.plural"))
        elif value and not _DNS1035_LABEL.match(str(value)):
            causes.append(_invalid(f"spec.names.{key}", value, _DNS1035_MESSAGE))
    if not names.get("kind"):
        causes.append(_required("spec.names.kind"))
    return causes


def _versions_causes(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [_required("spec.versions", "must have at least one version")]
    causes: list[Cause] = []
    seen: set[str] = set()
    storage_count = 0
    shared_schema = _hoisted(versions, "schema") and _version_schema(versions[0]) is not None
    for i, version in enumerate(versions):
        base = f"spec.versions[{i}]"
        if not isinstance(version, Mapping):
            causes.append(_invalid(base, version, "must be an object"))
            continue
        name = str(version.get("name", ""))
        if not name:
            causes.append(_required(f"{base}.name"))
        elif not _DNS1035_LABEL.match(name):
            causes.append(_invalid(f"{base}.name", name, _DNS1035_MESSAGE))
        if name in seen:
            causes.append(
                _invalid(
                    "spec.versions",
                    None,
                    "must contain unique version names",
                    rendered=_versions_value(versions),
                )
            )
        seen.add(name)
        storage_count += 1 if version.get("storage") else 0
        if not shared_schema:
            causes.extend(
                _root_schema_causes(_version_schema(version), f"{base}.schema.openAPIV3Schema")
            )
    if shared_schema:
        causes.extend(
            _root_schema_causes(_version_schema(versions[0]), "spec.validation.openAPIV3Schema")
        )
    if storage_count != 1:
        causes.append(
            _invalid(
                "spec.versions",
                None,
                "must have exactly one version marked as storage version",
                rendered=_versions_value(versions),
            )
        )
    if storage_count == 0:
        # status.storedVersions starts as the storage version: with none, it is empty.
        causes.append(
            _invalid(
                "status.storedVersions",
                None,
                "must have at least one stored version",
                rendered="null",
            )
        )
    return causes


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """The validation errors of a CustomResourceDefinition (empty when valid); names are defaulted first."""
    defaulted = default_crd(crd)
    spec = defaulted.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    names = spec.get("names")
    names = names if isinstance(names, Mapping) else {}
    group = str(spec.get("group") or "")
    causes: list[Cause] = []
    name = str((defaulted.get("metadata") or {}).get("name", ""))
    if name != f"{names.get('plural', '')}.{group}":
        causes.append(_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(_required("spec.group"))
    elif "." not in group:
        causes.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        causes.append(_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        message = f'Unsupported value: {go_value(scope)}: supported values: "Cluster", "Namespaced"'
        causes.append(Cause("FieldValueNotSupported", message, "spec.scope"))
    causes.extend(_names_causes(names))
    causes.extend(_versions_causes(spec.get("versions")))
    return causes


def admit_custom_object(
    rt: ResourceTypeLike, obj: Mapping[str, Any]
) -> tuple[dict[str, Any], list[Cause], list[str]]:
    """Prune, default and validate a custom object against its version's structural schema.

    Returns the pruned and defaulted copy, the validation causes, and the paths of pruned unknown
    fields (``spec.foo``, ``metadata.bar``) for ``fieldValidation`` reporting.
    """
    schema: Mapping[str, Any] = rt.schema or {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    pruned: list[str] = []
    # apiVersion/kind/metadata are always allowed at the top level and never schema-validated.
    body = {k: copy.deepcopy(v) for k, v in obj.items() if k not in _TYPE_META_FIELDS}
    body = prune(body, schema, "", pruned)
    apply_defaults(body, schema)
    result: dict[str, Any] = {}
    for key in obj:
        if key in ("apiVersion", "kind"):
            result[key] = obj[key]
        elif key == "metadata":
            result[key] = prune_object_meta(copy.deepcopy(obj[key]), "metadata", pruned)
    result.update(body)
    validation_schema = dict(schema)
    validation_schema["properties"] = {
        k: v for k, v in (schema.get("properties") or {}).items() if k not in _TYPE_META_FIELDS
    }
    validation_schema["required"] = [
        r for r in schema.get("required") or () if r not in _TYPE_META_FIELDS
    ]
    causes = validate(body, validation_schema, "")
    # The real server reports unknown ObjectMeta fields first (decoding), then the pruned paths
    # sorted.
    meta_paths = [path for path in pruned if path.startswith("metadata.")]
    return result, causes, meta_paths + sorted(p for p in pruned if p not in meta_paths)


_SPEC_STATUS = frozenset({"spec", "status"})
_EVENT_V1_FIELDS = frozenset(
    {
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "series",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    }
)
_EVENTS_K8S_IO_FIELDS = frozenset(
    {
        "eventTime",
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "regarding",
        "related",
        "note",
        "type",
        "deprecatedSource",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedCount",
    }
)
# Top-level fields (besides apiVersion/kind/metadata) of the built-in kinds, keyed by (group, kind).
BUILTIN_TOP_LEVEL_FIELDS: dict[tuple[str, str], frozenset[str]] = {
    ("", "ConfigMap"): frozenset({"data", "binaryData", "immutable"}),
    ("", "Secret"): frozenset({"data", "stringData", "type", "immutable"}),
    ("", "Endpoints"): frozenset({"subsets"}),
    ("", "ServiceAccount"): frozenset(
        {"secrets", "imagePullSecrets", "automountServiceAccountToken"}
    ),
    ("", "Event"): _EVENT_V1_FIELDS,
    ("events.k8s.io", "Event"): _EVENTS_K8S_IO_FIELDS,
    ("coordination.k8s.io", "Lease"): frozenset({"spec"}),
    ("discovery.k8s.io", "EndpointSlice"): frozenset({"addressType", "endpoints", "ports"}),
    ("rbac.authorization.k8s.io", "Role"): frozenset({"rules"}),
    ("rbac.authorization.k8s.io", "ClusterRole"): frozenset({"rules", "aggregationRule"}),
    ("rbac.authorization.k8s.io", "RoleBinding"): frozenset({"subjects", "roleRef"}),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): frozenset({"subjects", "roleRef"}),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): frozenset({"webhooks"}),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): frozenset({"webhooks"}),
}


def known_top_level_fields(rt: ResourceType) -> frozenset[str]:
    """Top-level fields a built-in kind accepts; ``spec``/``status`` kinds are the default."""
    specific = BUILTIN_TOP_LEVEL_FIELDS.get((rt.group, rt.kind), _SPEC_STATUS)
    return specific | frozenset(_TYPE_META_FIELDS)


def unknown_builtin_fields(rt: ResourceType, obj: Mapping[str, Any]) -> list[str]:
    """Paths of unknown top-level and ObjectMeta fields of a built-in object (``["spec.foo"]``-style)."""
    known = known_top_level_fields(rt)
    unknown = [key for key in obj if key not in known]
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        unknown.extend(f"metadata.{key}" for key in meta if key not in OBJECT_META_FIELDS)
    return unknown


# ---------------------------------------------------------------------------------------------
# Defaults of the built-in kinds, as the real API server fills them in
#
# Two sources, as on the real server: the defaulting functions of the API types (applied to every
# object decoded for a create or an update) and, on create only, the admission plugins that
# mutate Pods and claims (ServiceAccount, DefaultTolerationSeconds, Priority,
# StorageObjectInUseProtection). ``creating`` also gives a new object the initial status its
# kind's strategy sets.

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_TOKEN_VOLUME_PREFIX = "kube-api-access-"
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_DEFAULT_MODE = 420  # 0644
_NOT_READY_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
)


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def _dict_at(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        value = {}
        obj[key] = value
    return value


def _image_pull_policy(image: str) -> str:
    # A digest pins the image; otherwise only an explicit tag other than latest avoids pulling.
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    http = probe.get("httpGet")
    if isinstance(http, dict):
        _set(http, "path", "/")
        _set(http, "scheme", "HTTP")
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        _set(probe, key, value)


def _default_container(container: dict[str, Any]) -> None:
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    _set(container, "imagePullPolicy", _image_pull_policy(str(container.get("image") or "")))
    _set(container, "resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            _set(port, "protocol", "TCP")
    for env in container.get("env") or []:
        source = env.get("valueFrom") if isinstance(env, dict) else None
        field_ref = source.get("fieldRef") if isinstance(source, dict) else None
        if isinstance(field_ref, dict):
            _set(field_ref, "apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def _default_volume(volume: dict[str, Any]) -> None:
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            _set(volume[source], "defaultMode", _DEFAULT_MODE)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        _set(host_path, "type", "")


def default_pod_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_PodSpec`` and the container defaults (also for workload templates)."""
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "securityContext", {})
    _set(spec, "schedulerName", "default-scheduler")
    for list_name in _CONTAINER_LISTS:
        for container in spec.get(list_name) or []:
            if isinstance(container, dict):
                _default_container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume(volume)


def _template_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    template = (obj.get("spec") or {}).get("template")
    if not isinstance(template, dict):
        return None
    spec = template.get("spec")
    return spec if isinstance(spec, dict) else None


def _random_suffix(length: int = 5) -> str:
    return "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(length))


def _admit_pod(spec: dict[str, Any]) -> None:
    """What the ServiceAccount, DefaultTolerationSeconds and Priority plugins add to a new Pod."""
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = account
    spec["serviceAccount"] = account
    if spec.get("automountServiceAccountToken") is not False:
        containers = [
            c for name in _CONTAINER_LISTS[:2] for c in spec.get(name) or [] if isinstance(c, dict)
        ]
        mounted = any(
            isinstance(m, dict) and m.get("mountPath") == _TOKEN_MOUNT_PATH
            for c in containers
            for m in c.get("volumeMounts") or []
        )
        if not mounted:
            volume = f"{_TOKEN_VOLUME_PREFIX}{_random_suffix()}"
            spec.setdefault("volumes", []).append(
                {
                    "name": volume,
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                        "defaultMode": _DEFAULT_MODE,
                    },
                }
            )
            for container in containers:
                container.setdefault("volumeMounts", []).append(
                    {"name": volume, "readOnly": True, "mountPath": _TOKEN_MOUNT_PATH}
                )
    tolerations = spec.setdefault("tolerations", [])
    for key, effect in _NOT_READY_TOLERATIONS:
        if not any(
            isinstance(t, dict) and t.get("key") == key and t.get("effect") in (effect, None, "")
            for t in tolerations
        ):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": effect, "tolerationSeconds": 300}
            )
    _set(spec, "priority", 0)
    _set(spec, "preemptionPolicy", "PreemptLowerPriority")


def pod_qos_class(spec: Mapping[str, Any]) -> str:
    """The QoS class of a Pod: BestEffort (no requests or limits), Guaranteed (limits equal to
    requests for cpu and memory in every container), else Burstable."""
    containers = [
        c
        for name in ("initContainers", "containers")
        for c in spec.get(name) or []
        if isinstance(c, Mapping)
    ]
    requests_seen = limits_seen = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = {
            k: v for k, v in (resources.get("requests") or {}).items() if k in ("cpu", "memory")
        }
        limits = {
            k: v for k, v in (resources.get("limits") or {}).items() if k in ("cpu", "memory")
        }
        requests_seen = requests_seen or bool(requests)
        limits_seen = limits_seen or bool(limits)
        if set(limits) != {"cpu", "memory"} or any(
            requests.get(k, limits[k]) != limits[k] for k in limits
        ):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed and containers else "Burstable"


def _default_pod(obj: dict[str, Any], *, creating: bool) -> None:
    spec = _dict_at(obj, "spec")
    default_pod_spec(spec)
    _set(spec, "enableServiceLinks", True)
    for container in spec.get("containers") or []:
        # A container with limits but no requests requests its limits.
        resources = container.get("resources") if isinstance(container, dict) else None
        if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
            requests = resources.setdefault("requests", {})
            for name, quantity in resources["limits"].items():
                requests.setdefault(name, quantity)
    if creating:
        _admit_pod(spec)
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(spec)}


def _default_workload(obj: dict[str, Any], kind: str, *, creating: bool) -> None:
    spec = _dict_at(obj, "spec")
    template_spec = _template_spec(obj)
    if template_spec is not None:
        default_pod_spec(template_spec)
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        _set(spec, "replicas", 1)
    if kind == "Deployment":
        strategy = _dict_at(spec, "strategy")
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _dict_at(strategy, "rollingUpdate")
            _set(rolling, "maxUnavailable", "25%")
            _set(rolling, "maxSurge", "25%")
        _set(spec, "revisionHistoryLimit", 10)
        _set(spec, "progressDeadlineSeconds", 600)
    elif kind == "StatefulSet":
        _set(spec, "podManagementPolicy", "OrderedReady")
        strategy = _dict_at(spec, "updateStrategy")
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _dict_at(strategy, "rollingUpdate")
            _set(rolling, "partition", 0)
            _set(rolling, "maxUnavailable", 1)
        _set(spec, "revisionHistoryLimit", 10)
        retention = _dict_at(spec, "persistentVolumeClaimRetentionPolicy")
        _set(retention, "whenDeleted", "Retain")
        _set(retention, "whenScaled", "Retain")
        for claim in spec.get("volumeClaimTemplates") or []:
            if isinstance(claim, dict):
                _set(claim, "apiVersion", "v1")
                _set(claim, "kind", "PersistentVolumeClaim")
                _set(_dict_at(claim, "spec"), "volumeMode", "Filesystem")
                _set(claim, "status", {"phase": "Pending"})
    elif kind == "DaemonSet":
        strategy = _dict_at(spec, "updateStrategy")
        _set(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _dict_at(strategy, "rollingUpdate")
            _set(rolling, "maxUnavailable", 1)
            _set(rolling, "maxSurge", 0)
        _set(spec, "revisionHistoryLimit", 10)
    if creating:
        obj["status"] = {
            "Deployment": {},
            "StatefulSet": {"replicas": 0, "availableReplicas": 0},
            "ReplicaSet": {"replicas": 0},
            "DaemonSet": {
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
            },
        }[kind]


def _default_service(obj: dict[str, Any], *, creating: bool) -> None:
    spec = _dict_at(obj, "spec")
    _set(spec, "type", "ClusterIP")
    _set(spec, "sessionAffinity", "None")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            _set(port, "protocol", "TCP")
            _set(port, "targetPort", port.get("port"))
    if spec["type"] != "ExternalName":
        _set(spec, "internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        _set(spec, "allocateLoadBalancerNodePorts", True)
    if creating:
        obj["status"] = {"loadBalancer": {}}


def _default_webhooks(obj: dict[str, Any], *, mutating: bool) -> None:
    for webhook in obj.get("webhooks") or []:
        if not isinstance(webhook, dict):
            continue
        for rule in webhook.get("rules") or []:
            if isinstance(rule, dict):
                _set(rule, "scope", "*")
        _set(webhook, "failurePolicy", "Fail")
        _set(webhook, "matchPolicy", "Equivalent")
        _set(webhook, "namespaceSelector", {})
        _set(webhook, "objectSelector", {})
        _set(webhook, "timeoutSeconds", 10)
        if mutating:
            _set(webhook, "reinvocationPolicy", "Never")


def _default_secret(obj: dict[str, Any]) -> None:
    _set(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = _dict_at(obj, "data")
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


#: The time fields of each kind's status conditions: metav1.Time structs, which Go writes as
#: null when unset (omitempty does not omit a struct).
_CONDITION_TIMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("lastUpdateTime", "lastTransitionTime"),
    ("apps", "ReplicaSet"): ("lastTransitionTime",),
    ("apps", "StatefulSet"): ("lastTransitionTime",),
    ("apps", "DaemonSet"): ("lastTransitionTime",),
    ("", "Pod"): ("lastProbeTime", "lastTransitionTime"),
    ("", "PersistentVolumeClaim"): ("lastProbeTime", "lastTransitionTime"),
    ("", "Namespace"): ("lastTransitionTime",),
    ("", "Node"): ("lastHeartbeatTime", "lastTransitionTime"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): ("lastTransitionTime",),
}


def _condition_times(obj: dict[str, Any], fields: tuple[str, ...]) -> None:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict):
            for name in fields:
                condition.setdefault(name, None)


def default_builtin(rt: ResourceTypeLike, obj: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    """Fill in the defaults the real API server gives a built-in object (in place; returned).

    ``creating`` adds what only a create does: the admission plugins' Pod and claim changes and
    the initial status of the kind.
    """
    kind = (rt.group, rt.kind)
    if kind == ("", "Pod"):
        _default_pod(obj, creating=creating)
    elif kind in (
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "ReplicaSet"),
        ("apps", "DaemonSet"),
    ):
        _default_workload(obj, rt.kind, creating=creating)
    elif kind == ("", "Service"):
        _default_service(obj, creating=creating)
    elif kind == ("", "Secret"):
        _default_secret(obj)
    elif kind == ("", "PersistentVolumeClaim"):
        _set(_dict_at(obj, "spec"), "volumeMode", "Filesystem")
        if creating:
            finalizers = obj.setdefault("metadata", {}).setdefault("finalizers", [])
            if "kubernetes.io/pvc-protection" not in finalizers:
                finalizers.append("kubernetes.io/pvc-protection")
            obj["status"] = {"phase": "Pending"}
    elif kind == ("", "Endpoints"):
        for subset in obj.get("subsets") or []:
            for port in (subset.get("ports") or []) if isinstance(subset, dict) else []:
                if isinstance(port, dict):
                    _set(port, "protocol", "TCP")
    elif kind == ("discovery.k8s.io", "EndpointSlice"):
        # Lists without omitempty: an empty one is stored as none and read back as null.
        for key in ("endpoints", "ports"):
            if not obj.get(key):
                obj[key] = None
        # SetDefaults_EndpointPort.
        for port in obj.get("ports") or []:
            if isinstance(port, dict):
                _set(port, "name", "")
                _set(port, "protocol", "TCP")
    elif kind == ("", "Event"):
        # Fields without omitempty: the Go types always write them.
        _set(obj, "source", {})
        for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
            obj.setdefault(key, None)
        for key in ("reportingComponent", "reportingInstance"):
            _set(obj, key, "")
    elif kind == ("events.k8s.io", "Event"):
        _set(obj, "deprecatedSource", {})
        for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp"):
            obj.setdefault(key, None)
    elif kind == ("policy", "PodDisruptionBudget"):
        if creating:
            obj["status"] = {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
            }
    elif rt.group == "admissionregistration.k8s.io":
        _default_webhooks(obj, mutating=rt.kind == "MutatingWebhookConfiguration")
    elif kind == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        _set(_dict_at(obj, "spec"), "conversion", {"strategy": "None"})
    if kind in _CONDITION_TIMES:
        _condition_times(obj, _CONDITION_TIMES[kind])
    return obj


def _go_type(value: Any) -> str:
    """Go's ``%T`` of a decoded JSON value (unstructured content)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return "<nil>"


def _go_print(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value (scalars only are rendered faithfully)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(_go_print(item) for item in value) + "]"
    return str(value)


def scale_replicas_causes(obj: Mapping[str, Any], spec_replicas_path: str) -> list[Cause]:
    """The custom resource strategy's check of ``specReplicasPath`` (scale subresource): the
    value must be an integer ≥ 0 reachable through objects (unstructured.NestedInt64)."""
    fields = spec_replicas_path.strip().removeprefix(".").split(".")
    current: Any = obj
    for index, name in enumerate(fields):
        if current is None:
            return []
        if not isinstance(current, Mapping):
            reached = "." + ".".join(fields[: index + 1])
            detail = (
                f"{reached} accessor error: {_go_print(current)} is of the type "
                f"{_go_type(current)}, expected map[string]interface{{}}"
            )
            return [_invalid(spec_replicas_path, 0, detail, rendered="0")]
        if name not in current:
            return []
        current = current[name]
    if isinstance(current, bool) or not isinstance(current, int):
        if current is None:
            return []
        detail = (
            f".{'.'.join(fields)} accessor error: {_go_print(current)} is of the type "
            f"{_go_type(current)}, expected int64"
        )
        return [_invalid(spec_replicas_path, 0, detail, rendered="0")]
    if current < 0:
        return [_invalid(spec_replicas_path, current, "should be a non-negative integer")]
    return []
