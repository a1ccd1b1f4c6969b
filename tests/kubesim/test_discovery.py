"""Discovery documents, the OpenAPI v3 stub and Table rendering, as clients read them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubesim import discovery
from kubesim.discovery import (
    aggregated_discovery,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
    openapi_v3_document,
    openapi_v3_index,
    to_table,
    version_info,
)
from kubesim.printers import human_duration
from kubesim.resources import Registry, ResourceType
from kubesim.tables import json_path_value

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]


def registry_with_widgets(*, printer_columns: list[dict[str, Any]] | None = None) -> Registry:
    """Built-ins plus an established widgets.example.com CRD serving v1 and v1beta1."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    version_v1: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": schema,
        "subresources": {"status": {}},
    }
    if printer_columns is not None:
        version_v1["additionalPrinterColumns"] = printer_columns
    reg = Registry.builtin()
    reg.add_crd(
        {
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                    version_v1,
                ],
            },
            "status": {"conditions": [{"type": "Established", "status": "True"}]},
        }
    )
    return reg


def test_version_info() -> None:
    info = version_info()
    assert (info["major"], info["minor"]) == ("1", "37")
    assert info["gitVersion"].startswith("v1.37.")
    assert {"gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"} <= set(
        info
    )


def test_api_versions() -> None:
    assert api_versions("127.0.0.1:1234") == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:1234"}
        ],
    }


