"""Conformance checks 1 and 17-21 of the reference (§12) with the real kubectl, plus ``get -w`` and CRDs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client

from kubesim import protobuf
from kubesim.server import AGGREGATED_CONTENT_TYPE
from kubesim.testing import KubeSim
from tests.conftest import WIDGET_CRD, Kubectl, core_api

pytestmark = pytest.mark.kubectl


def write_manifest(tmp_path: Path, name: str, *documents: dict[str, Any]) -> Path:
    """Write a (multi-document) YAML manifest and return its path."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return path


def config_map(name: str, **extra: Any) -> dict[str, Any]:
    """A ConfigMap manifest in ``default``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        **extra,
    }


def deployment(env: list[dict[str, str]]) -> dict[str, Any]:
    """A Deployment with containers ``app`` (given env) and ``side``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "nginx:5", "env": env},
                        {"name": "side", "image": "busybox"},
                    ]
                },
            },
        },
    }


async def test_get_namespaces_uses_aggregated_discovery(kubesim: KubeSim, kubectl: Kubectl) -> None:
    """Check 1: four namespaces, two aggregated discovery answers, one LIST with limit=500."""
    rc, out, err = await kubectl("get", "ns")
    assert rc == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    log = kubesim.server.request_log
    discovery = [r for r in log if r.path in ("/api", "/apis")]
    assert [r.response_content_type for r in discovery] == [AGGREGATED_CONTENT_TYPE] * 2
    lists = [r for r in log if r.path == "/api/v1/namespaces"]
    assert [r.query.get("limit") for r in lists] == ["500"]


async def test_wait_for_jsonpath_uses_streaming_list(
    kubesim: KubeSim, kubectl: Kubectl, ka_client: client.ApiClient
) -> None:
    """Check 17: ``kubectl wait --for=jsonpath`` succeeds through a sendInitialEvents watch."""
    core = core_api(ka_client)
    await core.create_namespaced_config_map(
        "default", {"metadata": {"name": "demo"}, "data": {"a": "0"}}
    )
    process = await kubectl.spawn("wait", "--for=jsonpath={.data.a}=1", "cm/demo", "--timeout=30s")
    try:
        async with asyncio.timeout(20):
            # Polling a condition under a deadline: kubectl's watch start is not observable otherwise.
            while kubesim.server.open_watches == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await core.patch_namespaced_config_map("demo", "default", {"data": {"a": "1"}})
        async with asyncio.timeout(20):
            _, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err
    watches = [r for r in kubesim.server.request_log if r.query.get("watch") in ("true", "1")]
    assert [r.query.get("sendInitialEvents") for r in watches] == ["true"]


async def test_streaming_list_ends_initial_events_with_bookmark(
    kubesim: KubeSim, ka_client: client.ApiClient
) -> None:
    """Check 17 (stream side): the initial ADDED events are followed by the initial-events-end bookmark."""
    await core_api(ka_client).create_namespaced_config_map(
        "default", {"metadata": {"name": "demo"}}
    )
    query = (
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=1&fieldSelector=metadata.name%3Ddemo"
    )
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{kubesim.url}/api/v1/namespaces/default/configmaps?{query}") as response,
    ):
        events = [json.loads(line) for line in (await response.text()).splitlines()]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


async def test_apply_validation(kubesim: KubeSim, kubectl: Kubectl, tmp_path: Path) -> None:
    """Check 18: strict validation through the OpenAPI stub; --validate=false drops the field."""
    good = write_manifest(tmp_path, "cm.yaml", config_map("good", data={"a": "1"}))
    rc, _, err = await kubectl("apply", "-f", str(good))
    assert rc == 0, err
    paths = [r.path for r in kubesim.server.request_log]
    assert "/openapi/v3" in paths
    posts = [r for r in kubesim.server.request_log if r.method == "POST"]
    assert posts[-1].query.get("fieldValidation") == "Strict"

    bad = write_manifest(tmp_path, "bad.yaml", config_map("bad", data={"a": "1"}, foo="bar"))
    rc, _, err = await kubectl("apply", "-f", str(bad))
    assert rc != 0
    assert 'strict decoding error: unknown field "foo"' in err

    rc, _, err = await kubectl("apply", "--validate=false", "-f", str(bad))
    assert rc == 0, err
    rt = kubesim.server.registry.lookup("", "v1", "configmaps")
    assert rt is not None
    stored = kubesim.store.get(rt, "default", "bad")
    assert "foo" not in stored
    assert stored["data"] == {"a": "1"}


