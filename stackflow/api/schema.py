"""Structural OpenAPI v3 schemas (as a CRD's ``openAPIV3Schema``) derived from the API models.

The rules follow controller-gen's output for ECK's types, made tolerant on purpose:

* every node has a ``type``, or ``x-kubernetes-int-or-string``, or ``x-kubernetes-preserve-unknown-fields``
  (a structural schema, as apiextensions.k8s.io/v1 requires);
* free-form parts (``dict[str, Any]``: podTemplate, config, …) are objects that preserve unknown fields;
* every object built from a model preserves unknown fields too — the models accept fields they do not
  declare, and so must the API server, or it would prune ECK fields Stackflow does not model;
* no ``default``: the API server must not add fields the manifest did not have.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

JSONSchema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"


def _strip_optional(annotation: Any) -> Any:
    """``X | None`` → ``X``; other unions are returned unchanged."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
        return Union[tuple(args)]  # noqa: UP007 - rebuilding a union from a runtime tuple
    return annotation


def _literal_schema(values: tuple[Any, ...]) -> JSONSchema:
    if all(isinstance(value, str) for value in values):
        return {"type": "string", "enum": list(values)}
    if all(isinstance(value, bool) for value in values):
        return {"type": "boolean"}
    if all(isinstance(value, int) for value in values):
        return {"type": "integer", "enum": list(values)}
    return {PRESERVE: True}


def _union_schema(args: tuple[Any, ...]) -> JSONSchema:
    if set(args) == {int, str}:
        return {"anyOf": [{"type": "integer"}, {"type": "string"}], INT_OR_STRING: True}
    # Any other union is accepted as-is: the model validates it, the API server keeps it.
    return {PRESERVE: True}


def type_schema(annotation: Any) -> JSONSchema:
    """The structural schema of one type annotation."""
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Any:
        return {PRESERVE: True}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_schema(annotation)
    if origin is Literal:
        return _literal_schema(args)
    if origin in (Union, types.UnionType):
        return _union_schema(args)
    if origin is list:
        return {"type": "array", "items": type_schema(args[0] if args else Any)}
    if origin is dict:
        value_type = args[1] if len(args) == 2 else Any
        if value_type is Any:
            return {"type": "object", PRESERVE: True}
        return {"type": "object", "additionalProperties": type_schema(value_type)}
    scalar = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(annotation)
    if scalar is not None:
        return {"type": scalar}
    raise TypeError(f"no CRD schema for type annotation {annotation!r}")


def _constraints(field: FieldInfo, schema: JSONSchema) -> JSONSchema:
    """Carry pydantic's length, bound and pattern constraints (annotated-types metadata) into the schema."""
    kind = str(schema.get("type"))
    for item in field.metadata:
        # Duck-typed so this layer imports nothing beyond pydantic itself.
        if getattr(item, "min_length", None) is not None:
            key = {"array": "minItems", "object": "minProperties"}.get(kind, "minLength")
            schema[key] = item.min_length
        if getattr(item, "max_length", None) is not None:
            key = {"array": "maxItems", "object": "maxProperties"}.get(kind, "maxLength")
            schema[key] = item.max_length
        if getattr(item, "ge", None) is not None:
            schema["minimum"] = item.ge
        if getattr(item, "le", None) is not None:
            schema["maximum"] = item.le
        if getattr(item, "pattern", None):
            schema["pattern"] = item.pattern
    return schema


def _description(text: str | None) -> str | None:
    if not text:
        return None
    return " ".join(text.split())


def field_schema(field: FieldInfo) -> JSONSchema:
    """The schema of one model field, with its constraints and description."""
    schema = _constraints(field, type_schema(field.annotation))
    description = _description(field.description)
    if description:
        schema = {"description": description, **schema}
    return schema


def model_schema(model: type[BaseModel]) -> JSONSchema:
    """The schema of a model: typed known properties, required fields, unknown fields preserved."""
    properties: JSONSchema = {}
    required: list[str] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        properties[key] = field_schema(field)
        if field.is_required():
            required.append(key)
    schema: JSONSchema = {}
    description = _description(model.__doc__)
    if description:
        schema["description"] = description
    schema["type"] = "object"
    schema["properties"] = dict(sorted(properties.items()))
    if required:
        schema["required"] = sorted(required)
    schema[PRESERVE] = True
    return schema


def structural_problems(schema: Any, path: str = "") -> list[str]:
    """Paths of nodes that break the structural rule (no type and no int-or-string/preserve marker)."""
    if not isinstance(schema, dict):
        return [path or "<root>"]
    problems: list[str] = []
    if not schema.get("type") and not schema.get(INT_OR_STRING) and not schema.get(PRESERVE):
        problems.append(path or "<root>")
    for name, sub in (schema.get("properties") or {}).items():
        problems.extend(structural_problems(sub, f"{path}.properties[{name}]"))
    if "items" in schema:
        problems.extend(structural_problems(schema["items"], f"{path}.items"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        problems.extend(structural_problems(additional, f"{path}.additionalProperties"))
    return problems
