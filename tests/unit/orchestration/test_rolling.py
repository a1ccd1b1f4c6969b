"""Rolling restarts: the outdated Pods, ECK's candidate order, the walk through the predicates
within the budget (every row of ECK's ``upgrade_predicates_test.go`` that does not need the
Kubernetes API), the cluster preparation before a restart, the clean-up once Pods are back
(``Test_Driver_maybeCompleteNodeUpgrades``), the full restart, and the forced upgrade
(``upgrade_forced_test.go``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from stackflow.stack.elasticsearch.orchestration.budget import resolve_change_budget
from stackflow.stack.elasticsearch.orchestration.expectations import ExpectationCheck
from stackflow.stack.elasticsearch.orchestration.rolling import (
    FORCED_DELETE_MESSAGE,
    FULL_RESTART_DELETE_MESSAGE,
    FULL_RESTART_PENDING_MESSAGE,
    NOT_BACK_REASON,
    ROLLING_DELETE_MESSAGE,
    UPGRADE_IN_PROGRESS_REASON,
    AfterRestarts,
    RollingDecision,
    RollingSnapshot,
    complete_restarts,
    continue_after_shutdowns,
    forced_upgrade,
    healthy_pod_names,
    plan_rolling_restart,
    pods_to_upgrade,
    prepare_restarts,
    remove_transient_settings,
    sort_candidates,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterNode,
    ClusterView,
    NodeShutdown,
    PodState,
    Shard,
    SnapshotError,
    StatefulSetState,
)
from stackflow.stack.elasticsearch.orchestration.steps import (
    AddVotingExclusions,
    DeleteNodeShutdown,
    DeletePod,
    DisableReplicaAllocation,
    EnableAllocation,
    Flush,
    PutNodeShutdown,
    RemoveTransientAllocationSettings,
)
from stackflow.stack.labels import ES_STATEFULSET_NAME_LABEL
from tests.unit.orchestration.fixtures import Node, Topology, node, shard

# ECK's testdata/shards.json: nodes-4 and nodes-3 hold copies of .kibana_1[0].
SHARED_SHARDS = (
    shard(".security-7", "0", "STARTED", "elasticsearch-sample-es-nodes-0", "r"),
    shard(".security-7", "0", "STARTED", "elasticsearch-sample-es-nodes-1", "p"),
    shard("twitter", "0", "STARTED", "elasticsearch-sample-es-nodes-2", "p"),
    shard(".kibana_1", "0", "STARTED", "elasticsearch-sample-es-nodes-3", "p"),
    shard(".kibana_1", "0", "STARTED", "elasticsearch-sample-es-nodes-4", "r"),
)
INDEX_A_PRIMARY_ONLY = (
    shard("index_a", "0", "STARTED", "masters-0", "p"),
    shard("index_a", "0", "UNASSIGNED", "", "r"),
)


@dataclass(frozen=True)
class Case:
    """One row of ECK's deletion tests: the nodes, the spec version, the budget, the cluster."""

    nodes: tuple[Node, ...]
    spec_version: str = "7.5.0"
    max_unavailable: int = 1
    health: str = "green"
    counters: Mapping[str, int] = field(default_factory=dict)
    shards: tuple[Shard, ...] = ()
    shutdowns: Mapping[str, str] | None = None
    disabled: frozenset[str] = frozenset()
    masters: Mapping[str, bool] = field(default_factory=dict)
    status_version: str | None = None

    def snapshot(self) -> RollingSnapshot:
        topology = Topology(self.nodes, self.masters)
        return RollingSnapshot(
            spec_version=self.spec_version,
            status_version=self.spec_version
            if self.status_version is None
            else self.status_version,
            budget=resolve_change_budget(self.max_unavailable),
            statefulsets=topology.statefulsets,
            expected=topology.expected,
            pods=topology.pods,
            cluster=topology.cluster(
                self.health, shards=self.shards, shutdowns=self.shutdowns, **self.counters
            ),
            disabled_predicates=self.disabled,
        )


def run(case: Case) -> RollingDecision:
    """A pass; when it requests shutdowns, the follow-up with the records as they read then."""
    snapshot = case.snapshot()
    decision = plan_rolling_restart(snapshot)
    if decision.shutdowns_requested and decision.error is None:
        follow_up = continue_after_shutdowns(decision, snapshot, snapshot.cluster)
        return dataclasses.replace(follow_up, steps=decision.steps + follow_up.steps)
    return decision


def m(name: str, **fields: object) -> Node:
    """A master+data node, as most of ECK's rows use."""
    return node(name, "master", "data", **fields)


