"""Schema handling: CRD validation and defaulting, custom-object admission, unknown built-in fields.

Causes are shaped like apimachinery's ``field.Error``: ``field`` is the dotted path and ``message`` the
error body (``Required value``, ``Invalid value: "x": detail``…); the server wraps them with
:func:`kubesim.errors.invalid`.
"""

from __future__ import annotations

import copy
import re
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
        return [_required(path, "schemas are required")]
    if isinstance(schema, Mapping) and schema.get("type") not in (None, "object"):
        return [_invalid(f"{path}.type", schema.get("type"), "must be object at the root")]
    return _structural_causes(schema, path, where="at the root")


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
                    rendered=_VERSIONS_VALUE,
                )
            )
        seen.add(name)
        storage_count += 1 if version.get("storage") else 0
        version_schema = version.get("schema")
        schema = (
            version_schema.get("openAPIV3Schema") if isinstance(version_schema, Mapping) else None
        )
        causes.extend(_root_schema_causes(schema, f"{base}.schema.openAPIV3Schema"))
    if storage_count != 1:
        causes.append(
            _invalid(
                "spec.versions",
                None,
                "must have exactly one version marked as storage version",
                rendered=_VERSIONS_VALUE,
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
    return result, causes, pruned


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
