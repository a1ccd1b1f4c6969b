"""``stackflow reconcile KIND/NAMESPACE/NAME``: which workflow a target names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stackflow.cli.reconcile import resolve_target
from stackflow.controllers import CONTROLLERS


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