@pytest.mark.parametrize(
    ("case", "deleted", "error", "allocation_disabled"),
    [
        # TestUpgradePodsDeletion_Delete, row by row ("Pod deleted while upgrading" is the
        # Kubernetes API's NotFound: nothing to decide here).
        pytest.param(
            Case(
                (
                    node("master-0", "master", outdated=True, version="7.14.0"),
                    node("cold-0", "data_cold", outdated=True, version="7.14.0"),
                    node("frozen-0", "data_frozen", outdated=True, version="7.14.0"),
                    node("hot-warm-0", "data_warm", "data_hot", outdated=True, version="7.14.0"),
                ),
                spec_version="7.15.0",
            ),
            {"frozen-0"},
            False,
            True,
            id="multi tiers topology, data_frozen nodes must be upgraded first",
        ),
        pytest.param(
            Case(
                (
                    node("default-0", outdated=True, version="7.14.0"),
                    node("default-1", version="7.15.0"),
                    node("default-2", version="7.15.0"),
                    node("cold-0", "data_cold", version="7.15.0"),
                    node("hot-0", "data_hot", outdated=True, version="7.14.0"),
                ),
                spec_version="7.15.0",
            ),
            {"hot-0"},
            False,
            True,
            id="multi tiers topology, data_hot before the last master with default roles",
        ),
        pytest.param(
            Case(
                (
                    node("master-0", "master", outdated=True, version="7.14.0"),
                    node("node-0", "data_content", outdated=True, version="7.14.0"),
                    node("node-1", "data_content", outdated=True, version="7.14.0"),
                ),
                spec_version="7.15.0",
                max_unavailable=2,
                shards=(
                    shard("index_a", "0", "STARTED", "node-0", "p"),
                    shard("index_a", "0", "STARTED", "node-1", "r"),
                ),
            ),
            {"node-1"},
            False,
            True,
            id="1 master and 2 data_content nodes, wait for all the data_content nodes first",
        ),
        pytest.param(
            Case(
                (
                    node("master-0", "master", outdated=True),
                    node("node-0", "data", outdated=True),
                    node("node-1", "data", outdated=True),
                    node("node-2", "data", outdated=True, terminating=True),
                ),
                max_unavailable=2,
            ),
            {"node-1"},
            False,
            True,
            id="Do not attempt to delete an already terminating Pod",
        ),
        pytest.param(
            Case((m("masters-0"), m("masters-1"), m("masters-2"))),
            set(),
            False,
            False,
            id="All Pods are upgraded",
        ),
        pytest.param(
            Case((m("masters-2"), m("masters-1"), m("masters-0", outdated=True))),
            {"masters-0"},
            False,
            True,
            id="3 healthy master and data nodes, allow the last to be upgraded",
        ),
        pytest.param(
            Case(tuple(m(f"masters-{i}", outdated=True) for i in (2, 1, 0))),
            {"masters-2"},
            False,
            True,
            id="3 healthy masters, allow the deletion of 1",
        ),
        pytest.param(
            Case(
                tuple(m(f"masters-{i}", outdated=True) for i in (2, 1, 0)),
                max_unavailable=2,
                disabled=frozenset({"one_master_at_a_time"}),
            ),
            {"masters-1", "masters-2"},
            False,
            True,
            id="3 healthy masters, 2 deleted with one_master_at_a_time disabled and maxUnavailable 2",
        ),
        pytest.param(
            Case(
                tuple(m(f"masters-{i}", outdated=True, healthy=False) for i in (2, 1, 0)),
                max_unavailable=6,
                health="red",
                disabled=frozenset({"*"}),
            ),
            {"masters-0", "masters-1", "masters-2"},
            False,
            True,
            id="3 unhealthy masters, red cluster, all predicates disabled",
        ),
        pytest.param(
            Case(tuple(m(f"masters-{i}", outdated=True) for i in (2, 1, 0)), max_unavailable=2),
            {"masters-2"},
            False,
            True,
            id="3 healthy masters, allow the deletion of 1 even if maxUnavailable > 1",
        ),
        pytest.param(
            Case(
                (
                    m("master-0", outdated=True),
                    m("master-1", outdated=True, healthy=False, in_cluster=False),
                    m("master-2", outdated=True),
                    m("master-3", outdated=True),
                    m("master-4", outdated=True),
                ),
                max_unavailable=2,
            ),
            {"master-1"},
            False,
            True,
            id="2 healthy masters out of 5, maxUnavailable 2, the unhealthy one goes",
        ),
        pytest.param(
            Case(
                (node("master-0", "master", outdated=True), node("node-0", "data", outdated=True))
            ),
            {"node-0"},
            False,
            True,
            id="1 master and 1 data node, wait for the node to be upgraded first",
        ),
        pytest.param(
            Case((m("master-0", outdated=True),), health="red"),
            set(),
            False,
            False,
            id="Do not delete healthy node if red",
        ),
        pytest.param(
            Case(
                (m("master-0", outdated=True),),
                health="red",
                disabled=frozenset({"only_restart_healthy_node_if_green_or_yellow"}),
            ),
            {"master-0"},
            False,
            True,
            id="Delete healthy node if red only with disabled predicate annotation",
        ),
        pytest.param(
            Case((m("master-0", outdated=True),), health="red", disabled=frozenset({"*"})),
            {"master-0"},
            False,
            True,
            id="Also delete healthy node if red with all predicates disabled",
        ),
        pytest.param(
            Case((m("master-0", outdated=True),), health="unknown"),
            set(),
            False,
            False,
            id="Do not delete healthy node if health is unknown",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-2", outdated=True, healthy=False, in_cluster=False),
                    m("masters-1", outdated=True),
                ),
                health="unknown",
            ),
            {"masters-2"},
            False,
            True,
            id="Allow deletion of unhealthy node if not green",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True, version="7.4.0"),
                    m("masters-1", healthy=False, version="7.5.0"),
                ),
                health="yellow",
                shards=INDEX_A_PRIMARY_ONLY,
            ),
            set(),
            False,
            False,
            id="Do not delete the node with the last started shard, one node unhealthy",
        ),
        pytest.param(
            Case(
                (m("masters-0", outdated=True), m("masters-1", outdated=True)),
                health="yellow",
                shards=INDEX_A_PRIMARY_ONLY,
            ),
            {"masters-1"},
            False,
            True,
            id="Allow deletion if yellow in a 2 node cluster and a replica is unassigned",
        ),
        pytest.param(
            Case((m("masters-0", outdated=True),), health="yellow", shards=INDEX_A_PRIMARY_ONLY),
            {"masters-0"},
            False,
            True,
            id="Allow deletion if yellow in a single node cluster",
        ),
        pytest.param(
            Case(
                (m("masters-0", outdated=True, version="7.5.0"),),
                health="yellow",
                shards=INDEX_A_PRIMARY_ONLY,
            ),
            {"masters-0"},
            False,
            True,
            id="Allow restart when the single node cluster is not upgraded, rolling changes",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True, version="7.5.0"),
                    m("masters-1", outdated=True, version="7.5.0"),
                    m("masters-2", outdated=True, version="7.5.0", healthy=False, in_cluster=False),
                ),
                health="yellow",
                shards=INDEX_A_PRIMARY_ONLY,
            ),
            {"masters-2"},
            False,
            True,
            id="Allow deletion of unhealthy node if yellow and node is not upgrading",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-1", outdated=True),
                    m("masters-2", version="7.5.0"),
                ),
                health="yellow",
                shards=INDEX_A_PRIMARY_ONLY,
            ),
            {"masters-1"},
            False,
            True,
            id="Allow deletion of healthy node if yellow and node is upgrading",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-1", outdated=True),
                    m("masters-2", version="7.5.0"),
                    m("masters-3", outdated=True),
                    m("masters-4", outdated=True),
                ),
                health="yellow",
                shards=(
                    shard("index_a", "0", "STARTED", "masters-4", "p"),
                    shard("index_a", "0", "UNASSIGNED", "", "r"),
                    shard("index_b", "0", "STARTED", "masters-4", "r"),
                    shard("index_b", "0", "STARTED", "master-2", "p"),
                ),
            ),
            {"masters-3"},
            False,
            True,
            id="Do not delete the node with the last remaining started shard",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-1", outdated=True),
                    m("masters-2", outdated=True, version="7.5.0"),
                ),
                health="yellow",
                shards=(
                    shard("index_a", "0", "STARTED", "masters-1", "p"),
                    shard("index_a", "0", "UNASSIGNED", "", "r"),
                ),
            ),
            {"masters-0"},
            False,
            True,
            id="Do not allow deletion of healthy node if yellow and all replicas unassigned",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-1", outdated=True),
                    m("masters-2", version="7.5.0"),
                ),
                health="yellow",
                counters={"relocating_shards": 1},
                shards=(shard("index_a", "0", "RELOCATING", "masters-2", "p"),),
            ),
            set(),
            False,
            False,
            id="Do not allow deletion if yellow if a shard is relocating",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", outdated=True),
                    m("masters-1", outdated=True),
                    m("masters-2", version="7.5.0"),
                ),
                counters={"relocating_shards": 1},
                shards=(shard("index_a", "0", "RELOCATING", "masters-2", "p"),),
            ),
            {"masters-1"},
            False,
            True,
            id="Allow deletion if green even if shards are relocating",
        ),
        pytest.param(
            Case(
                (m("masters-0", outdated=True), m("masters-1", version="7.5.0")),
                health="yellow",
                shards=(
                    shard("index_a", "0", "UNASSIGNED", "masters-0", "r"),
                    shard("index_b", "0", "STARTED", "masters-0", "p"),
                    shard("index_a", "0", "STARTED", "masters-1", "p"),
                ),
            ),
            {"masters-0"},
            False,
            True,
            id="Allow deletion if yellow and if a shard has no replica",
        ),
        pytest.param(
            Case((m("masters-0"), m("masters-1", outdated=True, healthy=False, in_cluster=False))),
            {"masters-1"},
            False,
            True,
            id="Do not delete last healthy master",
        ),
        pytest.param(
            Case(
                (
                    node("ingest-0", "ingest", outdated=True, version="8.0.0"),
                    node("ingest-ml-0", "ingest", "ml", outdated=True, version="8.0.0"),
                    node("ingest-ml-1", "ingest", "ml", outdated=True, version="8.0.0"),
                ),
                spec_version="8.0.0",
                max_unavailable=3,
                shutdowns={
                    "ingest-0": "COMPLETE",
                    "ingest-ml-0": "COMPLETE",
                    "ingest-ml-1": "COMPLETE",
                },
            ),
            {"ingest-0", "ingest-ml-1"},
            False,
            False,
            id="Do not delete all nodes of a tier",
        ),
        pytest.param(
            Case(
                (node("ingest-0", "ingest", outdated=True, version="8.0.0"),),
                spec_version="8.0.0",
                shutdowns={"ingest-0": "COMPLETE"},
            ),
            {"ingest-0"},
            False,
            False,
            id="But allow deletion of single node tiers",
        ),
        pytest.param(
            Case(
                (
                    node("ingest-0", "ingest", outdated=True, healthy=False, version="8.0.0"),
                    node("ingest-1", "ingest", outdated=True, version="8.0.0"),
                ),
                spec_version="8.0.0",
                max_unavailable=2,
                shutdowns={"ingest-0": "COMPLETE", "ingest-1": "COMPLETE"},
            ),
            {"ingest-0"},
            False,
            False,
            id="Do allow the deletion of unhealthy Pods in a tier",
        ),
        pytest.param(
            Case(
                (
                    *(
                        node(f"elasticsearch-sample-es-nodes-{i}", "data", outdated=True)
                        for i in (4, 3, 2, 1, 0)
                    ),
                    *(
                        node(f"elasticsearch-sample-es-masters-{i}", "master", outdated=True)
                        for i in (2, 1, 0)
                    ),
                ),
                max_unavailable=2,
                shards=SHARED_SHARDS,
            ),
            {"elasticsearch-sample-es-nodes-4", "elasticsearch-sample-es-nodes-2"},
            False,
            True,
            id="Do not delete Pods that share some shards",
        ),
        pytest.param(
            Case(
                (m("masters-0", outdated=True, version="7.15.2"),),
                spec_version="7.15.2",
                shutdowns={"masters-0": "IN_PROGRESS"},
            ),
            set(),
            False,
            False,
            id="Node shutdown API: predicates allow, but shutdown is not complete",
        ),
        pytest.param(
            Case(
                (
                    m("masters-1", version="7.15.2"),
                    m("masters-0", outdated=True, version="7.15.2", in_cluster=False),
                ),
                spec_version="7.15.2",
                shutdowns={},
            ),
            set(),
            True,
            False,
            id="Node shutdown API: predicates allow, but Pod not in cluster",
        ),
        pytest.param(
            Case(
                (m("masters-0", outdated=True, version="7.15.2"),),
                spec_version="7.15.2",
                shutdowns={"masters-0": "COMPLETE"},
            ),
            {"masters-0"},
            False,
            False,
            id="Node shutdown API: predicates allow, shutdown complete",
        ),
    ],
)
def test_rolling_restart_deletions(
    case: Case, deleted: set[str], error: bool, allocation_disabled: bool
) -> None:
    decision = run(case)
    assert set(decision.deleted) == deleted
    assert (decision.error is not None) is error, decision.error
    assert (DisableReplicaAllocation() in decision.steps) is allocation_disabled
    assert [s.pod for s in decision.steps if isinstance(s, DeletePod)] == list(decision.deleted)


