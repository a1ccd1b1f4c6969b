"""``stackflow reconcile KIND/NAMESPACE/NAME``: which workflow a target names, and the bad inputs
refused with one line and exit status 2 (no such resource, no kubeconfig)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stackflow.cli.kubeconfig import kubeconfig_problem
from stackflow.cli.reconcile import resolve_target
from stackflow.controllers import CONTROLLERS
from tests.clusters import ensure_namespace, kube_cluster
from tests.e2e.harness import ES, manifest


@pytest.mark.parametrize(
    ("target", "workflow_id", "kind"),
    [
        ("Elasticsearch/default/quickstart", "elasticsearch/default/quickstart", "Elasticsearch"),
        ("es/team-a/logs", "elasticsearch/team-a/logs", "Elasticsearch"),
        ("elasticsearches/team-a/logs", "elasticsearch/team-a/logs", "Elasticsearch"),
        ("license/team-a/logs", "license/team-a/logs", "Elasticsearch"),
    ],
)
def test_target_names_the_workflow(target: str, workflow_id: str, kind: str) -> None:
    ref = resolve_target(target, CONTROLLERS)
    assert ref.workflow_id == workflow_id
    assert ref.kind == kind


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("es/quickstart", "expected KIND/NAMESPACE/NAME"),
        ("es//quickstart", "expected KIND/NAMESPACE/NAME"),
        ("Widget/default/x", "unknown kind 'Widget'"),
    ],
)
def test_bad_targets_are_refused(target: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_target(target, CONTROLLERS)


def test_cli_exits_2_on_a_bad_target() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stackflow.cli", "reconcile", "nope/x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "expected KIND/NAMESPACE/NAME" in result.stderr


async def _stackflow(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``python -m stackflow.cli ARGS`` as a user runs it: (exit status, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stackflow.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def _closed_temporal_config(tmp_path: Path) -> Path:
    """A configuration whose Temporal address nothing listens on (a port just released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = tmp_path / "operator.yaml"
    path.write_text(f"temporal-address: 127.0.0.1:{port}\n")
    return path


async def test_a_resource_that_does_not_exist_is_not_reconciled(tmp_path: Path) -> None:
    config = _closed_temporal_config(tmp_path)
    async with kube_cluster(tmp_path) as cluster:
        status, out, err = await _stackflow(
            "reconcile",
            "es/default/nonexistent",
            "--wait",
            "--config",
            str(config),
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
        )
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        "stackflow reconcile: Elasticsearch default/nonexistent not found (nothing to reconcile)"
    ]


async def test_a_resource_that_exists_goes_on_to_temporal(tmp_path: Path) -> None:
    config = _closed_temporal_config(tmp_path)
    async with kube_cluster(tmp_path) as cluster:
        await ensure_namespace(cluster.kube, "team-a")
        await cluster.kube.create(
            ES,
            manifest(
                "Elasticsearch",
                "quickstart",
                "team-a",
                {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
            ),
            namespace="team-a",
        )
        status, _, err = await _stackflow(
            "reconcile",
            "es/team-a/quickstart",
            "--config",
            str(config),
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
        )
    # Found: the command went on to Temporal, which nothing serves here.
    assert status == 2
    assert "cannot reach Temporal" in err
    assert "not found" not in err


@pytest.mark.parametrize("command", ["reconcile", "status"])
async def test_no_kubeconfig_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    env["HOME"] = str(tmp_path)
    extra = ["--ui-url", "http://127.0.0.1:8233"] if command == "status" else []
    status, out, err = await _stackflow(command, "es/default/quickstart", *extra, env=env)
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        f"stackflow {command}: no kubeconfig: not in a Pod, $KUBECONFIG is not set and "
        f"{tmp_path}/.kube/config does not exist; pass --kubeconfig"
    ]


@pytest.mark.parametrize(
    ("kubeconfig", "environ", "files", "problem"),
    [
        ("given", {}, ["given"], None),
        ("given", {}, [], "no kubeconfig: --kubeconfig {d}/given does not exist or is not a file"),
        (None, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, [], None),
        (None, {"KUBECONFIG": "{d}/a:{d}/b"}, ["b"], None),
        (
            None,
            {"KUBECONFIG": "{d}/a:{d}/b"},
            [],
            "no kubeconfig: none of $KUBECONFIG's files exists ({d}/a, {d}/b); pass --kubeconfig",
        ),
        (None, {"HOME": "{d}"}, [".kube/config"], None),
        (
            None,
            {"HOME": "{d}"},
            [],
            "no kubeconfig: not in a Pod, $KUBECONFIG is not set and {d}/.kube/config does not "
            "exist; pass --kubeconfig",
        ),
    ],
)
def test_kubeconfig_problem(
    tmp_path: Path,
    kubeconfig: str | None,
    environ: dict[str, str],
    files: list[str],
    problem: str | None,
) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("apiVersion: v1\n")
    given = tmp_path / kubeconfig if kubeconfig is not None else None
    environ = {key: value.format(d=tmp_path) for key, value in environ.items()}
    expected = problem.format(d=tmp_path) if problem is not None else None
    assert kubeconfig_problem(given, environ) == expected
