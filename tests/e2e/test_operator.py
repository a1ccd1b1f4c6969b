"""The operator end to end: kubesim + a Temporal dev server + ``stackflow run`` as a subprocess.

Driven only through the Kubernetes API (kubernetes_asyncio through ``stackflow.kube``), as a user
would with kubectl.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from kubesim.cli import apply_crds
from kubesim.testing import KubeSim
from stackflow.kube.client import make_api_client
from stackflow.kube.resources import NAMESPACES, ResourceClient
from stackflow.kube.resources import ResourceRef as KubeResource
from stackflow.models.engine import SEARCH_ATTRIBUTES

REPO = Path(__file__).resolve().parents[2]
TEMPORAL = Path(sys.executable).parent / "temporal"
ES = KubeResource("elasticsearch.k8s.elastic.co", "v1", "elasticsearches", True, "Elasticsearch")
STATEFULSETS = KubeResource("apps", "v1", "statefulsets", True, "StatefulSet")
SECRETS = KubeResource("", "v1", "secrets", True, "Secret")


async def eventually(
    predicate: Callable[[], Awaitable[bool]], *, within: float = 60, what: str = "condition"
) -> None:
    """Poll ``predicate`` until it holds; fail at the deadline."""
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"{what}: not reached before the deadline")
        await asyncio.sleep(0.2)


class Operator:
    """``stackflow run`` as a subprocess; its log goes to a file."""

    def __init__(self, *, config: Path, kubeconfig: Path, log: Path) -> None:
        self.argv = [
            sys.executable,
            "-m",
            "stackflow.cli",
            "run",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--health-host",
            "127.0.0.1",
            "--health-port",
            "0",
            "--graceful-shutdown-timeout",
            "2",
        ]
        self.log = log
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start it."""
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        """Signal it and wait for its exit status."""
        process, self.process = self.process, None
        if process is None:
            return 0
        if process.returncode is None:
            process.send_signal(signum)
        return await asyncio.wait_for(process.wait(), timeout=60)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[KubeSim, ResourceClient, Path]]:
    """kubesim with the CRDs, a kubeconfig and a client."""
    async with KubeSim(pod_ready_delay=0.2) as sim:
        apply_crds(sim, REPO / "deploy" / "crds")
        await sim.settle()
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=30)
        try:
            yield sim, ResourceClient(api_client), kubeconfig
        finally:
            await api_client.close()


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server on 127.0.0.1."""
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=str(TEMPORAL),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()


def elasticsearch(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


async def test_dynamic_scope_end_to_end(
    cluster: tuple[KubeSim, ResourceClient, Path],
    temporal: WorkflowEnvironment,
    tmp_path: Path,
) -> None:
    _, kube, kubeconfig = cluster
    config = tmp_path / "operator.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "operator-namespace": "elastic-system",
                "namespace-selector": {"matchLabels": {"eck-visible": "true"}},
                "temporal-address": temporal.client.service_client.config.target_host,
            }
        )
    )
    for name, labels in (
        ("elastic-system", {}),
        ("team-a", {"eck-visible": "true"}),
        ("team-b", {}),
    ):
        await kube.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})
    await kube.create(
        SECRETS,
        {
            "metadata": {
                "name": "eck-trial",
                "namespace": "elastic-system",
                "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
                "annotations": {"elastic.co/eula": "accepted"},
            }
        },
        namespace="elastic-system",
    )
    operator = Operator(config=config, kubeconfig=kubeconfig, log=tmp_path / "operator.log")
    await operator.start()
    try:
        for namespace in ("team-a", "team-b"):
            await kube.create(ES, elasticsearch(namespace), namespace=namespace)

        async def health(namespace: str) -> str:
            es = await kube.get(ES, namespace=namespace, name="quickstart")
            return str((es.get("status") or {}).get("health") or "")

        async def team_a_green() -> bool:
            return await health("team-a") == "green"

        await eventually(team_a_green, what="team-a Elasticsearch green")
        # Out of scope: no status, no children.
        assert await health("team-b") == ""
        listed = await kube.list(STATEFULSETS, namespace="team-b")
        assert listed["items"] == []

        # Kill the operator; label team-b while it is down; a new operator finishes the job.
        assert await operator.stop(signal.SIGKILL) == -signal.SIGKILL
        await kube.merge_patch(
            NAMESPACES,
            {"metadata": {"labels": {"eck-visible": "true"}}},
            namespace=None,
            name="team-b",
        )
        await operator.start()

        async def team_b_green() -> bool:
            return await health("team-b") == "green"

        await eventually(team_b_green, what="team-b Elasticsearch green after the restart")
    finally:
        assert await operator.stop() == 0, (tmp_path / "operator.log").read_text()[-3000:]
