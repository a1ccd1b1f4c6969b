"""CRD validation, custom-object pruning/defaulting/validation, unknown built-in fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.errors import Cause, invalid
from kubesim.resources import Registry, ResourceType
from kubesim.schema import admit_custom_object, default_crd, unknown_builtin_fields, validate_crd

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
                "tags": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 2,
                    "items": {"type": "string"},
                },
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["port"],
                        "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                        },
                    },
                },
                "target": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "enabled": {"type": "boolean"},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widget_type(schema: dict[str, Any] | None = None) -> ResourceType:
    """The namespaced Widget kind served from a CRD with ``schema``."""
    return ResourceType(
        group="example.com",
        version="v1",
        plural="widgets",
        singular="widget",
        kind="Widget",
        list_kind="WidgetList",
        namespaced=True,
        generation="non_metadata",
        custom=True,
        schema=schema if schema is not None else WIDGET_SCHEMA,
    )


def widget(spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A Widget object with the given spec and extra top-level fields."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": spec,
        **extra,
    }


def crd(**overrides: Any) -> dict[str, Any]:
    """A valid CRD for widgets.example.com; keyword overrides replace spec keys."""
    spec: dict[str, Any] = {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
            }
        ],
    }
    spec.update(overrides)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": spec,
    }


# --- CRD validation ----------------------------------------------------------------------


def test_valid_crd_has_no_causes() -> None:
    assert validate_crd(crd()) == []


def test_default_crd_fills_singular_and_list_kind() -> None:
    defaulted = default_crd(crd())
    assert defaulted["spec"]["names"]["singular"] == "widget"
    assert defaulted["spec"]["names"]["listKind"] == "WidgetList"
    assert "singular" not in crd()["spec"]["names"]


def _version(name: str, *, storage: bool, schema: Any = None) -> dict[str, Any]:
    version: dict[str, Any] = {"name": name, "served": True, "storage": storage}
    if schema is not None:
        version["schema"] = {"openAPIV3Schema": schema}
    return version


OBJECT = {"type": "object"}


@pytest.mark.parametrize(
    ("document", "field", "reason", "message"),
    [
        (
            {**crd(), "metadata": {"name": "gadgets.example.com"}},
            "metadata.name",
            "FieldValueInvalid",
            'Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group',
        ),
        (
            crd(scope="Global"),
            "spec.scope",
            "FieldValueNotSupported",
            'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        ),
        (crd(scope=""), "spec.scope", "FieldValueRequired", "Required value"),
        (
            crd(names={"plural": "widgets"}),
            "spec.names.kind",
            "FieldValueRequired",
            "Required value",
        ),
        (
            crd(names={"kind": "Widget"}),
            "spec.names.plural",
            "FieldValueRequired",
            "Required value",
        ),
        (
            crd(versions=[]),
            "spec.versions",
            "FieldValueRequired",
            "Required value: must have at least one version",
        ),
        (
            crd(versions=[_version("v1", storage=False, schema=OBJECT)]),
            "spec.versions",
            "FieldValueInvalid",
            "must have exactly one version marked as storage version",
        ),
        (
            crd(
                versions=[
                    _version("v1", storage=True, schema=OBJECT),
                    _version("v2", storage=True, schema=OBJECT),
                ]
            ),
            "spec.versions",
            "FieldValueInvalid",
            "must have exactly one version marked as storage version",
        ),
        (
            crd(versions=[_version("v1", storage=True)]),
            "spec.versions[0].schema.openAPIV3Schema",
            "FieldValueRequired",
            "Required value",
        ),
        (
            crd(versions=[_version("v1", storage=True, schema={"properties": {}})]),
            "spec.validation.openAPIV3Schema.type",
            "FieldValueRequired",
            "Required value: must not be empty at the root",
        ),
        (
            crd(versions=[_version("v1", storage=True, schema={"type": "string"})]),
            "spec.validation.openAPIV3Schema.type",
            "FieldValueInvalid",
            'Invalid value: "string": must be object at the root',
        ),
        (
            crd(
                versions=[
                    _version(
                        "v1",
                        storage=True,
                        schema={"type": "object", "properties": {"spec": {"properties": {}}}},
                    )
                ]
            ),
            "spec.validation.openAPIV3Schema.properties[spec].type",
            "FieldValueRequired",
            "Required value: must not be empty for specified object fields",
        ),
        (
            crd(
                versions=[
                    _version(
                        "v1",
                        storage=True,
                        schema={
                            "type": "object",
                            "properties": {"list": {"type": "array", "items": {}}},
                        },
                    )
                ]
            ),
            "spec.validation.openAPIV3Schema.properties[list].items.type",
            "FieldValueRequired",
            "Required value: must not be empty for specified array items",
        ),
        (
            crd(versions=[_version("V1", storage=True, schema=OBJECT)]),
            "spec.versions[0].name",
            "FieldValueInvalid",
            "a DNS-1035 label must consist of lower case alphanumeric characters",
        ),
        (
            crd(group="example"),
            "spec.group",
            "FieldValueInvalid",
            'Invalid value: "example": should be a domain with at least one dot',
        ),
    ],
)
def test_crd_validation_errors(
    document: dict[str, Any], field: str, reason: str, message: str
) -> None:
    # A schema shared by every version is reported under spec.validation, as the real server
    # (it validates its internal type, which hoists a shared schema out of the versions).
    causes = validate_crd(document)
    matching = [c for c in causes if c.field == field]
    assert matching, causes
    assert matching[0].reason == reason
    assert message in matching[0].message


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"metadata": {"name": "x"}, "spec": "garbage"}, "spec.group"),
        (crd(versions=["v1"]), "spec.versions[0]"),
        (
            crd(versions=[{"name": "v1", "storage": True, "schema": "x"}]),
            "spec.versions[0].schema.openAPIV3Schema",
        ),
        (crd(names="widgets"), "spec.names.plural"),
    ],
)
def test_malformed_crd_gives_causes_not_crashes(document: dict[str, Any], field: str) -> None:
    assert field in {c.field for c in validate_crd(document)}


def test_structural_exemptions_are_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": True},
            "blob": {"x-kubernetes-preserve-unknown-fields": True},
        },
    }
    assert validate_crd(crd(versions=[_version("v1", storage=True, schema=schema)])) == []


# --- custom objects: validation ------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "reason", "message"),
    [
        (
            {"size": "string"},
            "spec.size",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.size in body must be of type integer: "string"',
        ),
        ({}, "spec.size", "FieldValueRequired", "Required value"),
        (
            {"size": 1, "mode": "z"},
            "spec.mode",
            "FieldValueNotSupported",
            'Unsupported value: "z": supported values: "a", "b"',
        ),
        (
            {"size": 0},
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: 0: spec.size in body should be greater than or equal to 1",
        ),
        (
            {"size": 11},
            "spec.size",
            "FieldValueInvalid",
            "Invalid value: 11: spec.size in body should be less than or equal to 10",
        ),
        (
            {"size": 1, "ratio": 1},
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 1: spec.ratio in body should be less than 1",
        ),
        (
            {"size": 1, "name": "ab"},
            "spec.name",
            "FieldValueInvalid",
            'Invalid value: "ab": spec.name in body should be at least 3 chars long',
        ),
        (
            {"size": 1, "name": "abcdef"},
            "spec.name",
            "FieldValueTooLong",
            "Too long: may not be more than 5 bytes",
        ),
        (
            {"size": 1, "name": "AB1"},
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"AB1\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            {"size": 1, "tags": []},
            "spec.tags",
            "FieldValueInvalid",
            "Invalid value: 0: spec.tags in body should have at least 1 items",
        ),
        (
            {"size": 1, "tags": ["a", "b", "c"]},
            "spec.tags",
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items",
        ),
        (
            {"size": 1, "tags": ["a", 2]},
            "spec.tags[1]",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"',
        ),
        (
            {"size": 1, "ports": [{"protocol": "UDP"}]},
            "spec.ports[0].port",
            "FieldValueRequired",
            "Required value",
        ),
        (
            {"size": 1, "target": True},
            "spec.target",
            "FieldValueTypeInvalid",
            'Invalid value: "boolean": spec.target in body must be of type integer,string: "boolean"',
        ),
        (
            {"size": 1, "labels": {"a": 1}},
            "spec.labels.a",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
        ),
        (
            {"size": 1, "enabled": "yes"},
            "spec.enabled",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.enabled in body must be of type boolean: "string"',
        ),
        (
            {"size": 1, "tags": [None]},
            "spec.tags[0]",
            "FieldValueTypeInvalid",
            'Invalid value: "null": spec.tags[0] in body must be of type string: "null"',
        ),
    ],
)
def test_custom_object_validation(
    spec: dict[str, Any], field: str, reason: str, message: str
) -> None:
    _, causes, _ = admit_custom_object(widget_type(), widget(spec))
    assert causes == [Cause(reason, message, field)]


@pytest.mark.parametrize(
    "spec",
    [
        {"size": 5},
        {"size": 5.0},
        {"size": 1, "target": 8080},
        {"size": 1, "target": "http"},
        {"size": 1, "note": None},
        {"size": 1, "ratio": 0.5, "mode": "b", "name": "abc", "tags": ["x"], "enabled": False},
        {"size": 1, "labels": {"a": "b"}, "extra": {"anything": {"goes": [1]}}},
    ],
)
def test_valid_custom_objects(spec: dict[str, Any]) -> None:
    _, causes, pruned = admit_custom_object(widget_type(), widget(spec))
    assert (causes, pruned) == ([], [])


def test_invalid_error_message_matches_kube_shape() -> None:
    _, causes, _ = admit_custom_object(widget_type(), widget({"size": "string"}))
    error = invalid(group="example.com", kind="Widget", name="w1", causes=causes)
    assert error.message == (
        'Widget.example.com "w1" is invalid: spec.size: Invalid value: "string": '
        'spec.size in body must be of type integer: "string"'
    )


def test_several_causes_are_all_reported() -> None:
    _, causes, _ = admit_custom_object(widget_type(), widget({"mode": "z", "name": 1}))
    assert {c.field for c in causes} == {"spec.size", "spec.mode", "spec.name"}


# --- custom objects: pruning and defaulting ------------------------------------------------


def test_unknown_fields_are_pruned_and_reported() -> None:
    obj = widget(
        {"size": 1, "foo": 1, "ports": [{"port": 80, "bar": True}], "extra": {"kept": 1}},
        status={"ready": True, "junk": 1},
        other="x",
    )
    obj["metadata"]["bogus"] = "y"
    result, causes, pruned = admit_custom_object(widget_type(), obj)
    assert causes == []
    assert sorted(pruned) == sorted(
        ["spec.foo", "spec.ports[0].bar", "status.junk", "other", "metadata.bogus"]
    )
    assert "foo" not in result["spec"]
    assert result["spec"]["extra"] == {"kept": 1}
    assert result["status"] == {"ready": True}
    assert "other" not in result
    assert result["metadata"] == {"name": "w1", "namespace": "default"}
    assert (result["apiVersion"], result["kind"]) == ("example.com/v1", "Widget")


def test_input_object_is_not_mutated() -> None:
    obj = widget({"size": 1, "foo": 1})
    before = copy.deepcopy(obj)
    admit_custom_object(widget_type(), obj)
    assert obj == before


def test_defaults_apply_where_parent_exists() -> None:
    result, causes, _ = admit_custom_object(
        widget_type(), widget({"size": 1, "ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}]})
    )
    assert causes == []
    assert result["spec"]["mode"] == "a"
    assert [p["protocol"] for p in result["spec"]["ports"]] == ["TCP", "UDP"]
    assert "status" not in result


def test_non_nullable_null_is_dropped_then_defaulted() -> None:
    result, causes, pruned = admit_custom_object(
        widget_type(), widget({"size": 1, "mode": None, "name": None, "note": None})
    )
    assert (causes, pruned) == ([], [])
    assert result["spec"]["mode"] == "a"
    assert "name" not in result["spec"]
    assert result["spec"]["note"] is None


def test_no_schema_preserves_everything() -> None:
    rt = ResourceType(
        group="example.com",
        version="v1",
        plural="things",
        singular="thing",
        kind="Thing",
        list_kind="ThingList",
        namespaced=True,
        custom=True,
    )
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "a": {"b": 1},
    }
    result, causes, pruned = admit_custom_object(rt, obj)
    assert (result, causes, pruned) == (obj, [], [])


def test_root_schema_without_properties_prunes_all_but_type_meta() -> None:
    result, _, pruned = admit_custom_object(widget_type({"type": "object"}), widget({"size": 1}))
    assert pruned == ["spec"]
    assert set(result) == {"apiVersion", "kind", "metadata"}


def test_embedded_resource_keeps_type_meta_and_prunes_its_metadata() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "properties": {
                            "data": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        },
    }
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "zz": 1},
        "data": {"a": "b"},
    }
    result, _, pruned = admit_custom_object(widget_type(schema), widget({"template": template}))
    assert pruned == ["spec.template.metadata.zz"]
    assert result["spec"]["template"]["kind"] == "ConfigMap"


# --- built-ins: unknown fields -------------------------------------------------------------


def _builtin(group: str, plural: str) -> ResourceType:
    rt = Registry.builtin().lookup(group, "v1", plural)
    assert rt is not None
    return rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "unknown"),
    [
        (
            "",
            "configmaps",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c"},
                "data": {},
                "binaryData": {},
                "immutable": True,
            },
            [],
        ),
        ("", "configmaps", {"metadata": {"name": "c"}, "spec": {}}, ["spec"]),
        ("", "secrets", {"metadata": {"name": "s"}, "stringData": {}, "type": "Opaque"}, []),
        ("", "configmaps", {"metadata": {"name": "c", "foo": 1}, "data": {}}, ["metadata.foo"]),
        (
            "apps",
            "deployments",
            {"metadata": {"name": "d"}, "spec": {}, "status": {}, "bogus": 1},
            ["bogus"],
        ),
        (
            "",
            "events",
            {
                "metadata": {"name": "e"},
                "involvedObject": {},
                "reason": "X",
                "reportingComponent": "c",
            },
            [],
        ),
        (
            "events.k8s.io",
            "events",
            {"metadata": {"name": "e"}, "regarding": {}, "note": "n", "involvedObject": {}},
            ["involvedObject"],
        ),
        (
            "coordination.k8s.io",
            "leases",
            {"metadata": {"name": "l"}, "spec": {}, "status": {}},
            ["status"],
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            {"metadata": {"name": "r"}, "rules": [], "aggregationRule": {}},
            [],
        ),
        (
            "",
            "serviceaccounts",
            {"metadata": {"name": "sa"}, "secrets": [], "automountServiceAccountToken": False},
            [],
        ),
    ],
)
def test_unknown_builtin_fields(
    group: str, plural: str, obj: dict[str, Any], unknown: list[str]
) -> None:
    assert unknown_builtin_fields(_builtin(group, plural), obj) == unknown