@pytest.mark.parametrize(
    ("case", "deleted", "allocation_disabled", "voting_exclusions"),
    [
        # TestUpgradePodsDeletion_WithNodeTypeMutations.
        pytest.param(
            Case(
                (
                    m("masterdata-0", version="7.2.0"),
                    m("other-master-0", version="7.2.0", outdated=True),
                ),
                spec_version="7.2.0",
                masters={"other-master": False},
            ),
            {"other-master-0"},
            True,
            [AddVotingExclusions(("other-master-0",))],
            id="Risky mutation with 7.x nodes",
        ),
        pytest.param(
            Case(
                (
                    m("masterdata-0", version="7.2.0", healthy=False),
                    m("other-master-0", version="7.2.0", outdated=True),
                ),
                spec_version="7.2.0",
                max_unavailable=2,
                masters={"other-master": False},
            ),
            set(),
            False,
            [],
            id="Risky mutation with an unhealthy master",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", version="7.2.0"),
                    node("data-to-masters-0", "data", version="7.2.0", outdated=True),
                    node("data-to-masters-1", "data", version="7.2.0", outdated=True),
                ),
                spec_version="7.2.0",
                max_unavailable=2,
                masters={"data-to-masters": True},
            ),
            {"data-to-masters-1"},
            True,
            [],
            id="Two data nodes converted into masters, step 1: one at a time",
        ),
        pytest.param(
            Case(
                (
                    m("masters-0", version="7.2.0"),
                    node("data-to-masters-0", "data", version="7.2.0", outdated=True),
                    m("data-to-masters-1", version="7.2.0"),
                ),
                spec_version="7.2.0",
                max_unavailable=2,
                masters={"data-to-masters": True},
            ),
            {"data-to-masters-0"},
            True,
            [],
            id="Two data nodes converted into masters, step 2: the remaining one",
        ),
    ],
)
def test_node_type_changes(
    case: Case,
    deleted: set[str],
    allocation_disabled: bool,
    voting_exclusions: list[AddVotingExclusions],
) -> None:
    decision = run(case)
    assert set(decision.deleted) == deleted
    assert (DisableReplicaAllocation() in decision.steps) is allocation_disabled
    assert [s for s in decision.steps if isinstance(s, AddVotingExclusions)] == voting_exclusions


