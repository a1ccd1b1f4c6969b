"""The record of the workflows a reconcile step here last found waiting for a license."""

from __future__ import annotations

import pytest

from stackflow.licensing.waiters import LicenseWaiters


@pytest.mark.parametrize(
    ("verdicts", "waiting"),
    [
        pytest.param([], set(), id="nobody"),
        pytest.param([("a", True)], {"a"}, id="unlicensed"),
        pytest.param([("a", True), ("a", False)], set(), id="then-licensed"),
        pytest.param([("a", False)], set(), id="never-waited"),
        pytest.param([("a", True), ("b", True), ("a", True)], {"a", "b"}, id="each-once"),
        pytest.param([("a", True), ("b", True), ("b", False)], {"a"}, id="only-the-last-verdict"),
    ],
)
def test_the_last_verdict_of_each_workflow_counts(
    verdicts: list[tuple[str, bool]], waiting: set[str]
) -> None:
    waiters = LicenseWaiters()
    for workflow_id, unlicensed in verdicts:
        waiters.record(workflow_id, waiting=unlicensed)
    assert waiters.waiting() == waiting
