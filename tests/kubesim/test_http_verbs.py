"""HTTP-layer behaviours beyond §12: routing, decoding, fieldValidation, dryRun, apply, scale, watch."""

from __future__ import annotations

import json

import pytest

from kubesim import protobuf
from kubesim.server import AGGREGATED_CONTENT_TYPE
from kubesim.testing import KubeSim
from tests.kubesim.http_calls import call

CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/healthz", 200),
        ("/readyz/", 200),
        ("/api/", 200),
        ("/api/v1/", 200),
        ("/apis/apps/", 200),
        ("/apis/apps/v1/", 200),
        ("/apis/nope.example.com", 404),
        ("/openapi/v2", 200),  # protobuf only, for kubectl's List validation
        ("/openapi/v3/api/v1", 200),
        ("/no/such/path", 404),
        ("/api/v1/namespaces/default/nothings", 404),
        ("/api/v1/configmaps/x", 404),  # namespaced kind through a cluster path
        ("/api/v1/namespaces/default", 200),
        ("/api/v1/namespaces/default/status", 200),
    ],
)
async def test_fixed_paths_and_routing(kubesim: KubeSim, path: str, status: int) -> None:
    """Health, discovery, OpenAPI and routing edge cases; errors are Status objects."""
    answered, body, _ = await call(kubesim, f"GET {path}")
    assert answered == status
    if status == 404:
        assert body["kind"] == "Status"
        assert body["code"] == 404


async def test_aggregated_discovery_by_accept_header(kubesim: KubeSim) -> None:
    """The aggregated form only when asked for, with the exact Content-Type."""
    _, body, headers = await call(
        kubesim, "GET /api", accept=f"{AGGREGATED_CONTENT_TYPE},application/json"
    )
    assert headers["Content-Type"] == AGGREGATED_CONTENT_TYPE
    assert body["kind"] == "APIGroupDiscoveryList"
    _, body, headers = await call(kubesim, "GET /api")
    assert headers["Content-Type"] == "application/json"
    assert body["kind"] == "APIVersions"


@pytest.mark.parametrize(
    ("raw", "content_type", "status"),
    [
        (b"{not json", "application/json", 400),
        # A truncated protobuf envelope: 400 like any undecodable body (415 without the classes).
        (b"k8s\x00\x0a\x02v1", "application/vnd.kubernetes.protobuf", 400),
        (
            b'{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}}',
            "application/json",
            400,
        ),
        (b'{"kind":"Secret","metadata":{"name":"a"}}', "application/json", 400),
        (b'{"metadata":{"name":"a"}}', "application/json", 201),
        (b"metadata: {name: y}\n", "application/yaml", 201),
        (b"{}", "text/plain", 415),
    ],
)
async def test_create_decoding(
    kubesim: KubeSim, raw: bytes, content_type: str, status: int
) -> None:
    """Malformed bodies 400, unknown media types 415, missing TypeMeta defaulted."""
    if "protobuf" in content_type:
        try:
            protobuf.catalog()
        except protobuf.UnavailableError:
            status = 415  # without the generated classes protobuf is refused whole
    answered, body, _ = await call(kubesim, f"POST {CMS}", raw=raw, content_type=content_type)
    assert answered == status
    if status == 201:
        assert (body["apiVersion"], body["kind"]) == ("v1", "ConfigMap")
    else:
        assert body["code"] == status
    if status == 415 and "protobuf" in content_type:
        assert "run `make proto`" in body["message"]


async def test_field_validation_modes(kubesim: KubeSim) -> None:
    """Warn (default) drops the field with a Warning header; Strict refuses; Ignore is silent."""
    manifest = {"metadata": {"name": "fv"}, "data": {"a": "1"}, "foo": 1}
    status, body, headers = await call(kubesim, f"POST {CMS}", body=manifest)
    assert status == 201
    assert "foo" not in body
    assert headers.getall("Warning") == ['299 - "unknown field \\"foo\\""']
    status, body, _ = await call(
        kubesim,
        f"POST {CMS}?fieldValidation=Strict",
        body={**manifest, "metadata": {"name": "s"}},
    )
    assert (status, body["message"]) == (400, 'strict decoding error: unknown field "foo"')
    status, _, headers = await call(
        kubesim,
        f"POST {CMS}?fieldValidation=Ignore",
        body={**manifest, "metadata": {"name": "i"}},
    )
    assert status == 201
    assert "Warning" not in headers


