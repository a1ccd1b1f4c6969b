"""The ``cluster-steps`` patch: its branch is recorded with one activity per step, each named in
its summary, and the histories before it never ran one."""

from __future__ import annotations

import base64
import json

import pytest

from stackflow.models.engine import ACT_CLUSTER_STEP
from tests.replay.test_license_condition_history import HISTORIES, events, patch_ids
from workflows.resource import CLUSTER_STEPS_PATCH

WITH_PATCH = HISTORIES / "resource_cluster_steps.json"
#: Recorded after the patch too: its steps are checked by its own test.
LATER = {HISTORIES / "resource_release_now.json"}


def step_summaries(name: str) -> list[str]:
    """The summaries of the cluster steps the history scheduled, in order."""
    summaries: list[str] = []
    for event in events(HISTORIES / name):
        attributes = event.get("activityTaskScheduledEventAttributes") or {}
        if attributes.get("activityType", {}).get("name") != ACT_CLUSTER_STEP:
            continue
        payload = event["userMetadata"]["summary"]["data"]
        summaries.append(json.loads(base64.b64decode(payload)))
    return summaries


def test_each_step_is_an_activity_named_by_its_summary_and_a_failure_ends_the_list() -> None:
    assert CLUSTER_STEPS_PATCH in patch_ids(WITH_PATCH)
    # The first reconcile's flush fails: its Pod deletion is not run; the next reconcile's is.
    assert step_summaries(WITH_PATCH.name) == [
        "disable replica shard allocation (enable=primaries)",
        "flush",
        "delete Pod es-es-default-2 (Deleting pod for rolling upgrade)",
    ]


@pytest.mark.parametrize(
    "name",
    sorted(path.name for path in HISTORIES.glob("*.json") if path not in {WITH_PATCH, *LATER}),
)
def test_histories_before_the_patch_run_no_step(name: str) -> None:
    assert CLUSTER_STEPS_PATCH not in patch_ids(HISTORIES / name)
    assert step_summaries(name) == []
