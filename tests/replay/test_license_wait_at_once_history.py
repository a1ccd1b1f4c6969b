"""The ``license-wait-at-once`` patch: its branch is recorded with the Warning events and the
condition scheduled by one workflow task; the histories before it scheduled the condition only
once the events were recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackflow.models.engine import ACT_LICENSE_WAIT_NOTICE
from stackflow.models.license_condition import ACT_LICENSE_CONDITION
from tests.replay.test_license_condition_history import HISTORIES, events, patch_ids
from workflows.resource import LICENSE_WAIT_AT_ONCE_PATCH

WITH_PATCH = HISTORIES / "resource_lifecycle_license_wait_at_once.json"


def scheduled_by(history: Path, name: str) -> list[int]:
    """The workflow task (its completion event id) that scheduled each ``name`` activity."""
    tasks: list[int] = []
    for event in events(history):
        attributes = event.get("activityTaskScheduledEventAttributes")
        if attributes and attributes["activityType"]["name"] == name:
            tasks.append(int(attributes["workflowTaskCompletedEventId"]))
    return tasks


def test_the_branch_schedules_the_warnings_and_the_condition_together() -> None:
    assert LICENSE_WAIT_AT_ONCE_PATCH in patch_ids(WITH_PATCH)
    notices = scheduled_by(WITH_PATCH, ACT_LICENSE_WAIT_NOTICE)
    assert len(notices) == 1
    # The wait's condition is scheduled with the notice; the second one (cleared) after it.
    assert scheduled_by(WITH_PATCH, ACT_LICENSE_CONDITION)[0] == notices[0]


@pytest.mark.parametrize(
    "name", ["resource_lifecycle_license_condition.json", "resource_lifecycle_step.json"]
)
def test_histories_recorded_before_the_patch_keep_the_events_first(name: str) -> None:
    history = HISTORIES / name
    assert LICENSE_WAIT_AT_ONCE_PATCH not in patch_ids(history)
    conditions = scheduled_by(history, ACT_LICENSE_CONDITION)
    for notice in scheduled_by(history, ACT_LICENSE_WAIT_NOTICE):
        assert notice not in conditions