async def test_second_apply_of_deployment(
    kubesim: KubeSim, kubectl: Kubectl, tmp_path: Path
) -> None:
    """Check 19: strategic merge keeps container ``side``, replaces env E by F, generation +1."""
    first = write_manifest(
        tmp_path, "dep.yaml", deployment([{"name": "A", "value": "1"}, {"name": "E", "value": "5"}])
    )
    rc, _, err = await kubectl("apply", "-f", str(first))
    assert rc == 0, err
    rt = kubesim.server.registry.lookup("apps", "v1", "deployments")
    assert rt is not None
    before = kubesim.store.get(rt, "default", "web")
    second = write_manifest(
        tmp_path, "dep.yaml", deployment([{"name": "A", "value": "1"}, {"name": "F", "value": "6"}])
    )
    rc, _, err = await kubectl("apply", "-f", str(second))
    assert rc == 0, err
    after = kubesim.store.get(rt, "default", "web")
    containers = after["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app", "side"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}, {"name": "F", "value": "6"}]
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1


async def test_label_namespace_and_select(kubesim: KubeSim, kubectl: Kubectl) -> None:
    """Check 20: ``kubectl label`` sends a merge patch; ``get -l`` selects only that namespace."""
    rc, _, err = await kubectl("label", "ns", "default", "team=x")
    assert rc == 0, err
    patches = [r for r in kubesim.server.request_log if r.method == "PATCH"]
    assert patches[-1].content_type.startswith("application/merge-patch+json")
    rc, out, err = await kubectl("get", "ns", "-l", "team=x", "-o", "name")
    assert rc == 0, err
    assert out.split() == ["namespace/default"]


async def test_create_namespace_with_protobuf(kubectl: Kubectl) -> None:
    """Check 21: typed ``kubectl create`` sends protobuf; it works when kubesim's classes exist.

    Without them (no ``make proto``) kubesim refuses protobuf with 415, saying to run it.
    """
    try:
        protobuf.catalog()
    except protobuf.UnavailableError:
        rc, _, err = await kubectl("create", "ns", "foo")
        assert rc != 0
        assert "Error from server (UnsupportedMediaType)" in err
        assert "make proto" in err
        return
    rc, out, err = await kubectl("create", "ns", "foo")
    assert rc == 0, err
    assert out.strip() == "namespace/foo created"


async def read_line_containing(stream: asyncio.StreamReader, text: str) -> str:
    """Read lines until one contains ``text`` (the caller bounds the wait)."""
    while True:
        line = (await stream.readline()).decode()
        if not line:
            raise AssertionError(f"stream ended before {text!r}")
        if text in line:
            return line


async def test_get_watch_prints_rows(kubectl: Kubectl, ka_client: client.ApiClient) -> None:
    """``kubectl get cm -w`` prints the existing rows, then rows for new objects."""
    core = core_api(ka_client)
    await core.create_namespaced_config_map("default", {"metadata": {"name": "first"}})
    process = await kubectl.spawn("get", "cm", "-w")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            await read_line_containing(process.stdout, "first")
            await core.create_namespaced_config_map("default", {"metadata": {"name": "second"}})
            await read_line_containing(process.stdout, "second")
    finally:
        process.kill()
        await process.wait()


async def test_apply_crd_then_custom_object(
    kubesim: KubeSim, kubectl: Kubectl, tmp_path: Path
) -> None:
    """``kubectl apply`` of a CRD, then of an object of that CRD (discovery refresh)."""
    crd = write_manifest(tmp_path, "crd.yaml", WIDGET_CRD)
    rc, _, err = await kubectl("apply", "-f", str(crd))
    assert rc == 0, err
    await kubesim.settle()
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"size": 3},
    }
    manifest = write_manifest(tmp_path, "w.yaml", widget)
    rc, out, err = await kubectl("apply", "-f", str(manifest))
    assert rc == 0, err
    assert "widget.example.com/w1 created" in out
    rc, out, err = await kubectl("get", "widgets", "-o", "json")
    assert rc == 0, err
    assert [item["spec"] for item in json.loads(out)["items"]] == [{"size": 3}]

    widget["spec"] = {"color": "red"}
    manifest = write_manifest(tmp_path, "w.yaml", widget)
    rc, _, err = await kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert rc == 0, err
    rc, out, err = await kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.color}")
    assert (rc, out) == (0, "red"), err
