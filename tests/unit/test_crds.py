"""The generated CRDs: structural, ECK's names and columns, committed files fresh, nothing pruned by a server."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from kubesim.schema import validate_crd
from kubesim.testing import KubeSim
from stackflow.api.crds import all_crds, crd_file_name, rendered_files
from stackflow.api.elasticsearch import Elasticsearch
from stackflow.api.kibana import Kibana
from stackflow.api.kinds import KINDS, kind_info
from stackflow.api.schema import INT_OR_STRING, PRESERVE, structural_problems
from stackflow.cli import crds as crds_cli
from tests.conftest import core_api, custom_api
from tests.unit.eck_manifests import ECK_MANIFESTS

REPO = Path(__file__).resolve().parents[2]
COMMITTED_CRDS = REPO / "deploy" / "crds"
EXAMPLES = REPO / "deploy" / "examples"
CRDS_BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in all_crds()}


def _served_schema(kind: str, version: str | None = None) -> dict[str, Any]:
    crd = CRDS_BY_KIND[kind]
    for entry in crd["spec"]["versions"]:
        if entry["served"] and (version is None or entry["name"] == version):
            schema: dict[str, Any] = entry["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"no served version {version} for {kind}")


def _node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The schema node at a dotted path; ``[]`` steps into array items."""
    node = schema
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


@pytest.mark.parametrize("crd", all_crds(), ids=lambda crd: crd["metadata"]["name"])
def test_every_version_schema_is_structural(crd: dict[str, Any]) -> None:
    for entry in crd["spec"]["versions"]:
        assert structural_problems(entry["schema"]["openAPIV3Schema"]) == []
    assert validate_crd(crd) == []


def test_structural_check_catches_a_typeless_node() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"description": "no type"}, "b": {PRESERVE: True}},
    }
    assert structural_problems(schema) == [".properties[a]"]
    assert structural_problems({"properties": {"q": {INT_OR_STRING: True}}}) == ["<root>"]


@pytest.mark.parametrize("info", KINDS, ids=lambda info: info.kind)
def test_names_versions_and_subresources_follow_eck(info: Any) -> None:
    crd = CRDS_BY_KIND[info.kind]
    assert crd["metadata"]["name"] == f"{info.plural}.{info.group}"
    names = crd["spec"]["names"]
    assert names["categories"] == ["elastic"]
    assert names["singular"] == info.kind.lower()
    assert crd["spec"]["scope"] == "Namespaced"
    storage = [v["name"] for v in crd["spec"]["versions"] if v["storage"]]
    assert storage == [info.storage_version]
    for entry in crd["spec"]["versions"]:
        if entry["served"]:
            assert "status" in entry["subresources"]
            assert ("scale" in entry["subresources"]) == (info.scale is not None)