def test_held_back_pods_name_their_first_predicate() -> None:
    decision = run(
        Case(tuple(m(f"masters-{i}", outdated=True) for i in (2, 1, 0)), max_unavailable=2)
    )
    assert decision.selected == ("masters-2",)
    assert [(h.pod, h.predicate) for h in decision.held_back] == [
        ("masters-1", "one_master_at_a_time"),
        ("masters-0", "one_master_at_a_time"),
    ]
    assert all(h.message for h in decision.held_back)
    assert decision.requeue_reasons == (UPGRADE_IN_PROGRESS_REASON,)


def test_walk_stops_when_the_budget_is_spent() -> None:
    # After the first Pod the allowance is 0: the others are neither picked nor held back.
    decision = run(Case((node("d-0", "data", outdated=True), node("d-1", "data", outdated=True))))
    assert (decision.deleted, decision.held_back, decision.to_upgrade) == (
        ("d-1",),
        (),
        ("d-1", "d-0"),
    )


def test_nothing_happens_until_the_expectations_are_met() -> None:
    snapshot = dataclasses.replace(
        Case((m("masters-0", outdated=True),)).snapshot(),
        expectations=ExpectationCheck(False, "Expecting deletion for Pods: masters-0"),
    )
    assert plan_rolling_restart(snapshot) == RollingDecision(
        reported=False,
        requeue_reasons=("Nodes upgrade: Expecting deletion for Pods: masters-0",),
    )


