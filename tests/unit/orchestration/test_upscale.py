"""Upscales within ``maxSurge``: ECK's ``Test_podsToCreate``, ``Test_adjustStatefulSetReplicas``,
``TestUpscaleState_limitNodesCreation`` and the §3.1 examples, with the nodes' statuses and
messages as ``status.inProgressOperations.upscale`` shows them."""

from __future__ import annotations

import pytest

from stackflow.stack.elasticsearch.orchestration.budget import ChangeBudget
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ExpectedStatefulSet,
    StatefulSetState,
)
from stackflow.stack.elasticsearch.orchestration.upscale import (
    LIMITED_BY_MAX_SURGE,
    UPSCALE_IN_PROGRESS_REASON,
    NewNode,
    UpscalePlan,
    grant_creations,
    plan_upscale,
    pods_to_create,
)


def actual(**replicas: int) -> tuple[StatefulSetState, ...]:
    return tuple(
        StatefulSetState(name.replace("_", "-"), count) for name, count in replicas.items()
    )


def expected(**replicas: int) -> tuple[ExpectedStatefulSet, ...]:
    return tuple(
        ExpectedStatefulSet(name.replace("_", "-"), count) for name, count in replicas.items()
    )


@pytest.mark.parametrize(
    ("current", "wanted", "names"),
    [
        # ECK's Test_podsToCreate.
        pytest.param(
            actual(sts1=5),
            expected(sts1=8, sts2=2),
            ["sts1-5", "sts1-6", "sts1-7", "sts2-0", "sts2-1"],
            id="StatefulSet does not exist yet",
        ),
        pytest.param(
            actual(sts1=5),
            expected(sts1=0, sts2=2),
            ["sts2-0", "sts2-1"],
            id="StatefulSet with no replica",
        ),
        pytest.param(
            actual(sts1=5), expected(sts2=2), ["sts2-0", "sts2-1"], id="StatefulSet removed"
        ),
    ],
)
def test_pods_to_create(
    current: tuple[StatefulSetState, ...], wanted: tuple[ExpectedStatefulSet, ...], names: list[str]
) -> None:
    assert sorted(pods_to_create(current, wanted)) == names


def expected_nodes(statefulset: str, start: int, stop: int, before: int) -> list[NewNode]:
    message = f"Upscaling StatefulSet {statefulset} from {before} to {stop} replicas"
    return [NewNode(f"{statefulset}-{i}", "EXPECTED", message) for i in range(start, stop)]


def pending_nodes(statefulset: str, start: int, stop: int) -> list[NewNode]:
    return [
        NewNode(f"{statefulset}-{i}", "PENDING", LIMITED_BY_MAX_SURGE) for i in range(start, stop)
    ]


