"""The ``flip-trigger-once`` patch: its branch is recorded with one reconcile per flip though the
flip's trigger arrived twice; the histories before it never carry the patch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.test_license_condition_history import HISTORIES, events, patch_ids
from workflows.resource import FLIP_ONCE_PATCH

WITH_PATCH = HISTORIES / "resource_flip_once.json"


def reconcile_steps(history: Path) -> int:
    """How many reconcile steps (local activity markers) the history recorded."""
    return sum(
        1
        for event in events(history)
        if (event.get("markerRecordedEventAttributes") or {}).get("markerName")
        == "core_local_activity"
    )


def test_a_flip_delivered_twice_is_one_reconcile_in_the_recorded_branch() -> None:
    assert FLIP_ONCE_PATCH in patch_ids(WITH_PATCH)
    # Created, the flip, the spec change (its batch's repeated flip dropped), the next flip:
    # the three repeated deliveries of the first flip cost nothing.
    assert reconcile_steps(WITH_PATCH) == 4


@pytest.mark.parametrize(
    "name",
    sorted(path.name for path in HISTORIES.glob("*.json") if path != WITH_PATCH),
)
def test_histories_before_the_patch_never_skip_a_flip(name: str) -> None:
    assert FLIP_ONCE_PATCH not in patch_ids(HISTORIES / name)