def test_a_restart_waits_for_the_shutdown_it_requests() -> None:
    case = Case(
        (m("masters-0", outdated=True, version="8.15.0"),), spec_version="8.15.0", shutdowns={}
    )
    snapshot = dataclasses.replace(case.snapshot(), shutdown_reason="rv-42", allocation_delay="5m")
    decision = plan_rolling_restart(snapshot)
    assert decision.steps == (PutNodeShutdown("masters-0", "masters-0", "restart", "rv-42", "5m"),)
    assert (decision.shutdowns_requested, decision.deleted) == (("masters-0",), ())
    in_progress = dataclasses.replace(
        snapshot.cluster, shutdowns=(NodeShutdown("masters-0", "RESTART", "IN_PROGRESS"),)
    )
    later = continue_after_shutdowns(decision, snapshot, in_progress)
    assert (later.steps, later.deleted, later.waiting_for_shutdown) == ((), (), ("masters-0",))
    complete = dataclasses.replace(
        snapshot.cluster, shutdowns=(NodeShutdown("masters-0", "RESTART", "COMPLETE"),)
    )
    done = continue_after_shutdowns(decision, snapshot, complete)
    assert done.steps == (DeletePod("masters-0", ROLLING_DELETE_MESSAGE),)


@pytest.mark.parametrize(
    ("case", "deleted", "pending_message", "steps"),
    [
        pytest.param(
            Case(
                (
                    m("es-0", outdated=True, version="7.17.0"),
                    m("es-1", outdated=True, version="7.17.0"),
                ),
                spec_version="8.0.0",
                status_version="7.17.0",
                shutdowns={"es-0": "COMPLETE", "es-1": "COMPLETE"},
            ),
            ("es-1", "es-0"),
            None,
            # The completed records are the restarts requested by an earlier pass: kept, and the
            # Pods deleted (ECK deletes and requests them again within one pass).
            (
                DeletePod("es-1", FULL_RESTART_DELETE_MESSAGE),
                DeletePod("es-0", FULL_RESTART_DELETE_MESSAGE),
            ),
            id="two masters, 7.17 to 8.0: both at once, no predicate",
        ),
        pytest.param(
            Case(
                (
                    m("es-0", outdated=True, version="8.18.0"),
                    m("es-1", outdated=True, version="8.18.0"),
                ),
                spec_version="9.0.0",
                status_version="8.18.0",
                shutdowns={"es-0": "COMPLETE", "es-1": "IN_PROGRESS"},
                health="red",
            ),
            (),
            FULL_RESTART_PENDING_MESSAGE,
            (),
            id="all or nothing: one shutdown still in progress",
        ),
    ],
)
def test_full_restart(
    case: Case, deleted: tuple[str, ...], pending_message: str | None, steps: tuple[object, ...]
) -> None:
    decision = run(case)
    assert decision.full_restart
    assert decision.deleted == deleted
    assert decision.pending_message == pending_message
    assert decision.steps == steps


def sset(name: str, replicas: int, update_revision: str, version: str = "") -> StatefulSetState:
    return StatefulSetState(name, replicas, update_revision=update_revision, version=version)


