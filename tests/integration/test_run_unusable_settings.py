"""``stackflow run`` with a setting it cannot start with: one line naming it, exit 2, no traceback."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from tests.clusters import kube_cluster
from tests.e2e.harness import temporal_server

EXIT_BAD_SETTING = 2


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 some other process listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server."""
    async with temporal_server() as env:
        yield env


async def run_operator(
    tmp_path: Path, *, config: dict[str, object], args: list[str]
) -> tuple[int, str]:
    """Run ``stackflow run`` until it exits by itself; its status and stderr."""
    config_file = tmp_path / "operator.yaml"
    config_file.write_text(yaml.safe_dump(config))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stackflow.cli",
        "run",
        "--config",
        str(config_file),
        "--health-host",
        "127.0.0.1",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=90)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, stderr.decode()


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("health-port", "--health-port: port {port} on 127.0.0.1 is already in use"),
        ("metrics-port", "metrics-port: port {port} on 127.0.0.1 is already in use"),
        ("missing-kubeconfig", "--kubeconfig: {missing} does not exist or is not a file"),
        ("not-a-kubeconfig", "--kubeconfig: {not_a_kubeconfig} cannot be used: not a kubeconfig"),
    ],
)
async def test_an_unusable_setting_is_one_line_and_exit_2(
    case: str,
    expected: str,
    tmp_path: Path,
    taken_port: int,
    temporal: WorkflowEnvironment,
) -> None:
    async with kube_cluster(tmp_path) as cluster:
        kubeconfig = cluster.operator_kubeconfig
        missing = tmp_path / "missing.kubeconfig"
        not_a_kubeconfig = tmp_path / "notes.txt"
        not_a_kubeconfig.write_text("clusters: 5\n")
        config: dict[str, object] = {
            "temporal-address": temporal.client.service_client.config.target_host,
            "enable-leader-election": False,
        }
        args = {
            "health-port": ["--kubeconfig", str(kubeconfig), "--health-port", str(taken_port)],
            "metrics-port": ["--kubeconfig", str(kubeconfig), "--health-port", "0"],
            "missing-kubeconfig": ["--kubeconfig", str(missing)],
            "not-a-kubeconfig": ["--kubeconfig", str(not_a_kubeconfig)],
        }[case]
        if case == "metrics-port":
            config["metrics-port"] = taken_port
        status, stderr = await run_operator(tmp_path, config=config, args=args)
    line = expected.format(port=taken_port, missing=missing, not_a_kubeconfig=not_a_kubeconfig)
    assert status == EXIT_BAD_SETTING, stderr
    assert line in stderr, stderr
    assert "Traceback" not in stderr, stderr
