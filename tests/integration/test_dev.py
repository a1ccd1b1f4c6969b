"""``stackflow dev`` as a newcomer runs it: a working kubeconfig, a demo namespace, a clean stop."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.clusters import apiserver_unavailable
from tests.polling import eventually

KUBECTL = str(Path(sys.executable).parent / "kubectl")
REPO = Path(__file__).resolve().parents[2]


async def read_until(stream: asyncio.StreamReader, marker: str, *, deadline: float) -> str:
    """Read lines until one contains ``marker``; everything read is returned."""
    seen: list[str] = []
    while True:
        line = await asyncio.wait_for(stream.readline(), timeout=deadline)
        if not line:
            raise AssertionError("stackflow dev exited early:\n" + "".join(seen))
        seen.append(line.decode())
        if marker in seen[-1]:
            return "".join(seen)


async def kubectl(kubeconfig: Path, cache: Path, *args: str) -> tuple[int, str]:
    """Run the real kubectl against the dev cluster."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(cache),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def demo_health(kubeconfig: Path, cache: Path, namespace: str) -> str:
    """``status.health`` of the demo Elasticsearch in ``namespace``, read with kubectl."""
    rc, out = await kubectl(
        kubeconfig,
        cache,
        "get",
        "elasticsearch",
        "quickstart",
        "-n",
        namespace,
        "-o",
        "jsonpath={.status.health}",
    )
    assert rc == 0, out
    return out.strip()


async def test_dev_serves_a_demo_namespace_and_keeps_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"

    async def start() -> tuple[asyncio.subprocess.Process, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "stackflow.cli",
            "dev",
            "--state-dir",
            str(state_dir),
            "--crds",
            str(tmp_path / "no-crds"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert proc.stdout is not None
        banner = await read_until(proc.stdout, "Press Ctrl-C", deadline=60)
        return proc, banner

    proc, banner = await start()
    try:
        kubeconfig = state_dir / "kubeconfig"
        assert f"export KUBECONFIG={kubeconfig}" in banner
        assert banner.startswith("kubesim listening on http://127.0.0.1:")
        assert "Temporal dev server on 127.0.0.1:" in banner
        assert "UI at http://127.0.0.1:" in banner
        assert (state_dir / "temporal.db").exists()
        rc, out = await kubectl(kubeconfig, cache, "get", "ns", "demo", "--show-labels")
        assert rc == 0, out
        assert "stackflow.dev/demo=true" in out
        rc, out = await kubectl(kubeconfig, cache, "label", "ns", "demo", "team=search")
        assert rc == 0, out
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0

    # A restart keeps the cluster's objects, as an API server restart would.
    proc, _ = await start()
    try:
        rc, out = await kubectl(kubeconfig, cache, "get", "ns", "-l", "team=search", "-o", "name")
        assert rc == 0, out
        assert out.strip() == "namespace/demo"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0


async def test_dev_operator_reconciles_only_the_visible_demo(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"
    crds = REPO / "deploy" / "crds"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stackflow.cli",
        "dev",
        "--state-dir",
        str(state_dir),
        "--crds",
        str(crds),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        banner = await read_until(proc.stdout, "Press Ctrl-C", deadline=90)
        assert "operator running in-process" in banner
        kubeconfig = state_dir / "kubeconfig"

        async def health(namespace: str) -> str:
            return await demo_health(kubeconfig, cache, namespace)

        async def demo_green() -> bool:
            return await health("demo") == "green"

        await eventually(demo_green, within=90, what="demo turns green", interval=0.5)
        # The unlabelled namespace is out of scope: no status, no children.
        assert await health("demo-hidden") == ""
        rc, out = await kubectl(kubeconfig, cache, "get", "statefulsets", "-n", "demo-hidden")
        assert rc == 0, out
        assert "quickstart" not in out
    finally:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), timeout=60) == 0


@pytest.mark.apiserver
@pytest.mark.timeout(400)
async def test_dev_on_the_real_control_plane_as_a_newcomer_tries_it(tmp_path: Path) -> None:
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"
    kubeconfig = state_dir / "kubeconfig"

    async def start() -> tuple[asyncio.subprocess.Process, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "stackflow.cli",
            "dev",
            "--cluster",
            "apiserver",
            "--state-dir",
            str(state_dir),
            "--crds",
            str(REPO / "deploy" / "crds"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert proc.stdout is not None
        return proc, await read_until(proc.stdout, "Press Ctrl-C", deadline=180)

    async def health(namespace: str) -> str:
        return await demo_health(kubeconfig, cache, namespace)

    async def stop(proc: asyncio.subprocess.Process) -> None:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), timeout=90) == 0
        # Every component of the control plane went with it.
        assert control_plane_processes(state_dir) == []

    proc, banner = await start()
    try:
        assert "kube-apiserver listening on https://127.0.0.1:" in banner
        assert "operator running in-process" in banner

        async def green(namespace: str) -> bool:
            return await health(namespace) == "green"

        await eventually(lambda: green("demo"), within=120, what="demo green", interval=0.5)
        assert await health("demo-hidden") == ""
        # What the banner suggests: label the hidden namespace into scope.
        rc, out = await kubectl(kubeconfig, cache, "label", "ns", "demo-hidden", "eck-visible=true")
        assert rc == 0, out
        await eventually(
            lambda: green("demo-hidden"), within=120, what="demo-hidden green", interval=0.5
        )
        rc, out = await kubectl(kubeconfig, cache, "get", "pods", "-n", "demo")
        assert rc == 0, out
        assert out.split("\n")[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert "1/1" in out
        assert "Running" in out
    finally:
        await stop(proc)

    # etcd's data is kept: a restart finds the label where it was left.
    proc, _ = await start()
    try:
        rc, out = await kubectl(
            kubeconfig, cache, "get", "ns", "-l", "eck-visible=true", "-o", "name"
        )
        assert rc == 0, out
        assert "namespace/demo-hidden" in out.split()
    finally:
        await stop(proc)


def control_plane_processes(state_dir: Path) -> list[str]:
    """Command lines of running processes started on ``state_dir``'s control plane."""
    marker = str(state_dir / "controlplane")
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = status.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append(command)
    return found