def revision_pod(name: str, revision: str, version: str = "") -> PodState:
    labels = {
        "controller-revision-hash": revision,
        ES_STATEFULSET_NAME_LABEL: name.rsplit("-", 1)[0],
    }
    if version:
        labels["elasticsearch.k8s.elastic.co/version"] = version
    return PodState(name, labels=labels)


@pytest.mark.parametrize(
    ("statefulsets", "pods", "expected"),
    [
        # ECK's Test_podsToUpgrade.
        pytest.param(
            (sset("masters", 2, "rev-b"), sset("nodes", 3, "rev-b")),
            [
                revision_pod(n, "rev-a")
                for n in ("masters-0", "masters-1", "nodes-0", "nodes-1", "nodes-2")
            ],
            ["masters-1", "masters-0", "nodes-2", "nodes-1", "nodes-0"],
            id="all pods need to be upgraded",
        ),
        pytest.param(
            (sset("masters", 2, "rev-b"), sset("nodes", 3, "rev-b")),
            [revision_pod("masters-0", "rev-a"), revision_pod("masters-1", "rev-a")],
            ["masters-1", "masters-0"],
            id="only a sset needs to be upgraded (missing Pods skipped)",
        ),
        pytest.param(
            (sset("masters", 2, ""), sset("nodes", 3, "")),
            [revision_pod("masters-0", "rev-a"), revision_pod("masters-1", "rev-a")],
            [],
            id="no pods to upgrade if the StatefulSet UpdateRevision is empty",
        ),
        pytest.param(
            (sset("masters", 2, "rev-b"), sset("nodes", 3, "rev-b")),
            [revision_pod("masters-0", "rev-b"), revision_pod("masters-1", "rev-a")],
            ["masters-1"],
            id="only 1 node need to be upgraded",
        ),
        # The version label.
        pytest.param(
            (sset("data", 2, "", version="8.15.0"),),
            [revision_pod("data-0", "r", "8.15.0"), revision_pod("data-1", "r", "8.14.0")],
            ["data-1"],
            id="a version label that differs from the template's",
        ),
        pytest.param(
            (sset("data", 1, "rev-b"),),
            [revision_pod("data-0", "rev-b"), revision_pod("data-1", "rev-a")],
            [],
            id="Pods beyond the replicas are not upgraded",
        ),
    ],
)
def test_pods_to_upgrade(
    statefulsets: tuple[StatefulSetState, ...], pods: list[PodState], expected: list[str]
) -> None:
    assert [pod.name for pod in pods_to_upgrade(statefulsets, pods)] == expected


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        # ECK's TestDeletionStrategy_SortFunction.
        pytest.param(
            [
                node("amasters-0", "master"),
                node("data-0", "data"),
                node("masters-0", "master"),
                node("amasters-1", "master"),
                node("data-1", "data"),
                node("amasters-2", "master"),
            ],
            ["data-1", "data-0", "amasters-2", "amasters-1", "amasters-0", "masters-0"],
            id="Mixed nodes",
        ),
        pytest.param(
            [
                node("amasters-0", "master"),
                node("amasters-1", "master"),
                node("amasters-2", "master"),
                node("data-0", "data"),
                node("data-1", "data"),
                node("data-2", "data"),
            ],
            ["data-2", "data-1", "data-0", "amasters-2", "amasters-1", "amasters-0"],
            id="Masters first",
        ),
        pytest.param(
            [node("d-2", "data"), node("d-10", "data"), node("c-1", "ingest")],
            ["c-1", "d-10", "d-2"],
            id="ordinals compare as numbers",
        ),
    ],
)
def test_sort_candidates(nodes: list[Node], expected: list[str]) -> None:
    assert [pod.name for pod in sort_candidates([n.pod() for n in nodes])] == expected


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        # ECK's Test_healthyPods.
        pytest.param(
            [node(f"masters-{i}", "master") for i in (2, 1, 0)],
            {"masters-0", "masters-1", "masters-2"},
            id="All Pods are healthy",
        ),
        pytest.param(
            [
                node("masters-2", "master"),
                node("masters-1", "master", terminating=True),
                node("masters-0", "master"),
            ],
            {"masters-0", "masters-2"},
            id="One Pod is terminating",
        ),
        pytest.param(
            [
                node("masters-1", "master", in_cluster=False),
                node("masters-0", "master", healthy=False),
            ],
            set(),
            id="not in the cluster, not ready",
        ),
    ],
)
def test_healthy_pod_names(nodes: list[Node], expected: set[str]) -> None:
    topology = Topology(tuple(nodes))
    assert healthy_pod_names(topology.pods, topology.cluster()) == expected


TWO_NODES = (StatefulSetState("es", 2),)
TWO_PODS = tuple(PodState(f"es-{i}", labels={ES_STATEFULSET_NAME_LABEL: "es"}) for i in range(2))
RESTART_0 = NodeShutdown("node-id-0", "RESTART", "COMPLETE")
LEFT_OVER = NodeShutdown("node-id-99", "RESTART", "COMPLETE")
DISABLED = AllocationSettings(enable="none")