async def test_dry_run_persists_nothing(kubesim: KubeSim) -> None:
    """``dryRun=All`` answers 201 but nothing is stored; a bad value is 422."""
    status, _, _ = await call(kubesim, f"POST {CMS}?dryRun=All", body={"metadata": {"name": "d"}})
    assert status == 201
    assert (await call(kubesim, f"GET {CMS}/d"))[0] == 404
    status, _, _ = await call(kubesim, f"POST {CMS}?dryRun=Some", body={"metadata": {"name": "d"}})
    assert status == 422


async def test_server_side_apply(kubesim: KubeSim) -> None:
    """Apply needs a fieldManager, creates when missing, and drops fields the manager stopped applying."""
    path = CMS + "/ssa"
    first = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"a": "1", "b": "2"},
    }
    status, body, _ = await call(
        kubesim, f"PATCH {path}", body=first, content_type="application/apply-patch+yaml"
    )
    assert (status, body["reason"]) == (422, "Invalid")
    status, body, _ = await call(
        kubesim,
        f"PATCH {path}?fieldManager=me",
        body=first,
        content_type="application/apply-patch+yaml",
    )
    assert status == 201
    second = {**first, "data": {"a": "1"}}
    status, body, _ = await call(
        kubesim,
        f"PATCH {path}?fieldManager=me",
        body=second,
        content_type="application/apply-patch+yaml",
    )
    assert (status, body["data"]) == (200, {"a": "1"})


async def test_scale_subresource(kubesim: KubeSim) -> None:
    """``/scale`` reads and writes ``spec.replicas`` as an autoscaling/v1 Scale."""
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    assert (await call(kubesim, f"POST {DEPLOYMENTS}", body=deployment))[0] == 201
    status, scale, _ = await call(kubesim, f"GET {DEPLOYMENTS}/web/scale")
    assert (status, scale["kind"], scale["spec"]["replicas"]) == (200, "Scale", 1)
    assert scale["status"]["selector"] == "app=web"
    status, scale, _ = await call(
        kubesim,
        f"PATCH {DEPLOYMENTS}/web/scale",
        body={"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )
    assert (status, scale["spec"]["replicas"]) == (200, 3)
    _, stored, _ = await call(kubesim, f"GET {DEPLOYMENTS}/web")
    assert stored["spec"]["replicas"] == 3


async def test_delete_and_delete_collection(kubesim: KubeSim) -> None:
    """DELETE answers a Success Status; deletecollection answers the deleted objects as a list."""
    for name, team in (("d1", "a"), ("d2", "a"), ("d3", "b")):
        await call(
            kubesim, f"POST {CMS}", body={"metadata": {"name": name, "labels": {"team": team}}}
        )
    status, body, _ = await call(
        kubesim, f"DELETE {CMS}/d3", body={"propagationPolicy": "Background"}
    )
    assert (status, body["status"], body["details"]["name"]) == (200, "Success", "d3")
    status, body, _ = await call(kubesim, f"DELETE {CMS}?labelSelector=team%3Da")
    assert (status, body["kind"]) == (200, "ConfigMapList")
    assert sorted(item["metadata"]["name"] for item in body["items"]) == ["d1", "d2"]
    _, listed, _ = await call(kubesim, f"GET {CMS}")
    assert [item["metadata"]["name"] for item in listed["items"]] == []


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("resourceVersionMatch=NotOlderThan", 422),
        ("sendInitialEvents=true", 422),
        ("resourceVersion=999999", 504),
        ("resourceVersion=abc", 400),
        ("watch=maybe", 400),
        ("limit=1&continue=%21%21", 400),
    ],
)
async def test_list_option_errors(kubesim: KubeSim, query: str, status: int) -> None:
    """The 4xx/5xx rules of §4.2 for LIST parameters."""
    answered, body, _ = await call(kubesim, f"GET {CMS}?{query}")
    assert (answered, body["code"]) == (status, status)


async def test_idle_watch_gets_bookmarks() -> None:
    """With ``allowWatchBookmarks`` an idle watch receives BOOKMARK events carrying the current RV."""
    async with KubeSim(bookmark_interval_seconds=0.1) as sim:
        _, body, _ = await call(sim, f"GET {CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1")
        assert isinstance(body, str)
        events = [json.loads(line) for line in body.splitlines()]
        assert events
        assert {event["type"] for event in events} == {"BOOKMARK"}
        assert events[0]["object"]["metadata"]["resourceVersion"] == str(sim.store.resource_version)


async def test_table_output(kubesim: KubeSim) -> None:
    """``as=Table`` answers a Table with rows of PartialObjectMetadata."""
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    status, table, _ = await call(kubesim, "GET /api/v1/namespaces", accept=accept)
    assert (status, table["kind"]) == (200, "Table")
    assert [row["object"]["metadata"]["name"] for row in table["rows"]] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
