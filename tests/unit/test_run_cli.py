"""``stackflow run --config FILE --check`` as a new user runs it: one line per bad configuration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

STACKFLOW = [sys.executable, "-m", "stackflow.cli"]


def run_check(
    tmp_path: Path, text: str | None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``stackflow run --check`` on a config file holding ``text`` (None: a missing file)."""
    path = tmp_path / "operator.yaml"
    if text is not None:
        path.write_text(text)
    return subprocess.run(
        [*STACKFLOW, "run", "--config", str(path), "--check"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        (
            "namespaces: [a]\nnamespace-selector: {matchLabels: {x: y}}\n",
            {},
            '"namespaces" and "namespace-selector" are mutually exclusive',
        ),
        (
            "namespace-selector:\n  matchExpressions: [{key: env, operator: Foo}]\n",
            {},
            'namespace-selector.matchExpressions[0].operator: unsupported operator "Foo"',
        ),
        (None, {}, "no such file"),
        ("webhook-port: [1]\n", {}, "webhook-port"),
        ("{}\n", {"STACKFLOW_NAMESPACE_SELECTOR": "env in (a"}, "STACKFLOW_NAMESPACE_SELECTOR"),
        # Bounded reading: each of these was a traceback, a 122 MB line or port 1.
        (
            'a: &a ["lol","lol"]\nb: [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n',
            {},
            "a: YAML anchors and aliases (&name, *name) are not allowed at line 1",
        ),
        (
            "namespace-selector: " + "[" * 2000 + "]" * 2000 + "\n",
            {},
            "namespace-selector: nested more than 32 levels deep",
        ),
        ("webhook-port: 9443\nwebhook-port: 8443\n", {}, "webhook-port: duplicate key at line 2"),
        ("webhook-port: true\n", {}, "webhook-port: must be an integer, got true"),
        ("#" * (1024 * 1024 + 1) + "\n", {}, "larger than 1 MiB"),
    ],
)
def test_bad_configuration_exits_2_with_one_line(
    tmp_path: Path, text: str | None, env: dict[str, str], message: str
) -> None:
    result = run_check(tmp_path, text, env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert result.stdout == ""


def test_check_prints_effective_configuration(tmp_path: Path) -> None:
    result = run_check(tmp_path, "namespace-selector:\n  matchLabels: {team: search}\n")
    assert result.returncode == 0, result.stderr
    assert "# scope: dynamic" in result.stdout
    assert "team: search" in result.stdout
    assert "temporal-task-queue: stackflow" in result.stdout