@pytest.mark.parametrize(
    ("nodes", "shutdowns", "allocation", "no_transient_settings", "expected"),
    [
        # ECK's Test_Driver_maybeCompleteNodeUpgrades (the unmet-expectations row is
        # test_nothing_happens_until_the_expectations_are_met).
        pytest.param(
            {"node-id-0": "es-0"},
            (RESTART_0,),
            AllocationSettings(),
            False,
            AfterRestarts((DeleteNodeShutdown("node-id-0"),), NOT_BACK_REASON),
            id="restarted node back in cluster but not all nodes",
        ),
        pytest.param(
            {"node-id-0": "es-0"},
            (LEFT_OVER,),
            DISABLED,
            False,
            AfterRestarts((), NOT_BACK_REASON),
            id="not all nodes in cluster, routing disabled, left over shutdown: no calls",
        ),
        pytest.param(
            {"node-id-0": "es-0", "node-id-1": "es-1"},
            (LEFT_OVER,),
            AllocationSettings(),
            False,
            AfterRestarts((DeleteNodeShutdown("node-id-99"),)),
            id="all nodes in cluster, left over shutdown cleaned up",
        ),
        pytest.param(
            {"node-id-0": "es-0", "node-id-1": "es-1"},
            (),
            DISABLED,
            False,
            AfterRestarts((EnableAllocation(),)),
            id="all nodes in cluster, routing allocation re-enabled",
        ),
        pytest.param(
            {"node-id-0": "es-0", "node-id-1": "es-1"},
            (),
            DISABLED,
            True,
            AfterRestarts(),
            id="all nodes in cluster, orchestration hint set: no call",
        ),
        pytest.param(
            {"node-id-0": "es-0", "node-id-1": "es-1"},
            (
                NodeShutdown("node-id-0", "RESTART", "IN_PROGRESS"),
                NodeShutdown("node-id-1", "REMOVE", "COMPLETE"),
            ),
            AllocationSettings(enable="primaries"),
            False,
            AfterRestarts((EnableAllocation(),)),
            id="only completed restart records go",
        ),
    ],
)
def test_complete_restarts(
    nodes: dict[str, str],
    shutdowns: tuple[NodeShutdown, ...],
    allocation: AllocationSettings,
    no_transient_settings: bool,
    expected: AfterRestarts,
) -> None:
    cluster = ClusterView(
        nodes=tuple(ClusterNode(name, node_id) for node_id, name in nodes.items()),
        allocation=allocation,
        shutdowns=shutdowns,
    )
    result = complete_restarts(
        statefulsets=TWO_NODES,
        pods=TWO_PODS,
        cluster=cluster,
        node_shutdown=True,
        no_transient_settings=no_transient_settings,
    )
    assert result == expected


def test_complete_restarts_keeps_records_of_terminating_pods() -> None:
    pods = (TWO_PODS[0], dataclasses.replace(TWO_PODS[1], terminating=True))
    cluster = ClusterView(
        nodes=(ClusterNode("es-0", "id-0"), ClusterNode("es-1", "id-1")),
        shutdowns=(
            NodeShutdown("id-0", "RESTART", "COMPLETE"),
            NodeShutdown("id-1", "RESTART", "COMPLETE"),
        ),
    )
    result = complete_restarts(
        statefulsets=TWO_NODES, pods=pods, cluster=cluster, node_shutdown=True
    )
    assert result.steps == (DeleteNodeShutdown("id-0"),)


READY = node("es-0", "master", version="8.15.0").pod()
NOT_READY = node("es-1", "master", version="8.15.0", healthy=False).pod()
CLUSTER = ClusterView(
    nodes=(ClusterNode("es-0", "id-0"), ClusterNode("es-1", "id-1")), shutdowns=()
)


@pytest.mark.parametrize(
    ("pods", "cluster", "node_shutdown", "target", "expected_steps", "requested"),
    [
        pytest.param(
            [READY],
            CLUSTER,
            False,
            "7.17.0",
            (DisableReplicaAllocation(), Flush(synced=True)),
            set(),
            id="legacy: disable and synced flush",
        ),
        pytest.param(
            [READY],
            dataclasses.replace(CLUSTER, allocation=AllocationSettings(enable="primaries")),
            False,
            "8.0.0",
            (Flush(synced=False),),
            set(),
            id="legacy: allocation already off",
        ),
        pytest.param(
            [READY, NOT_READY],
            CLUSTER,
            True,
            "8.15.0",
            (PutNodeShutdown("es-0", "id-0", "restart", "rv"),),
            {"es-0"},
            id="shutdown for ready Pods only",
        ),
        pytest.param(
            [READY],
            dataclasses.replace(
                CLUSTER, shutdowns=(NodeShutdown("id-0", "RESTART", "IN_PROGRESS"),)
            ),
            True,
            "8.15.0",
            (),
            set(),
            id="a restart record is already there",
        ),
        pytest.param(
            [READY],
            dataclasses.replace(
                CLUSTER, shutdowns=(NodeShutdown("id-0", "REMOVE", "IN_PROGRESS"),)
            ),
            True,
            "8.15.0",
            (PutNodeShutdown("es-0", "id-0", "restart", "rv"),),
            {"es-0"},
            id="a remove record is not a restart one",
        ),
        pytest.param(
            [NOT_READY],
            dataclasses.replace(
                CLUSTER,
                shutdowns=(
                    NodeShutdown("id-0", "RESTART", "IN_PROGRESS"),
                    NodeShutdown("id-1", "REMOVE", "IN_PROGRESS"),
                ),
            ),
            True,
            "8.15.0",
            (DeleteNodeShutdown("id-0"),),
            set(),
            id="ECK's quirk: no ready Pod cancels every restart shutdown",
        ),
    ],
)
def test_prepare_restarts(
    pods: list[PodState],
    cluster: ClusterView,
    node_shutdown: bool,
    target: str,
    expected_steps: tuple[object, ...],
    requested: set[str],
) -> None:
    preparation = prepare_restarts(
        pods, cluster=cluster, node_shutdown=node_shutdown, target_version=target, reason="rv"
    )
    assert preparation.steps == expected_steps
    assert preparation.requested == requested


