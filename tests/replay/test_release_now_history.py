"""The ``release-now-compensations`` patch: its branch is recorded with one activity per released
key, last-acquired first, while the resource stays in scope; the histories before it never ran a
compensation outside an out-of-scope episode or a deletion."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.replay.test_license_condition_history import HISTORIES, events, patch_ids
from workflows.resource import RELEASE_NOW_PATCH

WITH_PATCH = HISTORIES / "resource_release_now.json"


def compensation_summaries(history: Path) -> list[str]:
    """The summaries of the compensations the history scheduled, in order."""
    summaries: list[str] = []
    for event in events(history):
        if "activityTaskScheduledEventAttributes" not in event:
            continue
        payload = (event.get("userMetadata") or {}).get("summary", {}).get("data")
        summary = json.loads(base64.b64decode(payload)) if payload else ""
        if summary.startswith("compensate "):
            summaries.append(summary)
    return summaries


def test_released_targets_run_as_steps_then_leaving_scope_releases_the_rest() -> None:
    assert RELEASE_NOW_PATCH in patch_ids(WITH_PATCH)
    assert compensation_summaries(WITH_PATCH) == [
        # The reconcile released peers a and c now: c, acquired last, first.
        "compensate peer/c",
        "compensate peer/a",
        # Out of scope: what is still held, last-acquired first (the cluster step's exclusion).
        "compensate allocation-exclude/es-es-default-2",
        "compensate peer/b",
    ]


@pytest.mark.parametrize(
    "name",
    sorted(path.name for path in HISTORIES.glob("*.json") if path != WITH_PATCH),
)
def test_histories_before_the_patch_never_release_now(name: str) -> None:
    assert RELEASE_NOW_PATCH not in patch_ids(HISTORIES / name)
