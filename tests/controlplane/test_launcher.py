"""The control-plane launcher: a real cluster a user (or a test) can drive with kubectl, and no
process left behind, whatever fails."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from controlplane import ControlPlane, ControlPlaneError
from controlplane import cluster as cluster_module
from controlplane.cluster import REQUIRED, tools_bin
from tests.clusters import REPO, apiserver_unavailable, kubectl
from tests.polling import eventually

pytestmark = pytest.mark.apiserver


@pytest.fixture(autouse=True)
def _tools() -> None:
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)


def alive(pid: int) -> bool:
    """Whether a process id still names a running process."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def broken_bin(directory: Path, *, failing: str, message: str) -> Path:
    """The real tools, except ``failing``, which prints ``message`` and exits 3."""
    directory.mkdir()
    for name in REQUIRED:
        target = directory / name
        if name == failing:
            target.write_text(f"#!/bin/sh\necho '{message}'\nexit 3\n")
            target.chmod(target.stat().st_mode | stat.S_IXUSR)
        else:
            target.symlink_to(tools_bin() / name)
    return directory


def test_a_component_that_fails_to_start_is_named_with_its_log_and_nothing_is_left(
    tmp_path: Path,
) -> None:
    plane = ControlPlane(
        tmp_path / "cluster",
        bin_dir=broken_bin(tmp_path / "bin", failing="kube-apiserver", message="bad flag --x"),
    )
    with pytest.raises(ControlPlaneError) as failure:
        plane.start()
    message = str(failure.value)
    assert "kube-apiserver exited with status 3" in message
    assert "bad flag --x" in message
    # etcd had started before the API server failed, on every attempt; none of them survives.
    assert len(plane.started) >= 2
    assert [pid for pid in plane.started if alive(pid)] == []


def test_missing_tools_say_to_run_make_tools(tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError, match=r"missing .*kube-apiserver.*run `make tools`"):
        ControlPlane(tmp_path / "cluster", bin_dir=tmp_path / "empty").start()


def test_a_taken_port_is_retried_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    handed_out: list[int] = []
    real_free_port = cluster_module.free_port

    def first_one_taken() -> int:
        # The very first port (etcd's) is one somebody else holds.
        port = taken.getsockname()[1] if not handed_out else real_free_port()
        handed_out.append(port)
        return port

    monkeypatch.setattr(cluster_module, "free_port", first_one_taken)
    try:
        with ControlPlane(tmp_path / "cluster", nodes=1) as plane:
            nodes = json.loads(kubectl(plane.admin_kubeconfig, "get", "nodes", "-o", "json"))
            assert [node["metadata"]["name"] for node in nodes["items"]] == ["kwok-node-0"]
        assert [pid for pid in plane.started if alive(pid)] == []
    finally:
        taken.close()


def test_kubectl_drives_the_session_control_plane(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    admin = control_plane.admin_kubeconfig
    version = json.loads(kubectl(admin, "version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == "v1.37.2"
    assert "Ready" in kubectl(admin, "get", "nodes")
    kubectl(admin, "create", "namespace", "launcher-check")
    try:
        kubectl(admin, "create", "serviceaccount", "robot", "-n", "launcher-check")
        token = kubectl(admin, "create", "token", "robot", "-n", "launcher-check").strip()
        assert token.count(".") == 2  # a signed JWT
        robot = control_plane.token_kubeconfig(
            tmp_path / "robot.kubeconfig", namespace="launcher-check", service_account="robot"
        )
        # RBAC is enforced: a fresh ServiceAccount may not list Secrets.
        assert kubectl(robot, "auth", "can-i", "list", "secrets", check=False).strip() == "no"
        kubectl(admin, "create", "deployment", "web", "--image=nginx", "-n", "launcher-check")
        kubectl(
            admin,
            "wait",
            "--for=condition=Available",
            "--timeout=90s",
            "deployment/web",
            "-n",
            "launcher-check",
        )
        pods = json.loads(kubectl(admin, "get", "pods", "-n", "launcher-check", "-o", "json"))
        assert [pod["status"]["phase"] for pod in pods["items"]] == ["Running"]
        assert pods["items"][0]["spec"]["nodeName"].startswith("kwok-node-")
    finally:
        kubectl(admin, "delete", "namespace", "launcher-check", "--wait=true", "--timeout=120s")


LAUNCHER = """
import json, sys
from pathlib import Path
from controlplane import ControlPlane
plane = ControlPlane(Path(sys.argv[1]), nodes=1)
plane.start()
print(json.dumps(plane.pids()), flush=True)
sys.stdin.read()
"""


async def test_components_die_with_a_killed_launcher(tmp_path: Path) -> None:
    launcher = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LAUNCHER,
        str(tmp_path / "cluster"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    assert launcher.stdout is not None
    line = await asyncio.wait_for(launcher.stdout.readline(), timeout=180)
    pids = json.loads(line)
    assert len(pids) == 5
    assert all(alive(pid) for pid in pids)
    # SIGKILL: the launcher's own stop never runs.
    launcher.kill()
    await launcher.wait()

    def all_gone() -> bool:
        return not [pid for pid in pids if alive(pid)]

    await eventually(all_gone, within=30, what="every component gone with its launcher")