def test_prepare_restarts_refuses_a_ready_pod_out_of_the_cluster() -> None:
    with pytest.raises(SnapshotError, match="node es-0 currently not member of the cluster"):
        prepare_restarts(
            [READY], cluster=ClusterView(), node_shutdown=True, target_version="8.15.0"
        )


def forced(name: str, statefulset: str, **fields: object) -> Node:
    """A Pod of ``statefulset`` for the forced-upgrade rows (outdated unless told)."""
    return dataclasses.replace(node(f"{statefulset}-{name}"), **{"outdated": True, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("nodes", "deleted", "attempted"),
    [
        # ECK's Test_Driver_maybeForceUpgradePods.
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, outdated=False),
                forced("0", "ssetB", outdated=False),
            ],
            [],
            False,
            id="no pods to upgrade",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, restart_count=1),
                forced("0", "ssetB", healthy=False, restart_count=1),
                forced("1", "ssetB", healthy=False, restart_count=1),
            ],
            ["ssetA-0", "ssetB-0", "ssetB-1"],
            True,
            id="pods bootlooping in all StatefulSets, upgrade them all",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, restart_count=0),
                forced("0", "ssetB", healthy=False, restart_count=1),
                forced("1", "ssetB", healthy=False, restart_count=1),
            ],
            ["ssetB-0", "ssetB-1"],
            True,
            id="all pods bootlooping in StatefulSet B, upgrade them",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, phase="Pending"),
                forced("0", "ssetB", healthy=False, phase="Pending"),
                forced("1", "ssetB", healthy=False, phase="Pending"),
            ],
            ["ssetA-0", "ssetB-0", "ssetB-1"],
            True,
            id="all pods pending in all StatefulSets, upgrade them all",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, phase="Pending"),
                forced("0", "ssetB", healthy=False, phase="Pending"),
                forced("1", "ssetB", healthy=False, phase="Running"),
            ],
            ["ssetA-0"],
            True,
            id="all pods pending in StatefulSet A, upgrade them",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, phase="Pending", outdated=False),
                forced("1", "ssetA", healthy=False, phase="Pending"),
            ],
            ["ssetA-1"],
            True,
            id="1/2 pod to upgrade",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, phase="Pending"),
                forced("1", "ssetA"),
                forced("2", "ssetA", healthy=False, phase="Pending"),
            ],
            [],
            False,
            id="at least one pod ready, don't upgrade any",
        ),
        pytest.param(
            [
                forced("0", "ssetA", healthy=False, restart_count=1),
                forced("1", "ssetA", healthy=False, restart_count=0),
                forced("2", "ssetA", healthy=False, restart_count=1),
            ],
            [],
            False,
            id="at least one pod not bootlooping, don't restart any",
        ),
        pytest.param(
            [forced("0", "ssetA", healthy=False, restart_count=None)],
            ["ssetA-0"],
            True,
            id="no elasticsearch container status counts as bootlooping",
        ),
    ],
)
def test_forced_upgrade(nodes: list[Node], deleted: list[str], attempted: bool) -> None:
    topology = Topology(tuple(nodes))
    result = forced_upgrade(topology.statefulsets, topology.pods)
    assert result.steps == tuple(DeletePod(name, FORCED_DELETE_MESSAGE) for name in deleted)
    assert result.attempted is attempted


@pytest.mark.parametrize(
    ("node_shutdown", "hint", "reconciled", "expected"),
    [
        pytest.param(
            True, False, True, (RemoveTransientAllocationSettings(),), id="once, when reconciled"
        ),
        pytest.param(True, True, True, (), id="already done (hint set)"),
        pytest.param(True, False, False, (), id="not reconciled yet"),
        pytest.param(False, False, True, (), id="before 7.15.2 the settings are still in use"),
    ],
)
def test_remove_transient_settings(
    node_shutdown: bool, hint: bool, reconciled: bool, expected: tuple[object, ...]
) -> None:
    assert (
        remove_transient_settings(
            node_shutdown=node_shutdown, no_transient_settings=hint, reconciled=reconciled
        )
        == expected
    )