@pytest.mark.parametrize(
    ("kind", "versions", "short_names", "scale"),
    [
        (
            "Elasticsearch",
            {"v1": (True, True), "v1beta1": (True, False), "v1alpha1": (False, False)},
            ["es"],
            None,
        ),
        (
            "Kibana",
            {"v1": (True, True), "v1beta1": (True, False), "v1alpha1": (False, False)},
            ["kb"],
            (".spec.count", ".status.count"),
        ),
        (
            "EnterpriseSearch",
            {"v1": (True, True), "v1beta1": (True, False)},
            ["ent"],
            (".spec.count", ".status.count"),
        ),
        ("Beat", {"v1beta1": (True, True)}, ["beat"], None),
        ("Logstash", {"v1alpha1": (True, True)}, ["ls"], (".spec.count", ".status.expectedNodes")),
        ("StackConfigPolicy", {"v1alpha1": (True, True)}, ["scp"], None),
        ("ElasticsearchAutoscaler", {"v1alpha1": (True, True)}, ["esa"], None),
        ("AutoOpsAgentPolicy", {"v1alpha1": (True, True)}, ["aop"], None),
    ],
)
def test_eck_table_rows(
    kind: str,
    versions: dict[str, tuple[bool, bool]],
    short_names: list[str],
    scale: tuple[str, str] | None,
) -> None:
    crd = CRDS_BY_KIND[kind]
    assert {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]} == versions
    assert crd["spec"]["names"]["shortNames"] == short_names
    subresources = crd["spec"]["versions"][0]["subresources"]
    if scale is None:
        assert "scale" not in subresources
    else:
        paths = subresources["scale"]
        assert (paths["specReplicasPath"], paths["statusReplicasPath"]) == scale
        assert paths["labelSelectorPath"] == ".status.selector"


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        ("Elasticsearch", ["health", "nodes", "version", "phase", "age"]),
        ("Kibana", ["health", "nodes", "version", "age"]),
        ("Beat", ["health", "available", "expected", "type", "version", "age"]),
        ("Agent", ["health", "available", "expected", "version", "age"]),
        ("Logstash", ["health", "available", "expected", "age", "version"]),
        ("StackConfigPolicy", ["Ready", "Phase", "Age", "Weight"]),
        ("ElasticsearchAutoscaler", ["Target", "Active", "Healthy", "Limited", "Age"]),
    ],
)
def test_printer_columns_match_eck(kind: str, columns: list[str]) -> None:
    entry = CRDS_BY_KIND[kind]["spec"]["versions"][0]
    assert [c["name"] for c in entry["additionalPrinterColumns"]] == columns


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("Elasticsearch", "spec"),
        ("Elasticsearch", "status"),
        ("Elasticsearch", "spec.nodeSets.[].podTemplate"),
        ("Elasticsearch", "spec.nodeSets.[].config"),
        ("Elasticsearch", "spec.nodeSets.[].volumeClaimTemplates.[]"),
        ("Elasticsearch", "spec.secureSettings.[]"),
        ("Elasticsearch", "status.inProgressOperations"),
        ("Kibana", "spec.config"),
        ("Kibana", "spec.podTemplate"),
        ("Beat", "spec.daemonSet.podTemplate"),
        ("StackConfigPolicy", "spec.elasticsearch.clusterSettings"),
    ],
)
def test_free_form_parts_preserve_unknown_fields(kind: str, path: str) -> None:
    assert _node(_served_schema(kind), path).get(PRESERVE) is True


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("Elasticsearch", "spec.version", {"type": "string"}),
        ("Elasticsearch", "spec.nodeSets.[].count", {"type": "integer", "minimum": 0}),
        ("Elasticsearch", "spec.nodeSets.[].name", {"type": "string", "maxLength": 23}),
        ("Elasticsearch", "spec.nodeSets", {"type": "array", "minItems": 1}),
        (
            "Elasticsearch",
            "status.health",
            {"type": "string", "enum": ["red", "yellow", "green", "unknown"]},
        ),
        (
            "Kibana",
            "status.elasticsearchAssociationStatus",
            {"enum": ["", "Pending", "Established", "Failed"]},
        ),
        ("Agent", "spec.policyID", {"type": "string"}),
        ("Agent", "spec.mode", {"enum": ["standalone", "fleet"]}),
    ],
)
def test_typed_fields(kind: str, path: str, expected: dict[str, Any]) -> None:
    node = _node(_served_schema(kind), path)
    assert {key: node.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("kind", "path", "required"),
    [
        ("Elasticsearch", "spec", ["nodeSets", "version"]),
        ("Elasticsearch", "spec.nodeSets.[]", ["name"]),
        ("Beat", "spec", ["type", "version"]),
        ("AutoOpsAgentPolicy", "spec", ["autoOpsRef", "resourceSelector", "version"]),
    ],
)
def test_required_fields(kind: str, path: str, required: list[str]) -> None:
    assert _node(_served_schema(kind), path)["required"] == required


def _schema_nodes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [schema]
    for sub in (schema.get("properties") or {}).values():
        nodes.extend(_schema_nodes(sub))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            nodes.extend(_schema_nodes(schema[key]))
    return nodes


@pytest.mark.parametrize("kind", sorted(CRDS_BY_KIND))
def test_no_schema_defaults(kind: str) -> None:
    """A default would add fields the ECK manifest did not have."""
    assert not [node for node in _schema_nodes(_served_schema(kind)) if "default" in node]


def test_committed_crds_are_fresh() -> None:
    committed = {
        path.name: path.read_text(encoding="utf-8") for path in COMMITTED_CRDS.glob("*.yaml")
    }
    hint = "deploy/crds is stale: run `stackflow crds --out-dir deploy/crds` and commit the result"
    assert committed == rendered_files(), hint


def test_cli_prints_every_crd(capsys: pytest.CaptureFixture[str]) -> None:
    assert crds_cli.main([]) == 0
    documents = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert [doc["metadata"]["name"] for doc in documents] == [info.crd_name for info in KINDS]


def test_cli_writes_one_file_per_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "crds"
    assert crds_cli.main(["--out-dir", str(out_dir)]) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(crd_file_name(c) for c in all_crds())
    assert "elasticsearch.k8s.elastic.co_elasticsearches.yaml" in capsys.readouterr().out


