"""The operator image with kubesim and Temporal in containers: it waits for Temporal, reconciles
an Elasticsearch applied with the real kubectl (its workflow shows up in Temporal), and on
SIGTERM exits 0 having released its Lease."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from stackflow.config import load_config
from stackflow.kube.leader import DEFAULT_LEASE_NAME
from tests.containers.docker import Docker, free_port, http_ok, wait_until
from tests.polling import eventually

#: Three containers starting on two loaded cores: far beyond the suite's 120 s default.
pytestmark = pytest.mark.timeout(900)

KUBECTL = Path(sys.executable).parent / "kubectl"
COMPOSE_CONFIG = Path(__file__).resolve().parents[2] / "deploy/compose/operator.yaml"
#: Where the Lease lives: the operator namespace of the config these tests mount.
OPERATOR_NAMESPACE = load_config(COMPOSE_CONFIG, {}).operator_namespace
ES_NAMESPACE = "search"
ES_NAME = "quickstart"


@dataclass(frozen=True)
class Stack:
    """The running containers and how to reach them from the host."""

    docker: Docker
    operator: str
    kubeconfig: Path
    temporal_address: str
    health_port: int
    waiting_log: str

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """Run the real kubectl against kubesim; its stdout."""
        done = subprocess.run(
            [str(KUBECTL), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr.strip()}"
        return done.stdout

    def create_namespace(self, name: str) -> None:
        """Create a namespace with ``apply -f`` (a JSON body: kubesim in the image has no
        protobuf classes, which ``kubectl create namespace`` would send)."""
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        self.kubectl("apply", "--filename=-", stdin=json.dumps(manifest))

    def lease(self) -> dict[str, Any] | None:
        """The operator's leader Lease, None while there is none."""
        done = subprocess.run(
            [str(KUBECTL), f"--kubeconfig={self.kubeconfig}", "get", "lease", DEFAULT_LEASE_NAME,
             f"--namespace={OPERATOR_NAMESPACE}", "--output=json"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return json.loads(done.stdout) if done.returncode == 0 else None


def elasticsearch_manifest() -> str:
    """A small Elasticsearch, as a user would apply it."""
    return yaml.safe_dump(
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "metadata": {"name": ES_NAME, "namespace": ES_NAMESPACE},
            "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
        }
    )


@pytest.fixture(scope="module")
def stack(
    docker: Docker,
    stackflow_image: str,
    temporal_image: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    """kubesim, then the operator (Temporal still down: it must wait), then Temporal."""
    shared = tmp_path_factory.mktemp("operator-stack")
    # The containers run as uid 10001: let them write kubesim's kubeconfig here.
    shared.chmod(0o777)
    kube_port, temporal_port, ui_port, health_port = (free_port() for _ in range(4))
    started: list[str] = []
    try:
        started.append(
            docker.start(
                "--read-only", "--tmpfs", "/tmp", "--volume", f"{shared}:/shared",
                "--entrypoint", "kubesim", stackflow_image,
                "--host=127.0.0.1", f"--port={kube_port}", "--kubeconfig=/shared/kubeconfig",
                "--crds=/opt/stackflow/share/crds",
            )
        )  # fmt: skip
        kubeconfig = shared / "kubeconfig"
        wait_until(
            lambda: kubeconfig.exists() and http_ok(f"http://127.0.0.1:{kube_port}/readyz"),
            within=120,
            what="kubesim answers with its kubeconfig written",
        )
        (shared / "operator.yaml").write_text(COMPOSE_CONFIG.read_text())
        temporal_address = f"127.0.0.1:{temporal_port}"
        operator = docker.start(
            "--read-only", "--tmpfs", "/tmp", "--volume", f"{shared}:/shared:ro",
            "--env", f"STACKFLOW_TEMPORAL_ADDRESS={temporal_address}",
            stackflow_image,
            "run", "--config=/shared/operator.yaml", "--kubeconfig=/shared/kubeconfig",
            "--health-host=127.0.0.1", f"--health-port={health_port}",
            "--graceful-shutdown-timeout=10",
        )  # fmt: skip
        started.append(operator)
        wait_until(
            lambda: "temporal.waiting" in docker.logs(operator),
            within=120,
            what="the operator says it waits for Temporal",
        )
        waiting_log = docker.logs(operator)
        started.append(
            docker.start(
                temporal_image, "server", "start-dev", "--ip=127.0.0.1",
                f"--port={temporal_port}", f"--ui-port={ui_port}", "--headless",
            )
        )  # fmt: skip
        stack = Stack(docker, operator, kubeconfig, temporal_address, health_port, waiting_log)
        try:
            wait_until(
                lambda: http_ok(f"http://127.0.0.1:{health_port}/readyz"),
                within=240,
                what="the operator is ready once Temporal is up",
            )
        except AssertionError as error:
            raise AssertionError(
                f"{error}; its log ends: {docker.logs(operator)[-3000:]}"
            ) from None
        yield stack
    finally:
        docker.cleanup(started)


def test_waits_for_temporal_saying_where(stack: Stack) -> None:
    waiting = [line for line in stack.waiting_log.splitlines() if "temporal.waiting" in line]
    assert waiting
    assert json.loads(waiting[0])["address"] == stack.temporal_address


async def test_reconciles_an_elasticsearch_applied_with_kubectl(stack: Stack) -> None:
    stack.create_namespace(ES_NAMESPACE)
    stack.kubectl("apply", "--filename=-", stdin=elasticsearch_manifest())
    client = await Client.connect(stack.temporal_address)
    workflow_id = f"elasticsearch/{ES_NAMESPACE}/{ES_NAME}"

    async def workflow_listed() -> bool:
        return any([w.id async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")])

    await eventually(workflow_listed, within=180, what=f"workflow {workflow_id} in Temporal")

    def reconciled() -> bool:
        status = json.loads(
            stack.kubectl("get", "elasticsearch", ES_NAME, f"--namespace={ES_NAMESPACE}", "-o=json")
        ).get("status")
        return bool(status)

    await eventually(reconciled, within=180, what="the Elasticsearch has a status")


def test_sigterm_exits_0_and_releases_the_lease(stack: Stack) -> None:
    wait_until(
        lambda: bool(((stack.lease() or {}).get("spec") or {}).get("holderIdentity")),
        within=120,
        what="the operator holds its Lease",
    )
    stack.docker.run("kill", "--signal=TERM", stack.operator)
    exit_code = stack.docker.run("wait", stack.operator, timeout=120).stdout.strip()
    assert exit_code == "0", stack.docker.logs(stack.operator)[-2000:]
    lease = stack.lease()
    assert lease is not None
    assert not lease["spec"].get("holderIdentity")
