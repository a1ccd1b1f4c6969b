"""The EndpointSlice controller: its pure decisions as tables, then against a real Store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from kubesim import tables
from kubesim.controllers import Controllers
from kubesim.controllers.endpointslices import desired_groups, endpoint_ports, slice_labels
from kubesim.resources import Registry, ResourceType
from kubesim.store import Store

SERVICE: dict[str, Any] = {
    "metadata": {"name": "es-http", "namespace": "demo", "labels": {"app": "es"}},
    "spec": {
        "clusterIP": "10.96.0.20",
        "selector": {"cluster": "es"},
        "ports": [{"name": "https", "port": 9200, "protocol": "TCP", "targetPort": 9200}],
    },
}


def pod(
    name: str,
    *,
    ip: str | None = "10.244.0.2",
    ready: bool = True,
    phase: str = "Running",
    deleting: bool = False,
    labels: dict[str, str] | None = None,
    namespace: str = "demo",
) -> dict[str, Any]:
    """A Pod as the kubelet reports it."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": {"cluster": "es"} if labels is None else labels,
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": "kubesim-node-0",
            "containers": [{"name": "es", "ports": [{"name": "https", "containerPort": 9200}]}],
        },
        "status": status,
    }


def conditions(ready: bool, serving: bool, terminating: bool) -> dict[str, bool]:
    """An endpoint's conditions."""
    return {"ready": ready, "serving": serving, "terminating": terminating}


HTTPS_PORTS = [{"name": "https", "protocol": "TCP", "port": 9200}]


@pytest.mark.parametrize(
    ("service_spec", "pods", "expected"),
    [
        ({}, [], [(None, None)]),
        ({}, [pod("a", labels={"cluster": "other"})], [(None, None)]),
        ({}, [pod("a", namespace="elsewhere")], [(None, None)]),
        ({}, [pod("a", ip=None)], [(None, None)]),
        ({}, [pod("a", phase="Succeeded")], [(None, None)]),
        ({}, [pod("a")], [(HTTPS_PORTS, [("10.244.0.2", conditions(True, True, False))])]),
        (
            {},
            [pod("a", ready=False)],
            [(HTTPS_PORTS, [("10.244.0.2", conditions(False, False, False))])],
        ),
        (
            {},
            [pod("a", deleting=True)],
            [(HTTPS_PORTS, [("10.244.0.2", conditions(False, True, True))])],
        ),
        (
            {"publishNotReadyAddresses": True},
            [pod("a", ready=False)],
            [(HTTPS_PORTS, [("10.244.0.2", conditions(True, False, False))])],
        ),
        (
            {},
            [pod("b", ip="10.244.0.3"), pod("a")],
            [
                (
                    HTTPS_PORTS,
                    [
                        ("10.244.0.2", conditions(True, True, False)),
                        ("10.244.0.3", conditions(True, True, False)),
                    ],
                )
            ],
        ),
        ({"selector": None}, [pod("a")], [(None, None)]),
        ({"type": "ExternalName"}, [pod("a")], [(None, None)]),
    ],
    ids=[
        "no-pods",
        "not-selected",
        "other-namespace",
        "no-ip",
        "finished",
        "ready",
        "not-ready",
        "terminating",
        "publish-not-ready",
        "ordered-by-name",
        "no-selector",
        "external-name",
    ],
)
def test_desired_groups(
    service_spec: dict[str, Any], pods: list[dict[str, Any]], expected: list[Any]
) -> None:
    service = {**SERVICE, "spec": {**SERVICE["spec"], **service_spec}}
    groups = desired_groups(service, pods)
    seen = [
        (
            ports,
            None
            if endpoints is None
            else [(e["addresses"][0], e["conditions"]) for e in endpoints],
        )
        for ports, endpoints in groups
    ]
    assert seen == expected


def test_an_endpoint_names_its_pod_and_node() -> None:
    [(_, endpoints)] = desired_groups(SERVICE, [pod("a")])
    assert endpoints == [
        {
            "addresses": ["10.244.0.2"],
            "conditions": conditions(True, True, False),
            "targetRef": {"kind": "Pod", "namespace": "demo", "name": "a", "uid": "uid-a"},
            "nodeName": "kubesim-node-0",
        }
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (9300, [{"name": "https", "protocol": "TCP", "port": 9300}]),
        ("https", [{"name": "https", "protocol": "TCP", "port": 9200}]),
        ("missing", []),
    ],
)
def test_a_named_target_port_is_the_pods_container_port(
    target: int | str, expected: list[dict[str, Any]]
) -> None:
    service = {
        **SERVICE,
        "spec": {
            **SERVICE["spec"],
            "ports": [{"name": "https", "port": 443, "targetPort": target}],
        },
    }
    assert endpoint_ports(service, pod("a")) == expected


def test_slices_carry_the_service_labels_and_the_reserved_ones() -> None:
    headless = {**SERVICE, "spec": {**SERVICE["spec"], "clusterIP": "None"}}
    assert slice_labels(headless) == {
        "app": "es",
        "service.kubernetes.io/headless": "",
        "kubernetes.io/service-name": "es-http",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }


