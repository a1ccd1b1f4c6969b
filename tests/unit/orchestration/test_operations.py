"""What the status says: the ``upgrade`` list from a rolling decision, ECK's
``inProgressOperations`` shape and its ``lastUpdatedTime`` rules, and condition messages that
name predicates and moving shards and never call a node up to date while it is still to change."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.orchestration.downscale import DownscaleDecision, LeavingNode
from stackflow.stack.elasticsearch.orchestration.operations import (
    PREDICATE_FAILED_MESSAGE,
    UpgradedNode,
    in_progress_operations,
    progress_messages,
    reconciliation_message,
    upgrade_nodes,
)
from stackflow.stack.elasticsearch.orchestration.rolling import (
    FULL_RESTART_DELETE_MESSAGE,
    FULL_RESTART_PENDING_MESSAGE,
    ROLLING_DELETE_MESSAGE,
    HeldBack,
    RollingDecision,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import ClusterView, ExpectedStatefulSet
from stackflow.stack.elasticsearch.orchestration.upscale import NewNode, UpscalePlan
from tests.unit.orchestration.fixtures import node, shard

ONE_MASTER = HeldBack("es-1", "one_master_at_a_time", "masters change one at a time")


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        pytest.param(RollingDecision(reported=False), None, id="not reported: the list stays"),
        pytest.param(RollingDecision(), (), id="nothing to upgrade: the list empties"),
        pytest.param(
            RollingDecision(
                to_upgrade=("es-2", "es-1", "es-0"), held_back=(ONE_MASTER,), deleted=("es-2",)
            ),
            (
                UpgradedNode("es-0", "PENDING"),
                UpgradedNode("es-1", "PENDING", PREDICATE_FAILED_MESSAGE, "one_master_at_a_time"),
                UpgradedNode("es-2", "DELETED", ROLLING_DELETE_MESSAGE),
            ),
            id="pending, held back by a predicate, deleted",
        ),
        pytest.param(
            RollingDecision(
                to_upgrade=("es-1", "es-0"),
                full_restart=True,
                delete_message=FULL_RESTART_DELETE_MESSAGE,
                pending_message=FULL_RESTART_PENDING_MESSAGE,
            ),
            (
                UpgradedNode("es-0", "PENDING", FULL_RESTART_PENDING_MESSAGE),
                UpgradedNode("es-1", "PENDING", FULL_RESTART_PENDING_MESSAGE),
            ),
            id="full restart waiting",
        ),
        pytest.param(
            RollingDecision(
                to_upgrade=("es-1", "es-0"),
                deleted=("es-1", "es-0"),
                full_restart=True,
                delete_message=FULL_RESTART_DELETE_MESSAGE,
            ),
            (
                UpgradedNode("es-0", "DELETED", FULL_RESTART_DELETE_MESSAGE),
                UpgradedNode("es-1", "DELETED", FULL_RESTART_DELETE_MESSAGE),
            ),
            id="full restart done",
        ),
    ],
)
def test_upgrade_nodes(
    decision: RollingDecision, expected: tuple[UpgradedNode, ...] | None
) -> None:
    assert upgrade_nodes(decision) == expected


T0, T1 = "2025-01-01T00:00:00Z", "2025-01-01T00:05:00Z"
UPGRADE_ENTRY = {"name": "es-0", "status": "PENDING"}
PREVIOUS: dict[str, Any] = {
    "upgrade": {"lastUpdatedTime": T0, "nodes": [UPGRADE_ENTRY]},
    "upscale": {"lastUpdatedTime": T0},
    "downscale": {
        "lastUpdatedTime": T0,
        "nodes": [{"name": "es-3", "shutdownStatus": "STALLED"}],
        "stalled": True,
    },
}


@pytest.mark.parametrize(
    ("previous", "decisions", "expected"),
    [
        pytest.param(
            None,
            {},
            {
                "upgrade": {"lastUpdatedTime": T1},
                "upscale": {"lastUpdatedTime": T1},
                "downscale": {"lastUpdatedTime": T1},
            },
            id="first status: every operation gets a time",
        ),
        pytest.param(PREVIOUS, {}, PREVIOUS, id="nothing reached: everything stays"),
        pytest.param(
            PREVIOUS,
            {"downscale": DownscaleDecision(nodes=(LeavingNode("es-3", "STALLED"),))},
            PREVIOUS,
            id="still stalled: nothing changes",
        ),
        pytest.param(
            PREVIOUS,
            {"downscale": DownscaleDecision(nodes=(LeavingNode("es-3", "COMPLETE"),))},
            PREVIOUS
            | {
                "downscale": {
                    "lastUpdatedTime": T1,
                    "nodes": [{"name": "es-3", "shutdownStatus": "COMPLETE"}],
                }
            },
            id="no longer stalled: the flag goes",
        ),
        pytest.param(
            PREVIOUS,
            {"upgrade": RollingDecision(to_upgrade=("es-0",))},
            PREVIOUS,
            id="same upgrade list: its time stays",
        ),
        pytest.param(
            PREVIOUS,
            {"upgrade": RollingDecision(to_upgrade=("es-1", "es-0"), held_back=(ONE_MASTER,))},
            PREVIOUS
            | {
                "upgrade": {
                    "lastUpdatedTime": T1,
                    "nodes": [
                        UPGRADE_ENTRY,
                        {
                            "name": "es-1",
                            "status": "PENDING",
                            "message": PREDICATE_FAILED_MESSAGE,
                            "predicate": "one_master_at_a_time",
                        },
                    ],
                },
            },
            id="a changed upgrade list gets the new time",
        ),
        pytest.param(
            PREVIOUS,
            {
                "upgrade": RollingDecision(),
                "downscale": DownscaleDecision(
                    nodes=(LeavingNode("es-3", "STALLED", "no room for [i][0]"),)
                ),
            },
            PREVIOUS
            | {
                "upgrade": {"lastUpdatedTime": T1},
                "downscale": {
                    "lastUpdatedTime": T1,
                    "nodes": [
                        {
                            "name": "es-3",
                            "shutdownStatus": "STALLED",
                            "explanation": "no room for [i][0]",
                        }
                    ],
                    "stalled": True,
                },
            },
            id="an emptied list and a stalled explanation",
        ),
        pytest.param(
            PREVIOUS,
            {
                "upscale": UpscalePlan(
                    {"es": 2},
                    (NewNode("es-1", "EXPECTED", "Upscaling StatefulSet es from 1 to 2 replicas"),),
                )
            },
            PREVIOUS
            | {
                "upscale": {
                    "lastUpdatedTime": T1,
                    "nodes": [
                        {
                            "name": "es-1",
                            "status": "EXPECTED",
                            "message": "Upscaling StatefulSet es from 1 to 2 replicas",
                        }
                    ],
                },
            },
            id="upscale nodes",
        ),
    ],
)
def test_in_progress_operations(
    previous: dict[str, Any] | None, decisions: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert in_progress_operations(previous=previous, now=T1, **decisions) == expected


EXPECTED_3 = (ExpectedStatefulSet("es", 3),)


def pods(*specs: tuple[str, bool]) -> list[Any]:
    return [node(name, healthy=ready).pod() for name, ready in specs]


READY_3 = pods(("es-0", True), ("es-1", True), ("es-2", True))


@pytest.mark.parametrize(
    ("expected", "listed", "decisions", "cluster", "message"),
    [
        pytest.param(
            EXPECTED_3, READY_3, {}, None, "3 of 3 nodes ready and up to date", id="converged"
        ),
        pytest.param(
            EXPECTED_3,
            READY_3,
            {"upgrade": RollingDecision(to_upgrade=("es-2",), reported=True)},
            None,
            "2 of 3 nodes ready and up to date; still to restart: es-2",
            id="a restart pending is never up to date",
        ),
        pytest.param(
            EXPECTED_3,
            READY_3,
            {
                "upgrade": RollingDecision(
                    to_upgrade=("es-2", "es-1"), held_back=(ONE_MASTER,), deleted=("es-2",)
                )
            },
            None,
            "1 of 3 nodes ready and up to date; restarting es-2; "
            "es-1 waits for one_master_at_a_time: masters change one at a time",
            id="restarting one, another held back by a predicate",
        ),
        pytest.param(
            EXPECTED_3,
            READY_3,
            {
                "upgrade": RollingDecision(
                    to_upgrade=("es-2",), selected=("es-2",), waiting_for_shutdown=("es-2",)
                )
            },
            None,
            "2 of 3 nodes ready and up to date; waiting for the restart shutdown of es-2",
            id="waiting for a restart shutdown",
        ),
        pytest.param(
            (ExpectedStatefulSet("new", 3),),
            pods(("new-0", True), ("new-1", True), ("new-2", True), ("old-0", True)),
            {
                "upgrade": RollingDecision(to_upgrade=("old-0",)),
                "downscale": DownscaleDecision(
                    desired_leaving=("old-0",),
                    leaving=("old-0",),
                    nodes=(LeavingNode("old-0", "IN_PROGRESS"),),
                ),
            },
            ClusterView(
                shards=(
                    shard("logs", "0", "STARTED", "old-0", "p"),
                    shard("logs", "1", "STARTED", "old-0", "r"),
                )
            ),
            "3 of 4 nodes ready and up to date; still to restart: old-0; moving data off old-0 (logs[0], logs[1])",
            id="a renamed node set: the old node counts until it is gone",
        ),
        pytest.param(
            EXPECTED_3,
            pods(("es-0", True), ("es-1", True)),
            {"upscale": UpscalePlan({"es": 3}, (NewNode("es-2", "EXPECTED", "…"),))},
            None,
            "2 of 3 nodes ready and up to date; creating es-2",
            id="a node being created",
        ),
        pytest.param(
            EXPECTED_3,
            pods(("es-0", True)),
            {
                "upscale": UpscalePlan(
                    {"es": 2}, (NewNode("es-1", "EXPECTED", "…"), NewNode("es-2", "PENDING", "…"))
                )
            },
            None,
            "1 of 3 nodes ready and up to date; creating es-1; waiting for maxSurge to create es-2",
            id="maxSurge holds a creation",
        ),
        pytest.param(
            (ExpectedStatefulSet("es", 2),),
            READY_3,
            {
                "downscale": DownscaleDecision(
                    desired_leaving=("es-2",),
                    leaving=("es-2",),
                    nodes=(LeavingNode("es-2", "STALLED", "no other node can hold [i][0]"),),
                )
            },
            None,
            "2 of 3 nodes ready and up to date; removal of es-2 is stalled: no other node can hold [i][0]",
            id="a stalled removal",
        ),
        pytest.param(
            (ExpectedStatefulSet("es", 1),),
            READY_3,
            {
                "downscale": DownscaleDecision(
                    desired_leaving=("es-2", "es-1"),
                    refused=(("es", "A master node is already in the process of being removed"),),
                    nodes=(LeavingNode("es-1", "NOT_STARTED"), LeavingNode("es-2", "NOT_STARTED")),
                )
            },
            None,
            "1 of 3 nodes ready and up to date; es: A master node is already in the process of being removed",
            id="the invariants hold a removal back",
        ),
        pytest.param(
            EXPECTED_3,
            pods(("es-0", True), ("es-1", False), ("es-2", True)),
            {},
            None,
            "2 of 3 nodes ready and up to date",
            id="a node not ready",
        ),
    ],
)
def test_reconciliation_message(
    expected: tuple[ExpectedStatefulSet, ...],
    listed: list[Any],
    decisions: dict[str, Any],
    cluster: ClusterView | None,
    message: str,
) -> None:
    assert (
        reconciliation_message(expected=expected, pods=listed, cluster=cluster, **decisions)
        == message
    )
    summary = message.split(";")[0]
    up_to_date, total = int(summary.split()[0]), int(summary.split()[2])
    pending = bool(progress_messages(cluster=cluster, **decisions))
    # Never "n of n ready and up to date" while anything is still to change.
    assert (up_to_date < total) or not pending
