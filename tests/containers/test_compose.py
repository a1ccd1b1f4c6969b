"""docker-compose.yml as a user runs it (docker-compose 1.29), with the images it cannot pull
swapped in through its variables: every service becomes healthy, the Temporal UI answers on
localhost, and ``down -v`` leaves nothing behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stackflow.config import load_config
from stackflow.kube.leader import DEFAULT_LEASE_NAME
from tests.containers.docker import REPO, Docker, free_port, http_ok, wait_until

#: Pulls nothing, but starts three containers and waits for their healthchecks on two cores.
pytestmark = pytest.mark.timeout(900)

SERVICES = ("temporal", "kubesim", "operator")
KUBECTL = Path(sys.executable).parent / "kubectl"


@dataclass(frozen=True)
class ComposeStack:
    """A running compose project."""

    docker: Docker
    project: str
    environment: dict[str, str]

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``docker-compose -p <project> <args>`` in the repository."""
        return subprocess.run(
            [
                "docker-compose",
                "--project-name",
                self.project,
                "--file",
                "docker-compose.yml",
                *args,
            ],
            cwd=REPO,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def health(self, service: str) -> str:
        """The health status of the service's container ('' while it has none)."""
        container = self.compose("ps", "--quiet", service, timeout=60).stdout.strip()
        if not container:
            return ""
        state = self.docker.inspect(container)["State"]
        return str((state.get("Health") or {}).get("Status", state.get("Status", "")))


@pytest.fixture
def compose_stack(
    docker: Docker, stackflow_image: str, temporal_image: str
) -> Iterator[ComposeStack]:
    """``docker-compose up -d`` on free ports; ``down -v`` afterwards, whatever happened."""
    if shutil.which("docker-compose") is None:
        pytest.skip("container tier: no docker-compose on PATH (apt-get install -y docker-compose)")
    environment = {
        **docker.env(),
        "STACKFLOW_IMAGE": stackflow_image,
        "TEMPORAL_IMAGE": temporal_image,
        "TEMPORAL_PORT": str(free_port()),
        "TEMPORAL_UI_PORT": str(free_port()),
        "KUBESIM_PORT": str(free_port()),
        "OPERATOR_HEALTH_PORT": str(free_port()),
    }
    stack = ComposeStack(docker, f"stackflow-test-{uuid.uuid4().hex[:8]}", environment)
    try:
        up = stack.compose("up", "--detach", "--no-build")
        assert up.returncode == 0, up.stderr.strip()[-2000:]
        yield stack
    finally:
        down = stack.compose("down", "--volumes", "--remove-orphans")
        assert down.returncode == 0, down.stderr.strip()[-2000:]


def test_compose_stack_comes_up_healthy(compose_stack: ComposeStack, tmp_path: Path) -> None:
    for service in SERVICES:
        wait_until(
            lambda service=service: compose_stack.health(service) == "healthy",  # type: ignore[misc]
            within=300,
            what=f"compose service {service} healthy",
            max_interval=2.0,
        )
    ui_port = compose_stack.environment["TEMPORAL_UI_PORT"]
    wait_until(
        lambda: http_ok(f"http://127.0.0.1:{ui_port}/"),
        within=60,
        what="the Temporal UI answers on localhost",
    )
    volumes = compose_stack.docker.run("volume", "ls", "--quiet").stdout.split()
    assert f"{compose_stack.project}_temporal-data" in volumes

    # The operator leads: its Lease, in the compose config's operator namespace, has a holder.
    kubeconfig = tmp_path / "kubeconfig"
    copied = compose_stack.compose(
        "exec", "-T", "kubesim", "cat", "/var/lib/stackflow/kubeconfig", timeout=60
    )
    assert copied.returncode == 0, copied.stderr
    kubeconfig.write_text(copied.stdout)
    namespace = load_config(REPO / "deploy/compose/operator.yaml", {}).operator_namespace

    def lease_held() -> bool:
        found = subprocess.run(
            [str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "lease", DEFAULT_LEASE_NAME,
             f"--namespace={namespace}", "--output=json"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return found.returncode == 0 and bool(
            json.loads(found.stdout)["spec"].get("holderIdentity")
        )

    wait_until(lease_held, within=120, what="the compose operator holds its Lease")
