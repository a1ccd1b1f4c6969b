"""The real kube-scheduler with a scheduler extender (``ControlPlane(scheduler_extender=URL)``): a
tiny aiohttp extender sends Elasticsearch Pods to a Node run by an external kubelet, every other Pod
to the kwok Nodes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from controlplane import ControlPlane
from controlplane.api import AdminApi
from tests.clusters import apiserver_unavailable
from tests.polling import eventually

pytestmark = pytest.mark.apiserver

ES_TYPE_LABEL = "common.k8s.elastic.co/type"
RUNNER_NODE = "es-runner"


@pytest.fixture(autouse=True)
def _tools() -> None:
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)


@dataclass
class Extender:
    """Elasticsearch Pods to the runner's Node only; every other Pod anywhere but there."""

    url: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def filter(self, request: web.Request) -> web.Response:
        args = await request.json()
        self.calls.append(args)
        labels = args["Pod"]["metadata"].get("labels") or {}
        wants_runner = labels.get(ES_TYPE_LABEL) == "elasticsearch"
        kept = [name for name in args["NodeNames"] if (name == RUNNER_NODE) == wants_runner]
        failed = {name: "not this Pod's kubelet" for name in args["NodeNames"] if name not in kept}
        return web.json_response({"NodeNames": kept, "FailedNodes": failed, "Error": ""})


@asynccontextmanager
async def extender_server() -> AsyncIterator[Extender]:
    extender = Extender()
    app = web.Application()
    app.router.add_post("/scheduler/filter", extender.filter)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        extender.url = f"http://127.0.0.1:{runner.addresses[0][1]}/scheduler"
        yield extender
    finally:
        await runner.cleanup()


def create_runner_node(api: AdminApi) -> None:
    """A Ready Node kwok does not manage (no ``kwok.x-k8s.io/node: fake``): the runner's."""
    api.create(
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": RUNNER_NODE,
                "annotations": {"stackflow.dev/kubelet": "external"},
                "labels": {"kubernetes.io/hostname": RUNNER_NODE, "kubernetes.io/os": "linux"},
            },
        },
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    api.request(
        "PATCH",
        f"/api/v1/nodes/{RUNNER_NODE}/status",
        {
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "the Elasticsearch Pod runner is ready",
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": now,
                    }
                ],
            }
        },
        content_type="application/merge-patch+json",
    )


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox:1"}]},
    }


async def test_the_extender_puts_elasticsearch_pods_on_the_runner_node(tmp_path: Path) -> None:
    async with extender_server() as extender:
        plane = ControlPlane(tmp_path / "cluster", nodes=1, scheduler_extender=extender.url)
        # Blocking calls run in threads: the extender is served by this loop meanwhile.
        await asyncio.to_thread(plane.start)
        try:
            api = plane.api()
            await asyncio.to_thread(create_runner_node, api)
            for name, labels in (
                ("es-0", {ES_TYPE_LABEL: "elasticsearch"}),
                ("kb-0", {ES_TYPE_LABEL: "kibana"}),
            ):
                await asyncio.to_thread(
                    api.create, "/api/v1/namespaces/default/pods", pod(name, labels)
                )

            async def nodes_of_pods() -> dict[str, str]:
                listed = await asyncio.to_thread(api.get, "/api/v1/namespaces/default/pods")
                return {
                    item["metadata"]["name"]: item["spec"].get("nodeName", "")
                    for item in listed["items"]
                }

            async def both_bound() -> bool:
                return all((await nodes_of_pods()).values())

            await eventually(both_bound, within=90, what="both Pods bound by kube-scheduler")
            assert await nodes_of_pods() == {"es-0": RUNNER_NODE, "kb-0": "kwok-node-0"}
            # kube-scheduler's ExtenderArgs: Go's field names, node names only (nodeCacheCapable).
            assert {name for call in extender.calls for name in call} == {
                "Pod",
                "Nodes",
                "NodeNames",
            }
            assert all(call["Nodes"] is None for call in extender.calls)
            asked = {call["Pod"]["metadata"]["name"] for call in extender.calls}
            assert asked == {"es-0", "kb-0"}
        finally:
            await asyncio.to_thread(plane.stop)