@pytest.mark.parametrize(
    ("body", "cells"),
    [
        ({"addressType": "IPv4", "endpoints": None, "ports": None}, ["IPv4", "<unset>", "<unset>"]),
        (
            {
                "addressType": "IPv4",
                "ports": [{"name": "https", "port": 9200}, {"name": "all"}],
                "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)],
            },
            ["IPv4", "9200,all", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."],
        ),
    ],
)
def test_the_table_prints_what_the_real_server_prints(
    body: dict[str, Any], cells: list[str]
) -> None:
    registry = Registry.builtin()
    rt = registry.lookup("discovery.k8s.io", "v1", "endpointslices")
    assert rt is not None
    created = "2026-01-01T11:58:00Z"
    obj = {"metadata": {"name": "s", "creationTimestamp": created}, **body}
    table = tables.to_table(
        rt, [obj], include_object="None", list_meta={}, now=datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    )
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "AddressType",
        "Ports",
        "Endpoints",
        "Age",
    ]
    assert table["rows"][0]["cells"] == ["s", *cells, "2m"]


# --------------------------------------------------------------------- against the real Store


@dataclass
class Cluster:
    """A store with running controllers."""

    store: Store
    registry: Registry
    controllers: Controllers

    def rt(self, group: str, plural: str) -> ResourceType:
        found = self.registry.lookup(group, "v1", plural)
        assert found is not None, f"{plural}.{group} not served"
        return found

    def slices(self, service: str) -> list[dict[str, Any]]:
        items, _ = self.store.list(self.rt("discovery.k8s.io", "endpointslices"), "default")
        return [
            item
            for item in items
            if item["metadata"]["labels"].get("kubernetes.io/service-name") == service
        ]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    registry = Registry.builtin()
    store = Store(registry)
    controllers = Controllers(store, registry=registry)
    controllers.start()
    yield Cluster(store, registry, controllers)
    await controllers.stop()


def _service(name: str = "web", selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": "web"} if selector is None else selector,
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
        },
    }


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }


def _addresses(endpoint_slice: dict[str, Any]) -> dict[str, bool]:
    return {
        endpoint["addresses"][0]: endpoint["conditions"]["ready"]
        for endpoint in endpoint_slice["endpoints"] or []
    }


async def test_a_service_gets_a_slice_of_its_ready_pods(cluster: Cluster) -> None:
    services, pods = cluster.rt("", "services"), cluster.rt("", "pods")
    cluster.store.create(services, _service(), namespace="default")
    for name in ("web-a", "web-b"):
        cluster.store.create(pods, _pod(name), namespace="default")
    await cluster.controllers.settle()

    [endpoint_slice] = cluster.slices("web")
    assert endpoint_slice["metadata"]["name"].startswith("web-")
    assert endpoint_slice["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert endpoint_slice["addressType"] == "IPv4"
    assert endpoint_slice["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    ips = {
        p["metadata"]["name"]: p["status"]["podIP"] for p in cluster.store.list(pods, "default")[0]
    }
    assert _addresses(endpoint_slice) == {ips["web-a"]: True, ips["web-b"]: True}

    cluster.controllers.set_pod_ready("default", "web-b", False)
    await cluster.controllers.settle()
    [endpoint_slice] = cluster.slices("web")
    assert _addresses(endpoint_slice) == {ips["web-a"]: True, ips["web-b"]: False}


async def test_a_service_selecting_nothing_keeps_a_placeholder(cluster: Cluster) -> None:
    cluster.store.create(cluster.rt("", "services"), _service(), namespace="default")
    await cluster.controllers.settle()

    [placeholder] = cluster.slices("web")
    assert (placeholder["endpoints"], placeholder["ports"]) == (None, None)


async def test_a_deleted_slice_comes_back_and_goes_with_its_service(cluster: Cluster) -> None:
    services, slices = cluster.rt("", "services"), cluster.rt("discovery.k8s.io", "endpointslices")
    cluster.store.create(services, _service(), namespace="default")
    cluster.store.create(cluster.rt("", "pods"), _pod("web-a"), namespace="default")
    await cluster.controllers.settle()
    [first] = cluster.slices("web")

    cluster.store.delete(slices, "default", first["metadata"]["name"])
    await cluster.controllers.settle()
    [second] = cluster.slices("web")
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert _addresses(second) == _addresses(first)

    cluster.store.delete(services, "default", "web")
    await cluster.controllers.settle()
    assert cluster.slices("web") == []


async def test_a_service_without_a_selector_gets_no_slice(cluster: Cluster) -> None:
    service = _service()
    del service["spec"]["selector"]
    cluster.store.create(cluster.rt("", "services"), service, namespace="default")
    cluster.store.create(cluster.rt("", "pods"), _pod("web-a"), namespace="default")
    await cluster.controllers.settle()

    assert cluster.slices("web") == []