def test_cli_rejects_unknown_flags() -> None:
    assert crds_cli.main(["--bogus"]) == 2


# --- against kubesim -----------------------------------------------------------------------------

_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp")


def _without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out.pop("status", None)
    for key in _SERVER_METADATA:
        out["metadata"].pop(key, None)
    return out


async def _install(kubesim: KubeSim, ka_client: client.ApiClient, namespaces: set[str]) -> None:
    api: Any = client.ApiextensionsV1Api(ka_client)
    for crd in all_crds():
        await api.create_custom_resource_definition(copy.deepcopy(crd))
    core = core_api(ka_client)
    for namespace in sorted(namespaces - {"default"}):
        await core.create_namespace({"metadata": {"name": namespace}})
    await kubesim.settle()


def _route(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    group, _, version = obj["apiVersion"].partition("/")
    return group, version, obj["metadata"]["namespace"], kind_info(obj["kind"]).plural


@pytest.mark.parametrize("kind", sorted(ECK_MANIFESTS))
async def test_kubesim_keeps_every_field(
    kubesim: KubeSim, ka_client: client.ApiClient, kind: str
) -> None:
    manifest = ECK_MANIFESTS[kind]
    await _install(kubesim, ka_client, {manifest["metadata"]["namespace"]})
    custom = custom_api(ka_client)
    body = _without_server_fields(manifest)
    route = _route(body)
    created = await custom.create_namespaced_custom_object(*route, copy.deepcopy(body))
    assert created["spec"] == body["spec"]
    assert created["metadata"]["labels"] == body["metadata"]["labels"]
    patched = await custom.patch_namespaced_custom_object_status(
        *route,
        body["metadata"]["name"],
        {"status": copy.deepcopy(manifest["status"])},
        _content_type="application/merge-patch+json",
    )
    assert patched["status"] == manifest["status"]
    read = await custom.get_namespaced_custom_object(*route, body["metadata"]["name"])
    assert read["spec"] == manifest["spec"]
    assert read["status"] == manifest["status"]


async def test_kubesim_serves_elasticsearch_v1beta1(
    kubesim: KubeSim, ka_client: client.ApiClient
) -> None:
    await _install(kubesim, ka_client, {"default"})
    body = _without_server_fields(ECK_MANIFESTS["Elasticsearch"])
    body["apiVersion"] = "elasticsearch.k8s.elastic.co/v1beta1"
    created = await custom_api(ka_client).create_namespaced_custom_object(
        *_route(body), copy.deepcopy(body)
    )
    assert created["spec"] == body["spec"]


async def test_kubesim_accepts_the_examples(kubesim: KubeSim, ka_client: client.ApiClient) -> None:
    documents = [
        doc
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc
    ]
    assert {doc["kind"] for doc in documents} == {"Namespace", "Elasticsearch", "Kibana", "Secret"}
    namespaces = {doc["metadata"]["name"] for doc in documents if doc["kind"] == "Namespace"}
    assert {doc["metadata"].get("namespace") for doc in documents} - {None} <= namespaces
    await _install(kubesim, ka_client, namespaces)
    core = core_api(ka_client)
    custom = custom_api(ka_client)
    for doc in documents:
        if doc["kind"] == "Namespace":
            continue
        namespace, name = doc["metadata"]["namespace"], doc["metadata"]["name"]
        if doc["kind"] == "Secret":
            await core.create_namespaced_secret(namespace, copy.deepcopy(doc))
            read = (await core.read_namespaced_secret(name, namespace)).to_dict()
            assert read["metadata"]["labels"] == doc["metadata"]["labels"]
            assert read["metadata"]["annotations"] == doc["metadata"]["annotations"]
            continue
        await custom.create_namespaced_custom_object(*_route(doc), copy.deepcopy(doc))
        read_obj = await custom.get_namespaced_custom_object(*_route(doc), name)
        assert _without_server_fields(read_obj) == doc
        assert kind_info(doc["kind"]).model.from_object(read_obj).to_object() == read_obj


def test_example_kibana_references_elasticsearch_across_namespaces() -> None:
    documents = {
        doc["kind"]: doc
        for path in (EXAMPLES / "elasticsearch.yaml", EXAMPLES / "kibana.yaml")
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc
    }
    es = Elasticsearch.from_object(documents["Elasticsearch"])
    kb = Kibana.from_object(documents["Kibana"])
    assert kb.spec.elasticsearch_ref is not None
    assert kb.spec.elasticsearch_ref.key(kb.namespace) == f"{es.namespace}/{es.name}"
    assert kb.namespace != es.namespace
