"""Structural-schema semantics for custom objects: pruning, defaulting, validation.

Follows apiextensions-apiserver: unknown fields are pruned (unless preserved), non-nullable
``null`` fields are dropped so that defaults can apply, ``default`` values are set where the parent
exists, then the object is validated with kube-openapi's rules and messages, converted to field
errors (``field.Error``) the way the API server does.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from kubesim.errors import Cause

Schema = Mapping[str, Any]

#: ObjectMeta's fields a client may send, in the API's JSON order (messages print them so).
OBJECT_META_FIELD_ORDER: tuple[str, ...] = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
)
OBJECT_META_FIELDS: frozenset[str] = frozenset((*OBJECT_META_FIELD_ORDER, "managedFields"))
_EMBEDDED_RESOURCE_FIELDS = ("apiVersion", "kind", "metadata")


def child_path(path: str, key: str) -> str:
    """Dotted path of a property: ``spec`` + ``size`` → ``spec.size``."""
    return f"{path}.{key}" if path else key


def index_path(path: str, index: int) -> str:
    """Path of an array item: ``spec.items`` + 0 → ``spec.items[0]``."""
    return f"{path}[{index}]"


def go_value(value: Any) -> str:
    """Render a bad value as apimachinery's ``field.Error`` does (strings quoted, numbers plain)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def json_type_name(value: Any) -> str:
    """The JSON-schema type name kube-openapi reports for a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _matches_type(value: Any, schema_type: str) -> bool:
    actual = json_type_name(value)
    if schema_type == actual:
        return True
    if schema_type == "number":
        return actual == "integer"
    # A float with an integral value decodes from JSON like 1.0 and counts as an integer.
    return schema_type == "integer" and actual == "number" and float(value).is_integer()


# --- pruning -------------------------------------------------------------------------------


def prune_object_meta(meta: Any, path: str, pruned: list[str]) -> Any:
    """Keep only the standard ObjectMeta fields of ``meta``, recording what was dropped."""
    if not isinstance(meta, dict):
        return meta
    for key in list(meta):
        if key not in OBJECT_META_FIELDS:
            del meta[key]
            pruned.append(child_path(path, key))
    return meta


def prune(value: Any, schema: Schema, path: str, pruned: list[str]) -> Any:
    """Drop fields unknown to ``schema`` (in place where possible), appending their paths."""
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        for key in list(value):
            key_path = child_path(path, key)
            if key in properties:
                value[key] = prune(value[key], properties[key], key_path, pruned)
            elif isinstance(additional, Mapping):
                value[key] = prune(value[key], additional, key_path, pruned)
            elif embedded and key == "metadata":
                value[key] = prune_object_meta(value[key], key_path, pruned)
            elif preserve or additional is True or (embedded and key in _EMBEDDED_RESOURCE_FIELDS):
                continue
            else:
                del value[key]
                pruned.append(key_path)
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [prune(item, items, index_path(path, i), pruned) for i, item in enumerate(value)]
    return value


# --- defaulting ----------------------------------------------------------------------------


def _property_schema(schema: Schema, key: str) -> Schema | None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if key in properties:
        return properties[key]  # type: ignore[no-any-return]
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, Mapping) else None


def apply_defaults(value: Any, schema: Schema) -> None:
    """Set ``default`` values where the parent object exists, dropping non-nullable nulls first."""
    if isinstance(value, dict):
        for key in list(value):
            sub = _property_schema(schema, key)
            # apiextensions prunes nulls of non-nullable fields so that defaulting can fill them.
            if value[key] is None and sub is not None and not sub.get("nullable", False):
                del value[key]
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, child in value.items():
            sub = _property_schema(schema, key)
            if sub is not None:
                apply_defaults(child, sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                apply_defaults(item, items)


# --- validation ----------------------------------------------------------------------------


def _type_invalid(path: str, type_name: str, value: Any) -> Cause:
    actual = json_type_name(value)
    detail = f'{path} in body must be of type {type_name}: "{actual}"'
    return Cause("FieldValueTypeInvalid", f'Invalid value: "{actual}": {detail}', path)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}", path)


def _go_number(number: Any) -> str:
    return go_value(float(number)) if isinstance(number, int | float) else str(number)


def _validate_number(value: Any, schema: Schema, path: str) -> list[Cause]:
    # kube-openapi's number validator reports only the first failing constraint, in this order.
    multiple = schema.get("multipleOf")
    if multiple and (value / multiple) != int(value / multiple):
        detail = f"{path} in body should be a multiple of {_go_number(multiple)}"
        return [_invalid(path, value, detail)]
    maximum = schema.get("maximum")
    if maximum is not None:
        exclusive = bool(schema.get("exclusiveMaximum"))
        if value > maximum or (exclusive and value == maximum):
            relation = "less than" if exclusive else "less than or equal to"
            detail = f"{path} in body should be {relation} {_go_number(maximum)}"
            return [_invalid(path, value, detail)]
    minimum = schema.get("minimum")
    if minimum is not None:
        exclusive = bool(schema.get("exclusiveMinimum"))
        if value < minimum or (exclusive and value == minimum):
            relation = "greater than" if exclusive else "greater than or equal to"
            detail = f"{path} in body should be {relation} {_go_number(minimum)}"
            return [_invalid(path, value, detail)]
    return []


def _validate_string(value: str, schema: Schema, path: str) -> list[Cause]:
    # kube-openapi's string validator stops at the first failure: maxLength, minLength, pattern.
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        unit = "byte" if max_length == 1 else "bytes"
        return [
            Cause("FieldValueTooLong", f"Too long: may not be more than {max_length} {unit}", path)
        ]
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        detail = f"{path} in body should be at least {min_length} chars long"
        return [_invalid(path, value, detail)]
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        return [_invalid(path, value, f"{path} in body should match '{pattern}'")]
    return []


def _validate_array(value: list[Any], schema: Schema, path: str) -> list[Cause]:
    causes: list[Cause] = []
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        noun = "item" if max_items == 1 else "items"
        message = f"Too many: {len(value)}: must have at most {max_items} {noun}"
        causes.append(Cause("FieldValueTooMany", message, path))
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        detail = f"{path} in body should have at least {min_items} items"
        causes.append(_invalid(path, len(value), detail))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            causes.extend(validate(item, items, index_path(path, i)))
    return causes


def _validate_object(value: Mapping[str, Any], schema: Schema, path: str) -> list[Cause]:
    causes = [
        Cause("FieldValueRequired", "Required value", child_path(path, str(name)))
        for name in schema.get("required") or ()
        if name not in value
    ]
    for key, child in value.items():
        sub = _property_schema(schema, key)
        if sub is not None:
            causes.extend(validate(child, sub, child_path(path, key)))
    return causes


def _enum_equal(left: Any, right: Any) -> bool:
    # Python says True == 1; JSON does not.
    return isinstance(left, bool) == isinstance(right, bool) and left == right


def _validate_enum(value: Any, schema: Schema, path: str) -> list[Cause]:
    allowed = schema.get("enum")
    if allowed is None or any(_enum_equal(value, option) for option in allowed):
        return []
    rendered = [
        option if isinstance(option, str) else json.dumps(option, separators=(",", ":"))
        for option in allowed
    ]
    supported = ", ".join(json.dumps(option, ensure_ascii=False) for option in rendered)
    message = f"Unsupported value: {go_value(value)}: supported values: {supported}"
    return [Cause("FieldValueNotSupported", message, path)]


def validate(value: Any, schema: Schema, path: str) -> list[Cause]:
    """Validate ``value`` against a structural schema node; causes carry dotted field paths."""
    nullable = bool(schema.get("nullable")) or (
        "type" not in schema and bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    )
    if value is None and nullable:
        return []
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    if int_or_string and json_type_name(value) not in ("integer", "string"):
        return [_type_invalid(path, "integer,string", value)]
    schema_type = schema.get("type")
    if isinstance(schema_type, str) and not _matches_type(value, schema_type):
        return [_type_invalid(path, schema_type, value)]
    if value is None:
        return []
    causes = _validate_enum(value, schema, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        causes.extend(_validate_number(value, schema, path))
    elif isinstance(value, str):
        causes.extend(_validate_string(value, schema, path))
    elif isinstance(value, list):
        causes.extend(_validate_array(value, schema, path))
    elif isinstance(value, Mapping):
        causes.extend(_validate_object(value, schema, path))
    return causes
