"""``stackflow dev`` as a newcomer runs it: a working kubeconfig, a demo namespace, a clean stop."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.clusters import apiserver_unavailable
from tests.dev_process import (
    DevProcess,
    demo_health,
    demo_reconciled,
    kubectl,
    start_dev,
    stop_dev,
)
from tests.polling import eventually

REPO = Path(__file__).resolve().parents[2]


async def test_dev_serves_a_demo_namespace_and_keeps_state(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"

    async def start() -> DevProcess:
        return await start_dev(state_dir, "--crds", str(tmp_path / "no-crds"), deadline=60)

    dev = await start()
    banner = dev.banner
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
        assert (await stop_dev(dev, sig=signal.SIGTERM, within=30)).returncode == 0

    # A restart keeps the cluster's objects, as an API server restart would.
    dev = await start()
    try:
        rc, out = await kubectl(kubeconfig, cache, "get", "ns", "-l", "team=search", "-o", "name")
        assert rc == 0, out
        assert out.strip() == "namespace/demo"
    finally:
        assert (await stop_dev(dev, sig=signal.SIGTERM, within=30)).returncode == 0


async def test_dev_operator_reconciles_only_the_visible_demo(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"
    crds = REPO / "deploy" / "crds"
    dev = await start_dev(state_dir, "--crds", str(crds), deadline=90)
    try:
        assert "operator running in-process" in dev.banner
        kubeconfig = state_dir / "kubeconfig"

        async def health(namespace: str) -> str:
            return await demo_health(kubeconfig, cache, namespace)

        async def demo_done() -> bool:
            return await demo_reconciled(kubeconfig, cache, "demo")

        await eventually(demo_done, within=90, what="demo reconciled", interval=0.5)
        # The unlabelled namespace is out of scope: no status, no children.
        assert await health("demo-hidden") == ""
        rc, out = await kubectl(kubeconfig, cache, "get", "statefulsets", "-n", "demo-hidden")
        assert rc == 0, out
        assert "quickstart" not in out
    finally:
        assert (await stop_dev(dev, sig=signal.SIGINT, within=60)).returncode == 0


@pytest.mark.apiserver
@pytest.mark.timeout(400)
async def test_dev_on_the_real_control_plane_as_a_newcomer_tries_it(tmp_path: Path) -> None:
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)
    state_dir = tmp_path / "state"
    cache = tmp_path / "kubectl-cache"
    kubeconfig = state_dir / "kubeconfig"

    async def start() -> DevProcess:
        return await start_dev(
            state_dir,
            "--cluster",
            "apiserver",
            "--crds",
            str(REPO / "deploy" / "crds"),
            deadline=180,
        )

    async def health(namespace: str) -> str:
        return await demo_health(kubeconfig, cache, namespace)

    async def stop(dev: DevProcess) -> None:
        stopped = await stop_dev(dev, sig=signal.SIGINT, within=90)
        assert stopped.returncode == 0
        # Every component of the control plane went with it.
        marker = str(state_dir / "controlplane")
        assert [command for command in stopped.leftovers if marker in command] == []

    dev = await start()
    banner = dev.banner
    try:
        assert "kube-apiserver listening on https://127.0.0.1:" in banner
        assert "operator running in-process" in banner

        async def done(namespace: str) -> bool:
            return await demo_reconciled(kubeconfig, cache, namespace)

        await eventually(lambda: done("demo"), within=120, what="demo reconciled", interval=0.5)
        assert await health("demo-hidden") == ""
        # What the banner suggests: label the hidden namespace into scope.
        rc, out = await kubectl(kubeconfig, cache, "label", "ns", "demo-hidden", "eck-visible=true")
        assert rc == 0, out
        await eventually(
            lambda: done("demo-hidden"), within=120, what="demo-hidden reconciled", interval=0.5
        )
        rc, out = await kubectl(kubeconfig, cache, "get", "pods", "-n", "demo")
        assert rc == 0, out
        assert out.split("\n")[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert "1/1" in out
        assert "Running" in out
    finally:
        await stop(dev)

    # etcd's data is kept: a restart finds the label where it was left.
    dev = await start()
    try:
        rc, out = await kubectl(
            kubeconfig, cache, "get", "ns", "-l", "eck-visible=true", "-o", "name"
        )
        assert rc == 0, out
        assert "namespace/demo-hidden" in out.split()
    finally:
        await stop(dev)