@pytest.mark.parametrize(
    ("current", "wanted", "allowance", "replicas", "nodes"),
    [
        # ECK's Test_adjustStatefulSetReplicas.
        pytest.param(
            actual(),
            expected(new_sset=3),
            3,
            {"new-sset": 3},
            expected_nodes("new-sset", 0, 3, 0),
            id="new StatefulSet to create",
        ),
        pytest.param(
            actual(sset=3),
            expected(sset=3),
            3,
            {"sset": 3},
            [],
            id="same StatefulSet already exists",
        ),
        pytest.param(
            actual(sset=3), expected(sset=1), 3, {"sset": 3}, [], id="downscale case: replicas kept"
        ),
        pytest.param(
            actual(sset=3),
            expected(sset=5),
            3,
            {"sset": 5},
            expected_nodes("sset", 3, 5, 3),
            id="upscale case: data nodes",
        ),
        pytest.param(
            actual(sset=3),
            expected(sset=5),
            1,
            {"sset": 4},
            expected_nodes("sset", 3, 4, 3) + pending_nodes("sset", 4, 5),
            id="upscale case: master nodes (one allowed by maxSurge)",
        ),
        pytest.param(
            actual(sset=3),
            expected(sset_2=3),
            3,
            {"sset-2": 3},
            expected_nodes("sset-2", 0, 3, 0),
            id="upscale case: new additional master sset",
        ),
        # ECK's TestUpscaleState_limitNodesCreation.
        pytest.param(
            actual(sset=1),
            expected(sset=3),
            2,
            {"sset": 3},
            expected_nodes("sset", 1, 3, 1),
            id="1 to 3: goes through",
        ),
        pytest.param(
            actual(sset=1),
            expected(sset=4),
            2,
            {"sset": 3},
            expected_nodes("sset", 1, 3, 1) + pending_nodes("sset", 3, 4),
            id="1 to 4: limited to 3",
        ),
        pytest.param(
            actual(sset=3),
            expected(sset=4),
            0,
            {"sset": 3},
            pending_nodes("sset", 3, 4),
            id="3 to 4, no creates allowed",
        ),
        # The allowance is shared in spec order.
        pytest.param(
            actual(a=1, b=1),
            expected(a=3, b=3),
            3,
            {"a": 3, "b": 2},
            expected_nodes("a", 1, 3, 1) + expected_nodes("b", 1, 2, 1) + pending_nodes("b", 2, 3),
            id="two StatefulSets share the allowance in spec order",
        ),
        pytest.param(
            actual(a=1),
            expected(a=3, b=2),
            None,
            {"a": 3, "b": 2},
            expected_nodes("a", 1, 3, 1) + expected_nodes("b", 0, 2, 0),
            id="unbounded",
        ),
    ],
)
def test_grant_creations(
    current: tuple[StatefulSetState, ...],
    wanted: tuple[ExpectedStatefulSet, ...],
    allowance: int | None,
    replicas: dict[str, int],
    nodes: list[NewNode],
) -> None:
    plan = grant_creations(current, wanted, allowance)
    assert dict(plan.replicas) == replicas
    assert list(plan.nodes) == sorted(nodes, key=lambda n: n.name)


@pytest.mark.parametrize(
    ("max_surge", "current", "wanted", "replicas"),
    [
        # The §3.1 examples: surge 0, 2→3 ⇒ 1 create; surge 3, 0→5 ⇒ all 5; surge 3, 5→3 ⇒ none.
        pytest.param(0, actual(es=2), expected(es=3), {"es": 3}, id="maxSurge 0, 2 to 3"),
        pytest.param(3, actual(), expected(es=5), {"es": 5}, id="maxSurge 3, 0 to 5"),
        pytest.param(
            3,
            actual(es=5),
            expected(es=3),
            {"es": 5},
            id="maxSurge 3, 5 to 3: the downscale comes later",
        ),
        pytest.param(
            0,
            actual(old=3),
            expected(new=3),
            {"new": 0},
            id="rename with maxSurge 0 waits for the old set to drain",
        ),
        pytest.param(
            1,
            actual(old=3),
            expected(new=3),
            {"new": 1},
            id="rename with maxSurge 1: one at a time",
        ),
        pytest.param(
            None, actual(old=3), expected(new=3), {"new": 3}, id="rename, unbounded: all at once"
        ),
        pytest.param(
            0,
            actual(),
            expected(masters=3, data=2),
            {"masters": 3, "data": 2},
            id="new cluster: every master at once",
        ),
    ],
)
def test_plan_upscale(
    max_surge: int | None,
    current: tuple[StatefulSetState, ...],
    wanted: tuple[ExpectedStatefulSet, ...],
    replicas: dict[str, int],
) -> None:
    plan = plan_upscale(current, wanted, ChangeBudget(max_unavailable=1, max_surge=max_surge))
    assert dict(plan.replicas) == replicas


def test_requeue_reason_while_pods_are_added() -> None:
    assert UpscalePlan().requeue_reason is None
    assert (
        plan_upscale(actual(es=1), expected(es=2), ChangeBudget()).requeue_reason
        == UPSCALE_IN_PROGRESS_REASON
    )