def test_api_group_list_has_groups_with_preferred_version() -> None:
    body = api_group_list(registry_with_widgets())
    assert (body["kind"], body["apiVersion"]) == ("APIGroupList", "v1")
    by_name = {g["name"]: g for g in body["groups"]}
    assert "" not in by_name
    assert by_name["apps"]["versions"] == [{"groupVersion": "apps/v1", "version": "v1"}]
    widgets = by_name["example.com"]
    assert [v["version"] for v in widgets["versions"]] == ["v1", "v1beta1"]
    assert widgets["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}


@pytest.mark.parametrize(
    ("group", "found"), [("apps", True), ("example.com", True), ("nope", False), ("", False)]
)
def test_api_group(group: str, found: bool) -> None:
    body = api_group(registry_with_widgets(), group)
    assert (body is not None) is found
    if body is not None:
        assert (body["kind"], body["name"]) == ("APIGroup", group)


def test_apps_resource_list() -> None:
    body = api_resource_list(Registry.builtin(), "apps", "v1")
    assert body is not None
    assert (body["kind"], body["apiVersion"], body["groupVersion"]) == (
        "APIResourceList",
        "v1",
        "apps/v1",
    )
    by_name = {r["name"]: r for r in body["resources"]}
    deployments = by_name["deployments"]
    assert deployments["singularName"] == "deployment"
    assert deployments["namespaced"] is True
    assert deployments["kind"] == "Deployment"
    assert deployments["verbs"] == ALL_VERBS
    assert deployments["shortNames"] == ["deploy"]
    assert deployments["categories"] == ["all"]
    status = by_name["deployments/status"]
    assert (status["singularName"], status["kind"], status["verbs"]) == (
        "",
        "Deployment",
        SUB_VERBS,
    )
    scale = by_name["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert (scale["singularName"], scale["verbs"]) == ("", SUB_VERBS)
    assert "daemonsets/scale" not in by_name


def test_core_resource_list() -> None:
    body = api_resource_list(Registry.builtin(), "", "v1")
    assert body is not None
    assert body["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in body["resources"]}
    assert "deletecollection" not in by_name["namespaces"]["verbs"]
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["namespaces/status"]["kind"] == "Namespace"
    assert by_name["namespaces/finalize"]["verbs"] == ["update"]
    assert "shortNames" not in by_name["secrets"]
    assert "configmaps/status" not in by_name


@pytest.mark.parametrize(("group", "version"), [("apps", "v2"), ("nope", "v1"), ("", "v2")])
def test_unknown_resource_list(group: str, version: str) -> None:
    assert api_resource_list(Registry.builtin(), group, version) is None


def test_crd_resource_list() -> None:
    body = api_resource_list(registry_with_widgets(), "example.com", "v1")
    assert body is not None
    names = [r["name"] for r in body["resources"]]
    assert names == ["widgets", "widgets/status"]
    assert body["resources"][0]["shortNames"] == ["wd"]


def test_aggregated_discovery_groups() -> None:
    body = aggregated_discovery(registry_with_widgets(), core=False)
    assert (body["kind"], body["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    names = [item["metadata"]["name"] for item in body["items"]]
    assert names[0] == "apps"
    assert names[-1] == "example.com"
    widgets = body["items"][-1]
    assert [v["version"] for v in widgets["versions"]] == ["v1", "v1beta1"]
    apps = body["items"][0]["versions"][0]
    assert apps["freshness"] == "Current"
    deployments = next(r for r in apps["resources"] if r["resource"] == "deployments")
    # As the real server: a built-in's responseKind leaves out the group version it is listed
    # under, and subresources come sorted by name.
    assert deployments == {
        "resource": "deployments",
        "responseKind": {"group": "", "version": "", "kind": "Deployment"},
        "scope": "Namespaced",
        "singularResource": "deployment",
        "verbs": ALL_VERBS,
        "shortNames": ["deploy"],
        "categories": ["all"],
        "subresources": [
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": SUB_VERBS,
            },
            {
                "subresource": "status",
                "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                "verbs": SUB_VERBS,
            },
        ],
    }
    widget_resources = widgets["versions"][0]["resources"]
    assert widget_resources[0]["responseKind"] == {
        "group": "example.com",
        "version": "v1",
        "kind": "Widget",
    }


def test_aggregated_discovery_core() -> None:
    body = aggregated_discovery(Registry.builtin(), core=True)
    assert len(body["items"]) == 1
    core = body["items"][0]
    assert core["metadata"].get("name", "") == ""
    resources = {r["resource"]: r for r in core["versions"][0]["resources"]}
    assert resources["nodes"]["scope"] == "Cluster"
    assert resources["configmaps"]["responseKind"] == {
        "group": "",
        "version": "",
        "kind": "ConfigMap",
    }


def test_openapi_index_points_at_every_group_version() -> None:
    reg = registry_with_widgets()
    paths = openapi_v3_index(reg)["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/example.com/v1", "apis/example.com/v1beta1"} <= set(
        paths
    )
    url = paths["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    assert len(url.split("hash=")[1]) > 0


def test_openapi_hash_changes_with_content() -> None:
    before = openapi_v3_index(Registry.builtin())["paths"]
    after = openapi_v3_index(registry_with_widgets())["paths"]
    assert before["api/v1"] == after["api/v1"]
    assert "apis/example.com/v1" not in before


@pytest.mark.parametrize(
    ("doc_path", "object_path", "gvk"),
    [
        (
            "api/v1",
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            {"group": "", "version": "v1", "kind": "ConfigMap"},
        ),
        (
            "api/v1",
            "/api/v1/namespaces/{name}",
            {"group": "", "version": "v1", "kind": "Namespace"},
        ),
        (
            "/apis/apps/v1",
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
            {"group": "apps", "version": "v1", "kind": "Deployment"},
        ),
        (
            "apis/apps/v1",
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
            {"group": "autoscaling", "version": "v1", "kind": "Scale"},
        ),
        (
            "apis/example.com/v1",
            "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
            {"group": "example.com", "version": "v1", "kind": "Widget"},
        ),
    ],
)
def test_openapi_document_patch_operations(
    doc_path: str, object_path: str, gvk: dict[str, str]
) -> None:
    document = openapi_v3_document(registry_with_widgets(), doc_path)
    assert document is not None
    assert document["openapi"].startswith("3.")
    patch = document["paths"][object_path]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == gvk
    assert {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}} in patch[
        "parameters"
    ]
    assert "requestBody" not in patch


def test_openapi_document_skips_create_only_kinds() -> None:
    document = openapi_v3_document(Registry.builtin(), "apis/authorization.k8s.io/v1")
    assert document is not None
    assert document["paths"] == {}


@pytest.mark.parametrize("doc_path", ["api/v2", "apis/nope/v1", "apis/apps", "garbage"])
def test_openapi_unknown_document(doc_path: str) -> None:
    assert openapi_v3_document(Registry.builtin(), doc_path) is None


# --- Table ----------------------------------------------------------------------------------

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _obj(name: str, created: str = "2026-01-01T11:55:00Z", **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        **fields,
    }


def _rt(reg: Registry, group: str, version: str, plural: str) -> ResourceType:
    rt = reg.lookup(group, version, plural)
    assert rt is not None
    return rt


def test_builtin_table() -> None:
    rt = _rt(Registry.builtin(), "", "v1", "configmaps")
    table = to_table(
        rt,
        [_obj("a"), _obj("b")],
        include_object="Metadata",
        list_meta={"resourceVersion": "7"},
        now=NOW,
    )
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert table["metadata"] == {"resourceVersion": "7"}
    # The ConfigMap printer of the real server: Name, Data (the number of keys), Age.
    assert [(c["name"], c["type"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Data", "string", ""),
        ("Age", "string", ""),
    ]
    assert [row["cells"] for row in table["rows"]] == [["a", 0, "5m"], ["b", 0, "5m"]]
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": "a",
            "namespace": "default",
            "creationTimestamp": "2026-01-01T11:55:00Z",
        },
    }


@pytest.mark.parametrize(
    ("include_object", "expected"),
    [("Object", "full"), ("None", "null"), ("Metadata", "partial")],
)
def test_table_include_object(include_object: str, expected: str) -> None:
    rt = _rt(Registry.builtin(), "", "v1", "configmaps")
    obj = _obj("a", data={"k": "v"})
    row = to_table(rt, [obj], include_object=include_object, list_meta={}, now=NOW)["rows"][0]
    shown = {"full": obj, "null": None, "partial": "PartialObjectMetadata"}[expected]
    if expected == "partial":
        assert row["object"]["kind"] == shown
    else:
        # includeObject=None still writes the field, as null (as the real server).
        assert "object" in row
        assert row["object"] == shown


def test_table_without_columns() -> None:
    rt = _rt(Registry.builtin(), "", "v1", "configmaps")
    table = to_table(
        rt, [_obj("a")], include_object="Metadata", list_meta={}, with_columns=False, now=NOW
    )
    assert table["columnDefinitions"] is None  # written as null, as the real server
    assert len(table["rows"]) == 1


def test_custom_resource_table_defaults_to_age() -> None:
    rt = _rt(registry_with_widgets(), "example.com", "v1", "widgets")
    table = to_table(rt, [_obj("w")], include_object="Metadata", list_meta={}, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"] == ["w", "5m"]


def test_custom_resource_printer_columns() -> None:
    columns: list[dict[str, Any]] = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        {"name": "First", "type": "string", "jsonPath": ".spec.items[0].name", "priority": 1},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
        {"name": "Count", "type": "string", "jsonPath": ".spec.size"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startedAt"},
    ]
    rt = _rt(registry_with_widgets(printer_columns=columns), "example.com", "v1", "widgets")
    obj = _obj(
        "w",
        spec={"size": 3, "ratio": 2, "items": [{"name": "first"}, {"name": "second"}]},
        status={"ready": True, "startedAt": "2025-12-30T12:00:00Z"},
    )
    table = to_table(rt, [obj], include_object="Metadata", list_meta={}, now=NOW)
    definitions = table["columnDefinitions"]
    assert [c["name"] for c in definitions] == [
        "Name",
        "Size",
        "Ratio",
        "Ready",
        "First",
        "Missing",
        "Count",
        "Started",
    ]
    assert definitions[4]["priority"] == 1
    assert table["rows"][0]["cells"] == ["w", 3, 2.0, True, "first", None, "3", "2d"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (10 * 3600, "10h"),
        (50 * 3600, "2d2h"),
        (10 * 86400, "10d"),
        (3 * 365 * 86400, "3y"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("path", "found", "value"),
    [
        (".a.b", True, 1),
        ("{.a.b}", True, 1),
        (".l[1].x", True, "y"),
        (".l[5].x", False, None),
        (".a.c", False, None),
        (".a", True, {"b": 1}),
    ],
)
def test_json_path_value(path: str, found: bool, value: Any) -> None:
    doc = {"a": {"b": 1}, "l": [{"x": "w"}, {"x": "y"}]}
    assert json_path_value(doc, path) == (found, value)


def _protobuf_fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of a protobuf message (all this document has)."""
    fields: dict[int, bytes] = {}
    index = 0
    while index < len(data):
        tag = data[index]
        index += 1
        assert tag & 0x07 == 2, "only length-delimited fields are expected"
        length = data[index]
        index += 1
        fields[tag >> 3] = data[index : index + length]
        index += length
    return fields


def test_openapi_v2_protobuf_is_an_empty_gnostic_document() -> None:
    # kubectl reads /openapi/v2 only as protobuf (openapi_v2.Document of gnostic), to validate
    # the items of a `kind: List` client-side; no definitions leaves validation to the server.
    document = _protobuf_fields(discovery.openapi_v2_protobuf())
    assert document[1] == b"2.0"  # swagger
    info = _protobuf_fields(document[2])
    assert info[1] == b"Kubernetes"
    assert info[2] == discovery.GIT_VERSION.encode()
    assert document[8] == b""  # paths: present and empty
    assert discovery.openapi_v2_document()["paths"] == {}
    assert discovery.OPENAPI_V2_PROTOBUF.endswith("+protobuf")
