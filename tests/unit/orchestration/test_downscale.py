"""Downscales: who leaves, ECK's invariants (``downscale_invariants_test.go``), the plan per
StatefulSet (``Test_calculateDownscales``), data migration by allocation filter
(``migrate_data_test.go``) or ``remove`` node shutdown (``shutdown/node_test.go``), the walk that
decides the replica counts (``TestHandleDownscale`` pass by pass, ``Test_calculatePerformableDownscale``,
``Test_attemptDownscale``, ``Test_doDownscale_zen2VotingConfigExclusions``), voting exclusions
(``voting_exclusions_test.go``) and the refusal of a spec without master."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from stackflow.stack.elasticsearch.config import DEFAULT_ROLES
from stackflow.stack.elasticsearch.orchestration.budget import ChangeBudget
from stackflow.stack.elasticsearch.orchestration.downscale import (
    CANNOT_CLEAR_VOTING_EXCLUSIONS_REASON,
    DELAYED_MESSAGE,
    DOWNSCALE_IN_PROGRESS_REASON,
    LAST_RUNNING_MASTER,
    ONE_MASTER_AT_A_TIME,
    PHASE_MIGRATING_DATA,
    PHASE_STALLED,
    RESPECT_MAX_UNAVAILABLE,
    DownscaleDecision,
    DownscaleEvent,
    DownscalePlan,
    DownscaleSnapshot,
    DownscaleState,
    LeavingNode,
    StatefulSetDownscale,
    VotingExclusionsClearing,
    calculate_downscales,
    check_invariants,
    clear_voting_exclusions,
    downscale_state,
    leaving_nodes,
    master_required_problem,
    migration_status,
    migration_steps,
    plan_downscale,
    record_removal,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ClusterHealth,
    ClusterNode,
    ClusterView,
    ExpectedStatefulSet,
    NodeShutdown,
    PodState,
    Shard,
    SnapshotError,
    StatefulSetState,
)
from stackflow.stack.elasticsearch.orchestration.steps import (
    AddVotingExclusions,
    ClearVotingExclusions,
    DeleteNodeShutdown,
    DeleteStatefulSet,
    ExcludeFromAllocation,
    PutNodeShutdown,
    ScaleStatefulSet,
    Step,
)
from tests.unit.orchestration.fixtures import node, roles, shard

MASTER = roles("master")
DATA = roles("data")


def sset(name: str, replicas: int, *, master: bool = False) -> StatefulSetState:
    return StatefulSetState(name, replicas, master=master, version="7.2.0")


def pods_of(
    name: str, ordinals: Sequence[int], *, master: bool = False, ready: bool = True
) -> list[PodState]:
    node_roles = ("master",) if master else ("data",)
    return [
        node(f"{name}-{i}", *node_roles, version="7.2.0", healthy=ready).pod() for i in ordinals
    ]


def legacy_cluster(
    pods: Sequence[PodState], shards: Sequence[Shard] = (), **counters: int
) -> ClusterView:
    return ClusterView(
        health=ClusterHealth("green", **counters),
        nodes=tuple(ClusterNode(pod.name, pod.name) for pod in pods),
        shards=tuple(shards),
    )


UNBOUNDED = ChangeBudget(max_unavailable=None)
M1, M3, D4 = "ssetMaster1Replicas", "ssetMaster3Replicas", "ssetData4Replicas"
SPEC = (ExpectedStatefulSet(M3, 1, MASTER), ExpectedStatefulSet(D4, 2, DATA))
ON_DATA_2 = (shard("index-1", "0", "STARTED", f"{D4}-2", "p"),)
ON_DATA_1 = (shard("index-1", "0", "STARTED", f"{D4}-1", "p"),)


def handle_downscale_pass(
    actual: Sequence[StatefulSetState],
    pods: Sequence[PodState],
    shards: Sequence[Shard],
    expected: Sequence[ExpectedStatefulSet] = SPEC,
) -> DownscaleDecision:
    return plan_downscale(
        DownscaleSnapshot(
            spec_version="7.2.0",
            budget=ChangeBudget(1),
            statefulsets=tuple(actual),
            expected=tuple(expected),
            pods=tuple(pods),
            cluster=legacy_cluster(pods, shards),
        )
    )


@pytest.mark.parametrize(
    ("actual", "pods", "shards", "expected", "steps", "replicas", "nodes", "requeue"),
    [
        # ECK's TestHandleDownscale, pass after pass: masters 1→0 and 3→1, data 4→2 (ECK lists
        # the StatefulSets by name, so the data nodes come first in the allocation filter).
        pytest.param(
            [sset(M1, 1, master=True), sset(M3, 3, master=True), sset(D4, 4)],
            pods_of(M1, [0], master=True)
            + pods_of(M3, [0, 1, 2], master=True)
            + pods_of(D4, [0, 1, 2, 3]),
            ON_DATA_2,
            SPEC,
            [
                ExcludeFromAllocation(f"{D4}-3,{D4}-2,{M1}-0"),
                ScaleStatefulSet(D4, 3),
                AddVotingExclusions((f"{M1}-0",)),
                ScaleStatefulSet(M1, 0),
            ],
            {D4: 3, M1: 0, M3: 3},
            {
                f"{D4}-2": "IN_PROGRESS",
                f"{D4}-3": "COMPLETE",
                f"{M1}-0": "COMPLETE",
                f"{M3}-1": "NOT_STARTED",
                f"{M3}-2": "NOT_STARTED",
            },
            (
                DOWNSCALE_IN_PROGRESS_REASON,
                f"Downscale in progress, delayed nodes: [{M3}-1 {M3}-2]",
            ),
            id="pass 1: one master, data 4 to 3 (a shard is still on ordinal 2)",
        ),
        pytest.param(
            [sset(D4, 3), sset(M1, 0, master=True), sset(M3, 3, master=True)],
            pods_of(M3, [0, 1, 2], master=True) + pods_of(D4, [0, 1, 2]),
            ON_DATA_2,
            SPEC,
            [
                DeleteStatefulSet(M1),
                ExcludeFromAllocation(f"{D4}-2,{M3}-2"),
                AddVotingExclusions((f"{M3}-2",)),
                ScaleStatefulSet(M3, 2),
            ],
            {D4: 3, M3: 2},
            {f"{D4}-2": "IN_PROGRESS", f"{M3}-1": "NOT_STARTED", f"{M3}-2": "COMPLETE"},
            (DOWNSCALE_IN_PROGRESS_REASON, f"Downscale in progress, delayed nodes: [{M3}-1]"),
            id="pass 2: the empty master StatefulSet goes, the next master leaves",
        ),
        pytest.param(
            [sset(D4, 3), sset(M3, 2, master=True)],
            pods_of(M3, [0, 1], master=True) + pods_of(D4, [0, 1, 2]),
            ON_DATA_2,
            SPEC,
            [
                ExcludeFromAllocation(f"{D4}-2,{M3}-1"),
                AddVotingExclusions((f"{M3}-1",)),
                ScaleStatefulSet(M3, 1),
            ],
            {D4: 3, M3: 1},
            {f"{D4}-2": "IN_PROGRESS", f"{M3}-1": "COMPLETE"},
            (DOWNSCALE_IN_PROGRESS_REASON,),
            id="pass 3: the last master to leave",
        ),
        pytest.param(
            [sset(D4, 3), sset(M3, 1, master=True)],
            pods_of(M3, [0], master=True) + pods_of(D4, [0, 1, 2]),
            ON_DATA_1,
            SPEC,
            [ExcludeFromAllocation(f"{D4}-2"), ScaleStatefulSet(D4, 2)],
            {D4: 2, M3: 1},
            {f"{D4}-2": "COMPLETE"},
            (),
            id="pass 4: the shard moved, data 3 to 2",
        ),
        pytest.param(
            [sset(D4, 2), sset(M3, 1, master=True)],
            pods_of(M3, [0], master=True) + pods_of(D4, [0, 1]),
            ON_DATA_1,
            SPEC,
            [ExcludeFromAllocation("none_excluded")],
            {D4: 2, M3: 1},
            {},
            (),
            id="pass 5: nobody leaves, the filter is cleared",
        ),
        pytest.param(
            [sset(D4, 2), sset(M3, 1, master=True), sset("ssetToRemove", 2)],
            pods_of(M3, [0], master=True) + pods_of(D4, [0, 1]) + pods_of("ssetToRemove", [0, 1]),
            ON_DATA_1,
            SPEC,
            [
                ExcludeFromAllocation("ssetToRemove-1,ssetToRemove-0"),
                ScaleStatefulSet("ssetToRemove", 0),
            ],
            {D4: 2, M3: 1, "ssetToRemove": 0},
            {"ssetToRemove-0": "COMPLETE", "ssetToRemove-1": "COMPLETE"},
            (),
            id="pass 6: a StatefulSet without node set goes to 0",
        ),
        pytest.param(
            [sset(D4, 2), sset(M3, 1, master=True), sset("ssetToRemove", 0)],
            pods_of(M3, [0], master=True) + pods_of(D4, [0, 1]),
            ON_DATA_1,
            SPEC,
            [DeleteStatefulSet("ssetToRemove"), ExcludeFromAllocation("none_excluded")],
            {D4: 2, M3: 1},
            {},
            (),
            id="pass 7: then it is deleted",
        ),
        pytest.param(
            [sset("es-old", 2), sset("es-new", 2)],
            pods_of("es-old", [0, 1]) + pods_of("es-new", [0, 1]),
            (shard("i", "0", "STARTED", "es-old-0", "p"),),
            (ExpectedStatefulSet("es-new", 2, DEFAULT_ROLES),),
            [ExcludeFromAllocation("es-old-1,es-old-0"), ScaleStatefulSet("es-old", 1)],
            {"es-new": 2, "es-old": 1},
            {"es-old-0": "IN_PROGRESS", "es-old-1": "COMPLETE"},
            (DOWNSCALE_IN_PROGRESS_REASON,),
            id="a renamed node set drains the old StatefulSet the same way",
        ),
    ],
)
def test_handle_downscale(
    actual: list[StatefulSetState],
    pods: list[PodState],
    shards: tuple[Shard, ...],
    expected: tuple[ExpectedStatefulSet, ...],
    steps: list[Step],
    replicas: dict[str, int],
    nodes: dict[str, str],
    requeue: tuple[str, ...],
) -> None:
    decision = handle_downscale_pass(actual, pods, shards, expected)
    assert decision.error is None
    assert list(decision.steps) == steps
    assert dict(decision.replicas) == replicas
    assert {n.name: n.shutdown_status for n in decision.nodes} == nodes
    assert decision.requeue_reasons == requeue


def test_handle_downscale_reports_data_migration() -> None:
    decision = handle_downscale_pass(
        [sset(D4, 4)], pods_of(D4, [0, 1, 2, 3]), ON_DATA_2, (ExpectedStatefulSet(D4, 2, DATA),)
    )
    assert decision.phase == PHASE_MIGRATING_DATA
    assert decision.events == (DownscaleEvent("Normal", "Delayed", DELAYED_MESSAGE),)
    assert (decision.desired_leaving, decision.leaving) == (
        (f"{D4}-3", f"{D4}-2"),
        (f"{D4}-3", f"{D4}-2"),
    )


S0, S1, S2 = (StatefulSetState(f"sset{i}", 3) for i in range(3))


@pytest.mark.parametrize(
    ("expected", "actual", "plan"),
    [
        # ECK's Test_calculateDownscales.
        pytest.param((), (), DownscalePlan(), id="no actual statefulset: nothing to do"),
        pytest.param(
            (
                ExpectedStatefulSet("sset0", 4),
                ExpectedStatefulSet("sset1", 5),
                ExpectedStatefulSet("sset2", 3),
            ),
            (S0, S1, S2),
            DownscalePlan(),
            id="upscale: nothing to do",
        ),
        pytest.param(
            tuple(ExpectedStatefulSet(s.name, 3) for s in (S0, S1, S2)),
            (S0, S1, S2),
            DownscalePlan(),
            id="expected == actual",
        ),
        pytest.param(
            (),
            (S0, S1, S2),
            DownscalePlan(
                (
                    StatefulSetDownscale("sset0", False, 3, 0, 0),
                    StatefulSetDownscale("sset1", False, 3, 0, 0),
                    StatefulSetDownscale("sset2", False, 3, 0, 0),
                )
            ),
            id="downscale all ssets (none deleted yet)",
        ),
        pytest.param(
            (
                ExpectedStatefulSet("sset0", 3),
                ExpectedStatefulSet("sset1", 2),
                ExpectedStatefulSet("sset2", 1),
            ),
            (S0, S1, S2),
            DownscalePlan(
                (
                    StatefulSetDownscale("sset1", False, 3, 2, 2),
                    StatefulSetDownscale("sset2", False, 3, 1, 1),
                )
            ),
            id="downscale 2 out of 3 StatefulSets",
        ),
        pytest.param(
            (ExpectedStatefulSet("sset2", 1), ExpectedStatefulSet("sset3", 0)),
            (
                StatefulSetState("sset1", 0),
                StatefulSetState("sset2", 0),
                StatefulSetState("sset3", 1),
            ),
            DownscalePlan((StatefulSetDownscale("sset3", False, 1, 0, 0),), ("sset1",)),
            id="delete actual statefulsets with 0 replicas when not referenced by a nodeSet",
        ),
        pytest.param(
            (ExpectedStatefulSet("es-es-nodeset-2", 1), ExpectedStatefulSet("es-es-nodeset-3", 0)),
            (StatefulSetState("es-es-nodeset-1", 0), StatefulSetState("es-es-nodeset-3", 0)),
            DownscalePlan((), ("es-es-nodeset-1",)),
            id="do not delete actual statefulsets with 0 replicas if referenced by a nodeSet",
        ),
    ],
)
def test_calculate_downscales(
    expected: tuple[ExpectedStatefulSet, ...],
    actual: tuple[StatefulSetState, ...],
    plan: DownscalePlan,
) -> None:
    assert calculate_downscales(actual, expected, DownscaleState(0, None)) == plan
    assert calculate_downscales(actual, expected, None) == plan


def test_calculate_downscales_reports_what_the_invariants_refuse() -> None:
    actual = (sset("a-masters", 3, master=True), sset("b-masters", 3, master=True), sset("data", 3))
    expected = (ExpectedStatefulSet("data", 1, DATA),)
    plan = calculate_downscales(
        actual, expected, DownscaleState(running_masters=6, removals_allowed=2)
    )
    assert plan.downscales == (
        StatefulSetDownscale("a-masters", True, 3, 2, 0),
        StatefulSetDownscale("data", False, 3, 2, 1),
    )
    assert plan.refused == (("b-masters", ONE_MASTER_AT_A_TIME),)


@pytest.mark.parametrize(
    ("state", "master", "allowed", "reason"),
    [
        # ECK's Test_checkDownscaleInvariants.
        pytest.param(
            DownscaleState(1, 1, True), False, 1, "", id="data node within maxUnavailable"
        ),
        pytest.param(
            DownscaleState(1, 0, True),
            False,
            0,
            RESPECT_MAX_UNAVAILABLE,
            id="data node, maxUnavailable disallows",
        ),
        pytest.param(DownscaleState(2, 1, False), True, 1, "", id="one master if another one runs"),
        pytest.param(
            DownscaleState(1, 1, False), True, 0, LAST_RUNNING_MASTER, id="not the last master"
        ),
        pytest.param(
            DownscaleState(2, 2, True),
            True,
            0,
            ONE_MASTER_AT_A_TIME,
            id="not while a master leaves",
        ),
        pytest.param(
            DownscaleState(2, 0, False),
            True,
            0,
            RESPECT_MAX_UNAVAILABLE,
            id="masters bounded by maxUnavailable",
        ),
        # Beyond ECK's table.
        pytest.param(
            DownscaleState(5, None, False), True, 1, "", id="one master at most, unbounded budget"
        ),
        pytest.param(DownscaleState(0, 2, False), False, 1, "", id="requested 1 of 2 left"),
    ],
)
def test_check_invariants(state: DownscaleState, master: bool, allowed: int, reason: str) -> None:
    assert check_invariants(state, master=master, requested=1) == (allowed, reason)


def test_check_invariants_caps_masters_at_one_and_others_at_the_budget() -> None:
    assert check_invariants(DownscaleState(3, 5), master=True, requested=3) == (1, "")
    assert check_invariants(DownscaleState(3, 2), master=False, requested=3) == (2, "")


@pytest.mark.parametrize(
    ("state", "master", "removals", "expected"),
    [
        # ECK's Test_downscaleState_recordRemoval.
        pytest.param(
            DownscaleState(2, 1), False, 1, DownscaleState(2, 0), id="a data node uses the budget"
        ),
        pytest.param(DownscaleState(1, 3), False, 3, DownscaleState(1, 0), id="many data nodes"),
        pytest.param(DownscaleState(2, 2), True, 1, DownscaleState(1, 1, True), id="a master"),
        pytest.param(
            DownscaleState(2, None), True, 1, DownscaleState(1, None, True), id="unbounded budget"
        ),
        pytest.param(DownscaleState(2, 2), True, 0, DownscaleState(2, 2), id="nothing removed"),
    ],
)
def test_record_removal(
    state: DownscaleState, master: bool, removals: int, expected: DownscaleState
) -> None:
    assert record_removal(state, master=master, removals=removals) == expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # ECK's Test_newDownscaleState (4 nodes wanted, default budget).
        pytest.param([], DownscaleState(0, 0), id="no resources in the apiserver"),
        pytest.param(
            pods_of("m", [0, 1, 2], master=True) + pods_of("m", [3], master=True, ready=False),
            DownscaleState(3, 0),
            id="3 masters running, 1 not running",
        ),
        pytest.param(
            pods_of("m", [0, 1, 2], master=True) + pods_of("d", [0, 1]),
            DownscaleState(3, 2),
            id="5 ready of 4 wanted",
        ),
    ],
)
def test_downscale_state(pods: list[PodState], expected: DownscaleState) -> None:
    assert downscale_state(pods, budget=ChangeBudget(1), desired_nodes=4) == expected


@pytest.mark.parametrize(
    ("initial", "target", "expected"),
    [(3, 2, ("s-2",)), (4, 1, ("s-3", "s-2", "s-1")), (2, 2, ()), (1, 0, ("s-0",))],
)
def test_leaving_nodes_highest_ordinal_first(
    initial: int, target: int, expected: tuple[str, ...]
) -> None:
    assert leaving_nodes("s", initial=initial, target=target) == expected


@pytest.mark.parametrize(
    ("leaving", "expected"),
    [
        # ECK's Test_migrateData.
        pytest.param([], "none_excluded", id="no nodes to migrate"),
        pytest.param(["test-node1"], "test-node1", id="a node to migrate"),
        pytest.param(
            ["test-node1", "test-node2"], "test-node1,test-node2", id="multiple nodes to migrate"
        ),
    ],
)
def test_allocation_filter(leaving: list[str], expected: str) -> None:
    assert migration_steps(leaving, cluster=ClusterView(), node_shutdown=False) == (
        ExcludeFromAllocation(expected),
    )


@pytest.mark.parametrize(
    ("shards", "counters", "expected"),
    [
        # ECK's Test_nodeMayHaveShard and the shard-activity rows of Test_calculatePerformableDownscale.
        pytest.param(
            [shard("index-1", "0", "STARTED", n, "p") for n in ("A", "B", "C")],
            {},
            "IN_PROGRESS",
            id="Node has one shard",
        ),
        pytest.param(
            [shard("index-1", "0", "STARTED", n, "p") for n in ("B", "C")],
            {},
            "COMPLETE",
            id="No shard on the node",
        ),
        pytest.param(
            [
                shard("index-1", "0", "UNASSIGNED", "", "r"),
                shard("index-1", "0", "STARTED", "C", "p"),
            ],
            {},
            "IN_PROGRESS",
            id="Some shards have no node assigned",
        ),
        pytest.param([], {"relocating_shards": 1}, "IN_PROGRESS", id="pending shard activity"),
        pytest.param([], {"timed_out": True}, "IN_PROGRESS", id="health timed out"),
        pytest.param([], {}, "COMPLETE", id="nothing anywhere"),
    ],
)
def test_legacy_migration_status(
    shards: list[Shard], counters: dict[str, int], expected: str
) -> None:
    cluster = ClusterView(health=ClusterHealth("green", **counters), shards=tuple(shards))  # type: ignore[arg-type]
    assert migration_status(
        "A", cluster=cluster, node_shutdown=False, requested=frozenset()
    ) == LeavingNode("A", expected)


SHUTDOWN_CLUSTER = ClusterView(
    nodes=(ClusterNode("pod-1", "id-1"), ClusterNode("pod-2", "id-2")),
    shutdowns=(),
)


def with_shutdowns(*records: NodeShutdown) -> ClusterView:
    return ClusterView(nodes=SHUTDOWN_CLUSTER.nodes, shutdowns=records)


@pytest.mark.parametrize(
    ("leaving", "cluster", "terminating", "expected"),
    [
        # ECK's TestNodeShutdown_ReconcileShutdowns (type remove).
        pytest.param([], SHUTDOWN_CLUSTER, [], (), id="no node leaving"),
        pytest.param(
            ["pod-1"],
            SHUTDOWN_CLUSTER,
            [],
            (PutNodeShutdown("pod-1", "id-1", "remove", "rv"),),
            id="one node leaving",
        ),
        pytest.param(
            ["pod-1", "pod-2"],
            SHUTDOWN_CLUSTER,
            [],
            (
                PutNodeShutdown("pod-1", "id-1", "remove", "rv"),
                PutNodeShutdown("pod-2", "id-2", "remove", "rv"),
            ),
            id="two nodes leaving",
        ),
        pytest.param(
            ["pod-1"],
            with_shutdowns(NodeShutdown("id-1", "REMOVE", "IN_PROGRESS")),
            [],
            (),
            id="shutdown already in progress",
        ),
        pytest.param(
            [],
            with_shutdowns(NodeShutdown("id-1", "REMOVE", "COMPLETE")),
            [],
            (DeleteNodeShutdown("id-1"),),
            id="should clean up shutdowns",
        ),
        pytest.param(
            [],
            with_shutdowns(NodeShutdown("id-1", "REMOVE", "IN_PROGRESS")),
            ["pod-1"],
            (),
            id="should not clean up shutdowns on terminating nodes",
        ),
        # Beyond ECK's table.
        pytest.param(
            [],
            with_shutdowns(NodeShutdown("id-2", "RESTART", "COMPLETE")),
            [],
            (),
            id="restart records are not the downscale's",
        ),
        pytest.param(
            ["pod-2"],
            with_shutdowns(NodeShutdown("id-2", "RESTART", "COMPLETE")),
            [],
            (PutNodeShutdown("pod-2", "id-2", "remove", "rv"),),
            id="a restart record does not stand for a removal",
        ),
    ],
)
def test_remove_shutdowns(
    leaving: list[str], cluster: ClusterView, terminating: list[str], expected: tuple[Step, ...]
) -> None:
    assert (
        migration_steps(
            leaving, cluster=cluster, node_shutdown=True, terminating=terminating, reason="rv"
        )
        == expected
    )


def test_remove_shutdown_of_an_unknown_node_is_an_error() -> None:
    with pytest.raises(SnapshotError, match="node pod-3 currently not member of the cluster"):
        migration_steps(["pod-3"], cluster=SHUTDOWN_CLUSTER, node_shutdown=True)


@pytest.mark.parametrize(
    ("cluster", "requested", "expected"),
    [
        # ECK's TestNodeShutdown_ShutdownStatus.
        pytest.param(
            with_shutdowns(NodeShutdown("id-1", "REMOVE", "COMPLETE")),
            frozenset(),
            LeavingNode("pod-1", "COMPLETE"),
            id="successful lookup",
        ),
        pytest.param(
            with_shutdowns(
                NodeShutdown("id-1", "REMOVE", "STALLED", "no other node for shard [i][0]")
            ),
            frozenset(),
            LeavingNode("pod-1", "STALLED", "no other node for shard [i][0]"),
            id="successful lookup with explanation",
        ),
        pytest.param(
            SHUTDOWN_CLUSTER,
            frozenset({"pod-1"}),
            LeavingNode("pod-1", "IN_PROGRESS"),
            id="requested in this pass",
        ),
    ],
)
def test_shutdown_migration_status(
    cluster: ClusterView, requested: frozenset[str], expected: LeavingNode
) -> None:
    assert (
        migration_status("pod-1", cluster=cluster, node_shutdown=True, requested=requested)
        == expected
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("pod-3", "node pod-3 currently not member of the cluster", id="unknown node"),
        pytest.param(
            "pod-1",
            "no shutdown in progress for pod-1",
            id="returns error when no shutdown in progress",
        ),
    ],
)
def test_shutdown_migration_status_errors(name: str, message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        migration_status(name, cluster=SHUTDOWN_CLUSTER, node_shutdown=True, requested=frozenset())


def single_set(
    replicas: int,
    wanted: int,
    *,
    master: bool = False,
    ready: int | None = None,
    budget: ChangeBudget = UNBOUNDED,
    shards: Sequence[Shard] = (),
    counters: Mapping[str, int] | None = None,
    version: str = "7.2.0",
    shutdowns: Sequence[NodeShutdown] | None = None,
) -> DownscaleSnapshot:
    """One StatefulSet ``default`` going from ``replicas`` to ``wanted``."""
    ready_count = replicas if ready is None else ready
    pods = tuple(
        node(
            f"default-{i}",
            *(("master", "data") if master else ("data",)),
            version=version,
            healthy=i < ready_count,
        ).pod()
        for i in range(replicas)
    )
    return DownscaleSnapshot(
        spec_version=version,
        budget=budget,
        statefulsets=(StatefulSetState("default", replicas, master=master, version=version),),
        expected=(
            ExpectedStatefulSet("default", wanted, roles("master", "data") if master else DATA),
        ),
        pods=pods,
        cluster=ClusterView(
            health=ClusterHealth("green", **(counters or {})),  # type: ignore[arg-type]
            nodes=tuple(ClusterNode(p.name, f"id-{p.name}") for p in pods),
            shards=tuple(shards),
            shutdowns=None if shutdowns is None else tuple(shutdowns),
        ),
        shutdown_reason="rv",
    )


@pytest.mark.parametrize(
    ("snapshot", "replicas", "steps_tail"),
    [
        # ECK's Test_calculatePerformableDownscale.
        pytest.param(
            single_set(3, 3), 3, [ExcludeFromAllocation("none_excluded")], id="no downscale planned"
        ),
        pytest.param(
            single_set(3, 2),
            2,
            [ScaleStatefulSet("default", 2)],
            id="downscale possible from 3 to 2",
        ),
        pytest.param(
            single_set(3, 2, shards=[shard("index-1", "0", "STARTED", "default-2", "p")]),
            3,
            [ExcludeFromAllocation("default-2")],
            id="downscale not possible: data migration not complete",
        ),
        pytest.param(
            single_set(3, 2, counters={"initializing_shards": 1}),
            3,
            [ExcludeFromAllocation("default-2")],
            id="downscale not possible: pending shard activity",
        ),
        # ECK's Test_attemptDownscale.
        pytest.param(
            single_set(3, 2, master=True, budget=ChangeBudget(1)),
            2,
            [AddVotingExclusions(("default-2",)), ScaleStatefulSet("default", 2)],
            id="perform 3 -> 2 downscale",
        ),
        pytest.param(
            single_set(3, 2, master=True, ready=2, budget=ChangeBudget(0)),
            3,
            [ExcludeFromAllocation("none_excluded")],
            id="stay at 3 due to maxUnavailable",
        ),
        # ECK's Test_doDownscale_zen2VotingConfigExclusions.
        pytest.param(
            single_set(3, 2, master=True),
            2,
            [AddVotingExclusions(("default-2",)), ScaleStatefulSet("default", 2)],
            id="3 -> 2 master nodes: voting exclusion first",
        ),
        pytest.param(
            single_set(3, 2), 2, [ScaleStatefulSet("default", 2)], id="3 -> 2 data nodes: none"
        ),
        # The walk stops at the first node whose data has not moved.
        pytest.param(
            single_set(4, 1, shards=[shard("i", "0", "STARTED", "default-2", "p")]),
            3,
            [ScaleStatefulSet("default", 3)],
            id="4 -> 1: stops at ordinal 2",
        ),
        pytest.param(
            single_set(3, 1, master=True),
            2,
            [AddVotingExclusions(("default-2",)), ScaleStatefulSet("default", 2)],
            id="3 -> 1 masters: one per pass",
        ),
        pytest.param(
            single_set(1, 0, master=True),
            1,
            [ExcludeFromAllocation("none_excluded")],
            id="never the last running master",
        ),
    ],
)
def test_performable_downscale(
    snapshot: DownscaleSnapshot, replicas: int, steps_tail: list[Step]
) -> None:
    decision = plan_downscale(snapshot)
    assert decision.error is None
    assert decision.replicas["default"] == replicas
    assert list(decision.steps[-len(steps_tail) :]) == steps_tail


@pytest.mark.parametrize(
    ("shutdowns", "replicas", "phase", "status", "error"),
    [
        pytest.param(
            [NodeShutdown("id-default-2", "REMOVE", "COMPLETE")],
            2,
            None,
            "COMPLETE",
            None,
            id="complete",
        ),
        pytest.param(
            [NodeShutdown("id-default-2", "REMOVE", "IN_PROGRESS")],
            3,
            PHASE_MIGRATING_DATA,
            "IN_PROGRESS",
            None,
            id="in progress",
        ),
        pytest.param(
            [NodeShutdown("id-default-2", "REMOVE", "STALLED", "shard [i][0] cannot move")],
            3,
            PHASE_STALLED,
            "STALLED",
            None,
            id="stalled",
        ),
        pytest.param(
            [NodeShutdown("id-default-2", "REMOVE", "NOT_STARTED", "broken")],
            3,
            None,
            "NOT_STARTED",
            "Unexpected state. Node shutdown could not be started: broken",
            id="not started is an error",
        ),
        pytest.param(
            [], 3, PHASE_MIGRATING_DATA, "IN_PROGRESS", None, id="requested now: no answer yet"
        ),
    ],
)
def test_downscale_with_node_shutdown(
    shutdowns: list[NodeShutdown], replicas: int, phase: str | None, status: str, error: str | None
) -> None:
    decision = plan_downscale(single_set(3, 2, version="8.15.0", shutdowns=shutdowns))
    assert decision.replicas["default"] == replicas
    assert decision.phase == phase
    assert decision.nodes == (
        LeavingNode("default-2", status, shutdowns[0].explanation if shutdowns else ""),
    )
    assert decision.error == error
    assert decision.stalled is (status == "STALLED")
    if status == "STALLED":
        assert decision.events[0].message == (
            "Requested topology change is stalled. User intervention maybe required if this "
            "condition persists. shard [i][0] cannot move"
        )
    if not shutdowns:
        assert decision.steps == (PutNodeShutdown("default-2", "id-default-2", "remove", "rv"),)


@pytest.mark.parametrize(
    ("replicas", "listed", "exclusions", "expected"),
    [
        # ECK's Test_ClearVotingConfigExclusions.
        pytest.param(
            3,
            [0, 1, 2],
            None,
            VotingExclusionsClearing((ClearVotingExclusions(),)),
            id="3/3 nodes there, should clear",
        ),
        pytest.param(
            3,
            [0, 1],
            None,
            VotingExclusionsClearing(requeue_reason=CANNOT_CLEAR_VOTING_EXCLUSIONS_REASON),
            id="2/3 nodes there",
        ),
        pytest.param(
            2,
            [0, 1, 2],
            None,
            VotingExclusionsClearing(requeue_reason=CANNOT_CLEAR_VOTING_EXCLUSIONS_REASON),
            id="3/2 nodes there",
        ),
        # Beyond ECK: a snapshot showing no exclusion skips the call.
        pytest.param(3, [0, 1, 2], (), VotingExclusionsClearing(), id="nothing to clear"),
        pytest.param(
            3,
            [0, 1, 2],
            ("nodes-3",),
            VotingExclusionsClearing((ClearVotingExclusions(),)),
            id="an exclusion left",
        ),
    ],
)
def test_clear_voting_exclusions(
    replicas: int,
    listed: list[int],
    exclusions: tuple[str, ...] | None,
    expected: VotingExclusionsClearing,
) -> None:
    statefulsets = (StatefulSetState("nodes", replicas, master=True),)
    assert (
        clear_voting_exclusions(statefulsets, pods_of("nodes", listed, master=True), exclusions)
        == expected
    )


@pytest.mark.parametrize(
    ("expected", "refused"),
    [
        pytest.param((), True, id="no topology"),
        pytest.param(
            (ExpectedStatefulSet("default", 3, DEFAULT_ROLES),),
            False,
            id="one nodeset with default roles",
        ),
        pytest.param((ExpectedStatefulSet("data", 3, DATA),), True, id="no master defined"),
        pytest.param(
            (ExpectedStatefulSet("masters", 0, MASTER), ExpectedStatefulSet("data", 3, DATA)),
            True,
            id="zero master nodes",
        ),
        pytest.param(
            (ExpectedStatefulSet("masters", 0, MASTER), ExpectedStatefulSet("data", 0, DATA)),
            True,
            id="count 0 everywhere",
        ),
        pytest.param(
            (ExpectedStatefulSet("vo", 1, roles("master", "voting_only")),),
            True,
            id="voting-only masters only",
        ),
        pytest.param(
            (ExpectedStatefulSet("masters", 1, MASTER), ExpectedStatefulSet("data", 0, DATA)),
            False,
            id="one master left",
        ),
    ],
)
def test_master_required_problem(expected: tuple[ExpectedStatefulSet, ...], refused: bool) -> None:
    problem = master_required_problem(expected)
    assert (str(problem) if problem else None) == (
        "spec.nodeSets: Required value: Elasticsearch needs to have at least one master node"
        if refused
        else None
    )
