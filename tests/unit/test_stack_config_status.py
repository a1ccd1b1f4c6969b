"""A policy's status: each targeted resource's phase, the policy's phase and counts, and the
merge patch of its status."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.policies.stack_config.status import (
    ResourceStatus,
    kibana_applied,
    policy_status,
    resource_phase,
    status_patch,
)

# (reported version, reported errors, expected phase)
PHASES: list[tuple[int | None, dict[str, Any] | None, str]] = [
    (None, None, "ApplyingChanges"),
    (3, None, "ApplyingChanges"),
    (4, None, "Ready"),
    (3, {"version": 4, "errors": ["bad setting"]}, "Error"),
    (4, {"version": 2, "errors": ["old"]}, "Ready"),
]


@pytest.mark.parametrize(("reported", "errors", "phase"), PHASES)
def test_resource_phase(reported: int | None, errors: dict[str, Any] | None, phase: str) -> None:
    status = resource_phase(expected_version=4, reported_version=reported, reported_errors=errors)
    assert status.phase == phase


# (resource phases, expected policy phase, readyCount)
STATUSES: list[tuple[list[str], str, str]] = [
    ([], "Ready", "0/0"),
    (["Ready", "Ready"], "Ready", "2/2"),
    (["Ready", "ApplyingChanges"], "ApplyingChanges", "1/2"),
    (["Ready", "Error", "ApplyingChanges"], "Error", "1/3"),
    (["Conflict", "Error"], "Conflict", "0/2"),
]


@pytest.mark.parametrize(("phases", "phase", "ready_count"), STATUSES)
def test_policy_status(phases: list[str], phase: str, ready_count: str) -> None:
    details = {"elasticsearch": {f"ns/es{i}": ResourceStatus(p) for i, p in enumerate(phases)}}
    status = policy_status(details, observed_generation=3)
    assert status["phase"] == phase
    assert status["readyCount"] == ready_count
    assert status["resources"] == len(phases)
    assert status["observedGeneration"] == 3
    assert len(status["details"].get("elasticsearch", {})) == len(phases)


# (current status, desired status, expected merge patch)
STATUS_PATCHES: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]] = [
    ({"phase": "Ready"}, {"phase": "Ready"}, None),
    ({}, {"phase": "Ready", "resources": 0}, {"phase": "Ready", "resources": 0}),
    # A resource no longer targeted leaves the details; a field an entry lost is removed.
    (
        {
            "details": {
                "elasticsearch": {
                    "a/es": {"phase": "Ready", "currentVersion": 3},
                    "b/es": {"phase": "Ready"},
                }
            }
        },
        {"details": {"elasticsearch": {"a/es": {"phase": "ApplyingChanges"}}}},
        {
            "details": {
                "elasticsearch": {
                    "a/es": {"phase": "ApplyingChanges", "currentVersion": None},
                    "b/es": None,
                }
            }
        },
    ),
    (
        {"details": {"kibana": {"a/kb": {"phase": "Ready"}}}},
        {"details": {}},
        {"details": {"kibana": None}},
    ),
    # Fields the policy controller does not write are left alone.
    ({"conditions": [{"type": "x"}], "phase": "Invalid"}, {"phase": "Ready"}, {"phase": "Ready"}),
]


@pytest.mark.parametrize(("current", "desired", "patch"), STATUS_PATCHES)
def test_status_patch(
    current: dict[str, Any], desired: dict[str, Any], patch: dict[str, Any] | None
) -> None:
    assert status_patch(current, desired) == patch


# (policy config, rendered kibana.yml, applied?)
KIBANA_APPLIED: list[tuple[dict[str, Any], dict[str, Any], bool]] = [
    ({}, {}, True),
    ({"a.b": 1}, {"a": {"b": 1}, "c": 2}, True),
    ({"a": {"b": 1}}, {"a.b": 1}, True),
    ({"a.b": 1}, {"a": {"b": 2}}, False),
    ({"a.b": 1}, {}, False),
]


@pytest.mark.parametrize(("config", "rendered", "applied"), KIBANA_APPLIED)
def test_kibana_applied(config: dict[str, Any], rendered: dict[str, Any], applied: bool) -> None:
    assert kibana_applied(config, rendered) is applied
