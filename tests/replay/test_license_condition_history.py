"""The ``license-wait-condition`` patch: its branch is recorded, and histories before it lack it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from stackflow.models.license_condition import ACT_LICENSE_CONDITION
from workflows.resource import LICENSE_CONDITION_PATCH

HISTORIES = Path(__file__).parent / "histories"
WITH_PATCH = HISTORIES / "resource_lifecycle_license_condition.json"


def events(history: Path) -> list[dict[str, Any]]:
    """The committed history's events."""
    loaded: list[dict[str, Any]] = json.loads(history.read_text())["events"]
    return loaded


def patch_ids(history: Path) -> set[str]:
    """The patch ids the history's ``core_patch`` markers name."""
    ids: set[str] = set()
    for event in events(history):
        attributes = event.get("markerRecordedEventAttributes")
        if attributes and attributes["markerName"] == "core_patch":
            payload = attributes["details"]["patch-data"]["payloads"][0]["data"]
            ids.add(json.loads(base64.b64decode(payload))["id"])
    return ids


def condition_activities(history: Path) -> int:
    """How many times the history scheduled the license-condition activity."""
    return sum(
        1
        for event in events(history)
        if (event.get("activityTaskScheduledEventAttributes") or {})
        .get("activityType", {})
        .get("name")
        == ACT_LICENSE_CONDITION
    )


def test_the_license_condition_branch_is_recorded() -> None:
    assert LICENSE_CONDITION_PATCH in patch_ids(WITH_PATCH)
    # The lifecycle enters the license wait once and leaves it once (through an invalid spec).
    assert condition_activities(WITH_PATCH) == 2


@pytest.mark.parametrize(
    "name",
    [
        "resource_lifecycle.json",
        "resource_lifecycle_local_checks.json",
        "resource_lifecycle_step.json",
        "resource_lifecycle_step_activity.json",
    ],
)
def test_histories_recorded_before_the_patch_wait_without_the_condition(name: str) -> None:
    history = HISTORIES / name
    assert LICENSE_CONDITION_PATCH not in patch_ids(history)
    assert condition_activities(history) == 0
