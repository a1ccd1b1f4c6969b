"""The ``kubesim`` command line, run as ``python -m kubesim`` in a subprocess."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml

from tests.conftest import WIDGET_CRD, Kubectl

LISTENING = re.compile(r"^kubesim listening on (http://127\.0\.0\.1:\d+)$")


@asynccontextmanager
async def running_kubesim(*args: str) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """Start ``python -m kubesim`` and yield (process, url) once it printed its line."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubesim",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(30):
            line = (await process.stdout.readline()).decode().rstrip("\n")
        match = LISTENING.match(line)
        assert match is not None, line
        yield process, match.group(1)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def stop(process: asyncio.subprocess.Process) -> int:
    """SIGTERM the server and answer its exit code."""
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(30):
        return await process.wait()


def kubectl_for(tmp_path: Path, kubeconfig: Path) -> Kubectl:
    """A kubectl runner for a kubeconfig written by the CLI."""
    return Kubectl(kubeconfig=kubeconfig, cache_dir=tmp_path / "kube-cache")


@pytest.mark.kubectl
async def test_serves_kubectl_and_stops_on_sigterm(tmp_path: Path) -> None:
    """One line on stdout, a kubeconfig kubectl accepts, exit 0 on SIGTERM."""
    kubeconfig = tmp_path / "kubeconfig"
    async with running_kubesim("--kubeconfig", str(kubeconfig)) as (process, url):
        assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == url
        rc, out, err = await kubectl_for(tmp_path, kubeconfig)("get", "ns", "-o", "name")
        assert rc == 0, err
        assert "namespace/default" in out.split()
        assert await stop(process) == 0


@pytest.mark.kubectl
async def test_state_file_survives_restart(tmp_path: Path) -> None:
    """Objects keep their uid and resourceVersion across a restart with ``--state-file``."""
    kubeconfig = tmp_path / "kubeconfig"
    state = tmp_path / "state.json"
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kept", "namespace": "default"},
                "data": {"a": "1"},
            }
        )
    )
    args = ("--kubeconfig", str(kubeconfig), "--state-file", str(state))
    async with running_kubesim(*args) as (process, _):
        kubectl = kubectl_for(tmp_path, kubeconfig)
        rc, _, err = await kubectl("apply", "-f", str(manifest))
        assert rc == 0, err
        rc, out, err = await kubectl("get", "cm", "kept", "-o", "json")
        assert rc == 0, err
        before = json.loads(out)["metadata"]
        assert await stop(process) == 0
    async with running_kubesim(*args) as (process, _):
        rc, out, err = await kubectl_for(tmp_path, kubeconfig)("get", "cm", "kept", "-o", "json")
        assert rc == 0, err
        after = json.loads(out)
        assert after["data"] == {"a": "1"}
        assert (after["metadata"]["uid"], after["metadata"]["resourceVersion"]) == (
            before["uid"],
            before["resourceVersion"],
        )
        assert await stop(process) == 0


@pytest.mark.kubectl
async def test_crds_directory_is_applied(tmp_path: Path) -> None:
    """``--crds DIR`` serves the CRDs found in the directory's multi-document YAML files."""
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "all.yaml").write_text(
        yaml.safe_dump_all([{"apiVersion": "v1", "kind": "ConfigMap"}, WIDGET_CRD])
    )
    kubeconfig = tmp_path / "kubeconfig"
    async with running_kubesim("--kubeconfig", str(kubeconfig), "--crds", str(crds)) as (
        process,
        _,
    ):
        rc, _, err = await kubectl_for(tmp_path, kubeconfig)("get", "widgets")
        assert rc == 0, err
        assert await stop(process) == 0
