"""The change budget: defaults, unbounded values, and the three counts ECK derives from it
(``getAllowedDeletions``, ``calculateRemovalsAllowed``, ``calculateCreatesAllowed``)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.orchestration.budget import (
    ChangeBudget,
    DeletionAllowance,
    change_budget_from_spec,
    creates_allowed,
    deletion_allowance,
    removals_allowed,
    resolve_change_budget,
)


@pytest.mark.parametrize(
    ("max_unavailable", "max_surge", "expected"),
    [
        pytest.param(None, None, ChangeBudget(1, None), id="unset: 1 unavailable, unbounded surge"),
        pytest.param(0, 0, ChangeBudget(0, 0), id="zero is a bound"),
        pytest.param(3, 2, ChangeBudget(3, 2), id="explicit values"),
        pytest.param(-1, -1, ChangeBudget(None, None), id="negative is unbounded"),
        pytest.param(-5, None, ChangeBudget(None, None), id="negative unavailable"),
        pytest.param(None, -2, ChangeBudget(1, None), id="negative surge"),
    ],
)
def test_resolve_change_budget(
    max_unavailable: int | None, max_surge: int | None, expected: ChangeBudget
) -> None:
    assert resolve_change_budget(max_unavailable, max_surge) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, ChangeBudget(1, None), id="no updateStrategy"),
        pytest.param({"updateStrategy": {}}, ChangeBudget(1, None), id="no changeBudget"),
        pytest.param(
            {"updateStrategy": {"changeBudget": {"maxUnavailable": 2, "maxSurge": 1}}},
            ChangeBudget(2, 1),
            id="both set",
        ),
        pytest.param(
            {"updateStrategy": {"changeBudget": {"maxUnavailable": -1}}},
            ChangeBudget(None, None),
            id="unbounded unavailable",
        ),
    ],
)
def test_change_budget_from_spec(spec: dict[str, Any], expected: ChangeBudget) -> None:
    assert change_budget_from_spec(spec) == expected


@pytest.mark.parametrize(
    ("budget", "pods", "healthy", "expected"),
    [
        pytest.param(ChangeBudget(1), 3, 3, DeletionAllowance(1, False), id="all healthy"),
        pytest.param(ChangeBudget(1), 3, 2, DeletionAllowance(0, True), id="one down: reached"),
        pytest.param(ChangeBudget(2), 5, 4, DeletionAllowance(1, False), id="2 of 5, one down"),
        pytest.param(ChangeBudget(1), 2, 0, DeletionAllowance(-1, True), id="over budget"),
        pytest.param(ChangeBudget(6), 3, 0, DeletionAllowance(3, False), id="large budget"),
        pytest.param(ChangeBudget(None), 4, 1, DeletionAllowance(4, False), id="unbounded"),
    ],
)
def test_deletion_allowance(
    budget: ChangeBudget, pods: int, healthy: int, expected: DeletionAllowance
) -> None:
    assert deletion_allowance(budget, pods=pods, healthy=healthy) == expected


@pytest.mark.parametrize(
    ("budget", "ready", "desired", "expected"),
    [
        # ECK's Test_calculateRemovalsAllowed.
        pytest.param(ChangeBudget(None), 5, 5, None, id="unbounded"),
        pytest.param(ChangeBudget(2), 10, 3, 9, id="scaling down, at least one node up"),
        pytest.param(ChangeBudget(1), 3, 5, 0, id="scaling up, can't remove anything"),
        # ECK's Test_newDownscaleState: 4 wanted, none or 3 ready, default budget.
        pytest.param(ChangeBudget(1), 0, 4, 0, id="nothing ready"),
        pytest.param(ChangeBudget(1), 3, 4, 0, id="3 of 4 ready"),
        pytest.param(ChangeBudget(1), 4, 4, 1, id="all ready: one may go"),
    ],
)
def test_removals_allowed(
    budget: ChangeBudget, ready: int, desired: int, expected: int | None
) -> None:
    assert removals_allowed(budget, ready_pods=ready, desired_nodes=desired) == expected


@pytest.mark.parametrize(
    ("max_surge", "actual", "expected", "allowed"),
    [
        # ECK's Test_calculateCreatesAllowed ("6 budget, 10->5" is named "want 4" there but asserts 1).
        pytest.param(None, 5, 6, None, id="nil budget, 5->6, unbounded"),
        pytest.param(0, 5, 5, 0, id="0 budget, 5->5"),
        pytest.param(1, 5, 5, 1, id="1 budget, 5->5"),
        pytest.param(2, 5, 5, 2, id="2 budget, 5->5"),
        pytest.param(2, 3, 5, 4, id="2 budget, 3->5"),
        pytest.param(6, 10, 5, 1, id="6 budget, 10->5"),
        # ECK's Test_newUpscaleState rows.
        pytest.param(0, 3, 3, 0, id="3 present, 3 target, no surge"),
        pytest.param(0, 6, 6, 0, id="2 StatefulSets, 6 present, 6 target"),
        pytest.param(0, 2, 3, 1, id="2 present, 3 target: 1 create"),
        pytest.param(3, 0, 5, 8, id="0 present, 5 target, surge 3: 8"),
        pytest.param(3, 5, 3, 1, id="5 present, 3 target, surge 3: 1"),
        pytest.param(3, 0, 3, 6, id="new cluster of 3, surge 3: 6"),
    ],
)
def test_creates_allowed(
    max_surge: int | None, actual: int, expected: int, allowed: int | None
) -> None:
    budget = ChangeBudget(max_unavailable=1, max_surge=max_surge)
    assert creates_allowed(budget, actual_nodes=actual, expected_nodes=expected) == allowed
