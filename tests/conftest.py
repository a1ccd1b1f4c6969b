"""Shared fixtures: a running kubesim, a kubernetes_asyncio client for it, and a kubectl runner."""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from controlplane import ControlPlane
from kubesim.testing import KubeSim
from tests.clusters import APISERVER, KUBESIM, ClusterTarget, apiserver_unavailable, install_crds

KUBECTL = Path(sys.executable).parent / "kubectl"


def core_api(api_client: client.ApiClient) -> Any:
    """A CoreV1Api, untyped so tests can pass plain dict bodies as kubernetes_asyncio allows."""
    return client.CoreV1Api(api_client)


def custom_api(api_client: client.ApiClient) -> Any:
    """A CustomObjectsApi, untyped so tests can pass ``_content_type``."""
    return client.CustomObjectsApi(api_client)


@dataclass(frozen=True)
class Kubectl:
    """Runs the real kubectl against one kubesim, with a private discovery cache."""

    kubeconfig: Path
    cache_dir: Path

    def argv(self, args: Sequence[str]) -> list[str]:
        """The full command line for ``args``."""
        return [
            str(KUBECTL),
            f"--kubeconfig={self.kubeconfig}",
            f"--cache-dir={self.cache_dir}",
            *args,
        ]

    async def __call__(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        """Run kubectl without blocking the loop (the in-loop server keeps serving)."""
        process = await asyncio.create_subprocess_exec(
            *self.argv(args),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await process.communicate(stdin.encode() if stdin is not None else None)
        assert process.returncode is not None
        return process.returncode, stdout.decode(), stderr.decode()

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        """Start a long-running kubectl (``get -w``) with piped output; the caller ends it."""
        return await asyncio.create_subprocess_exec(
            *self.argv(args),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )


#: The variables that name a proxy, each also read in lower case.
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


@pytest.fixture
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable set, in either case; the test sets the ones it needs through the
    returned ``monkeypatch``."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.fixture
async def kubesim(tmp_path: Path) -> AsyncIterator[KubeSim]:
    """A started simulated cluster with a kubeconfig at ``tmp_path / "kubeconfig"``."""
    async with KubeSim() as sim:
        sim.write_kubeconfig(tmp_path / "kubeconfig")
        yield sim


@pytest.fixture
async def ka_client(kubesim: KubeSim) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio ApiClient talking to ``kubesim``."""
    api_client = client.ApiClient(client.Configuration(host=kubesim.url))
    try:
        yield api_client
    finally:
        await api_client.close()


@pytest.fixture
def kubectl(kubesim: KubeSim, tmp_path: Path) -> Kubectl:
    """The real kubectl pointed at ``kubesim`` (kubeconfig and cache dir in ``tmp_path``)."""
    if not KUBECTL.exists():
        pytest.fail(f"kubectl not found next to the interpreter: {KUBECTL}")
    return Kubectl(kubeconfig=tmp_path / "kubeconfig", cache_dir=tmp_path / "kube-cache")


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
            "shortNames": ["wd"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer"},
                                    "color": {"type": "string"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"ready": {"type": "boolean"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
async def widget_crd(kubesim: KubeSim, ka_client: client.ApiClient) -> dict[str, Any]:
    """The ``widgets.example.com`` CRD (status subresource), created through the API and served."""
    api: Any = client.ApiextensionsV1Api(ka_client)
    await api.create_custom_resource_definition(copy.deepcopy(WIDGET_CRD))
    await kubesim.settle()
    assert kubesim.server.registry.lookup("example.com", "v1", "widgets") is not None
    return WIDGET_CRD


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
    kwok) with the ECK CRDs, started once for the session and stopped at its end; skipped, with
    the reason, where ``make tools`` has not built it."""
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)
    plane = ControlPlane(tmp_path_factory.mktemp("controlplane"), audit_log=True)
    plane.start()
    try:
        install_crds(plane)
        yield plane
    finally:
        plane.stop()


@pytest.fixture(
    scope="session",
    params=[KUBESIM, pytest.param(APISERVER, marks=pytest.mark.apiserver)],
)
def cluster_target(request: pytest.FixtureRequest) -> ClusterTarget:
    """Each end-to-end test runs on kubesim and on the real API server."""
    if request.param == APISERVER:
        return ClusterTarget(APISERVER, request.getfixturevalue("control_plane"))
    return ClusterTarget(KUBESIM)


#: Tiers that run after every other: the container tier starts a Docker engine whose load would
#: slow the real API server's end-to-end scenarios, and the browser tier drives the UI last.
LAST_TIERS = ("container", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the container tier after every other test, and the browser tier after it."""

    def tier(item: pytest.Item) -> int:
        for rank, marker in enumerate(LAST_TIERS, start=1):
            if item.get_closest_marker(marker) is not None:
                return rank
        return 0

    items.sort(key=tier)  # stable: the order within each tier is kept
