"""ECK's ten predicates: their names and order, the tier dependency table of
``Test_hasDependencyInOthers``, each predicate on its own, and the disabling annotation."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from stackflow.stack.elasticsearch.config import DEFAULT_ROLES
from stackflow.stack.elasticsearch.orchestration.predicates import (
    PREDICATE_NAMES,
    PREDICATES,
    PredicateContext,
    disabled_predicates,
    first_failing_predicate,
    has_dependency_in_others,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ClusterHealth,
    PodState,
    Shard,
    SnapshotError,
    expected_master_names,
)
from tests.unit.orchestration.fixtures import Node, Topology, node, roles, shard

ECK_ORDER = (
    "data_tier_with_higher_priority_must_be_upgraded_first",
    "do_not_restart_healthy_node_if_MaxUnavailable_reached",
    "skip_already_terminating_pods",
    "only_restart_healthy_node_if_green_or_yellow",
    "if_yellow_only_restart_upgrading_nodes_with_unassigned_replicas",
    "require_started_replica",
    "one_master_at_a_time",
    "do_not_delete_last_master_if_all_master_ineligible_nodes_are_not_upgraded",
    "do_not_delete_pods_with_same_shards",
    "do_not_delete_all_members_of_a_tier",
)


def test_names_and_order_are_ecks() -> None:
    assert PREDICATE_NAMES == ECK_ORDER
    assert all(predicate.message for predicate in PREDICATES)


ALL = DEFAULT_ROLES


@pytest.mark.parametrize(
    ("candidate", "others", "expected"),
    [
        # ECK's Test_hasDependencyInOthers, row by row.
        pytest.param(roles("data_cold"), [ALL], False, id="other is a dependency but a master"),
        pytest.param(
            roles("master", "data_cold"),
            [roles("master", "data_frozen")],
            True,
            id="cold on frozen",
        ),
        pytest.param(
            roles("master", "data_frozen"),
            [roles("master", "data_cold")],
            False,
            id="frozen not on cold",
        ),
        pytest.param(roles("master"), [roles("data_warm")], False, id="master only: no tier"),
        pytest.param(ALL, [roles("data_warm")], True, id="all roles (hot) on warm"),
        pytest.param(
            roles("data_frozen"), [roles("data_cold")], False, id="frozen not on cold (no master)"
        ),
        pytest.param(roles("data_hot"), [roles("data_warm")], True, id="hot on warm"),
        pytest.param(
            roles("data_frozen", "data_cold"),
            [roles("data_cold", "data_warm")],
            False,
            id="frozen+cold vs cold+warm",
        ),
        pytest.param(
            roles("data_cold", "data_warm"), [roles("data_cold")], True, id="warm on cold"
        ),
        pytest.param(
            roles("data_frozen", "data_warm"),
            [roles("data_cold")],
            False,
            id="overlap frozen+warm vs cold",
        ),
        pytest.param(
            roles("data_frozen", "data_warm"),
            [roles("data_cold", "data_hot")],
            False,
            id="overlap vs cold+hot",
        ),
        pytest.param(
            roles("data_frozen", "data_cold"),
            [roles("data_warm", "data_hot")],
            False,
            id="frozen+cold before warm+hot",
        ),
        pytest.param(
            roles("data_warm", "data_hot"),
            [roles("data_frozen", "data_cold")],
            True,
            id="warm+hot after frozen+cold",
        ),
        pytest.param(
            roles("data_cold", "data_hot"),
            [roles("data_frozen", "data_hot")],
            False,
            id="both hot: cold first",
        ),
        pytest.param(
            roles("data_frozen", "data_hot"),
            [roles("data_cold", "data_hot")],
            False,
            id="overlap frozen+hot vs cold+hot",
        ),
        pytest.param(
            roles("data_cold", "data_hot"), [roles("data")], False, id="cold+hot vs generic data"
        ),
        pytest.param(
            roles("data_frozen", "data_hot"),
            [roles("data")],
            False,
            id="frozen+hot vs generic data",
        ),
        # Beyond ECK's table.
        pytest.param(
            roles("data_hot"), [roles("ingest"), roles("ml")], False, id="others hold no data"
        ),
        pytest.param(roles("data_hot"), [], False, id="no other"),
        pytest.param(
            roles("data_content"), [roles("data_frozen")], False, id="content depends on nothing"
        ),
    ],
)
def test_has_dependency_in_others(
    candidate: frozenset[str], others: list[frozenset[str]], expected: bool
) -> None:
    assert has_dependency_in_others(candidate, others) is expected


def context_of(
    topology: Topology,
    *,
    spec_version: str = "7.4.0",
    health: ClusterHealth | None = None,
    shards: Sequence[Shard] = (),
    master_update_in_progress: bool = False,
) -> PredicateContext:
    pods = topology.pods
    return PredicateContext(
        spec_version=spec_version,
        expected_roles={s.name: s.roles for s in topology.expected},
        expected_masters=frozenset(expected_master_names(topology.expected)),
        healthy=frozenset(
            n.name for n in topology.nodes if n.healthy and n.in_cluster and not n.terminating
        ),
        to_upgrade=tuple(p for p, n in zip(pods, topology.nodes, strict=True) if n.outdated),
        current_pods=pods,
        health=health or ClusterHealth("green"),
        shards=tuple(shards),
        master_update_in_progress=master_update_in_progress,
    )


def allowed(
    name: str,
    topology: Topology,
    candidate: str,
    *,
    selected: Sequence[str] = (),
    budget_reached: bool = False,
    **context: object,
) -> bool:
    predicate = next(p for p in PREDICATES if p.name == name)
    ctx = context_of(topology, **context)  # type: ignore[arg-type]
    by_name = {pod.name: pod for pod in ctx.current_pods}
    return predicate.allows(ctx, by_name[candidate], [by_name[s] for s in selected], budget_reached)


def cluster_of(*nodes: Node, masters: dict[str, bool] | None = None) -> Topology:
    return Topology(tuple(nodes), master_change=masters or {})


TIERS = cluster_of(
    node("master-0", "master", outdated=True, version="7.14.0"),
    node("cold-0", "data_cold", outdated=True, version="7.14.0"),
    node("frozen-0", "data_frozen", outdated=True, version="7.14.0"),
    node("hot-0", "data_hot", outdated=True, version="7.14.0"),
)
THREE_MASTERS = cluster_of(
    node("masters-0", "master", "data", outdated=True),
    node("masters-1", "master", "data", outdated=True),
    node("masters-2", "master", "data", outdated=True),
)
YELLOW_PAIR = cluster_of(
    node("m-0", "master", "data", outdated=True, version="7.4.0"),
    node("m-1", "master", "data", outdated=True, version="7.5.0"),
)
INGEST = cluster_of(
    node("ingest-0", "ingest", outdated=True),
    node("ingest-1", "ingest", outdated=True),
    node("ml-0", "ml", outdated=True),
)


@pytest.mark.parametrize(
    ("predicate", "topology", "candidate", "options", "expected"),
    [
        # data_tier_with_higher_priority_must_be_upgraded_first
        pytest.param(
            ECK_ORDER[0],
            TIERS,
            "cold-0",
            {"spec_version": "7.15.0"},
            False,
            id="tier: cold waits for frozen",
        ),
        pytest.param(
            ECK_ORDER[0],
            TIERS,
            "frozen-0",
            {"spec_version": "7.15.0"},
            True,
            id="tier: frozen goes",
        ),
        pytest.param(
            ECK_ORDER[0], TIERS, "hot-0", {"spec_version": "7.15.0"}, False, id="tier: hot waits"
        ),
        pytest.param(
            ECK_ORDER[0],
            TIERS,
            "cold-0",
            {"spec_version": "7.14.0"},
            True,
            id="tier: no version change",
        ),
        pytest.param(
            ECK_ORDER[0],
            cluster_of(
                node("cold-0", "data_cold", outdated=True),
                node("frozen-0", "data_frozen", outdated=True),
            ),
            "cold-0",
            {"spec_version": "7.9.0"},
            True,
            id="tier: before 7.10 there are no tiers",
        ),
        pytest.param(
            ECK_ORDER[0],
            cluster_of(
                node("cold-0", "data_cold", version="7.14.0", outdated=True),
                node("frozen-0", "data_frozen", version="7.15.0"),
            ),
            "cold-0",
            {"spec_version": "7.15.0"},
            True,
            id="tier: frozen already upgraded",
        ),
        pytest.param(
            ECK_ORDER[0],
            cluster_of(
                node("cold-0", "data_cold", version="7.14.0", outdated=True),
                node("frozen-0", "data_frozen", version="7.15.0"),
            ),
            "cold-0",
            {"spec_version": "7.15.0", "selected": ["frozen-0"]},
            False,
            id="tier: a frozen node picked in this pass counts",
        ),
        # do_not_restart_healthy_node_if_MaxUnavailable_reached
        pytest.param(
            ECK_ORDER[1],
            THREE_MASTERS,
            "masters-0",
            {"budget_reached": True},
            False,
            id="budget: healthy held",
        ),
        pytest.param(ECK_ORDER[1], THREE_MASTERS, "masters-0", {}, True, id="budget: left"),
        pytest.param(
            ECK_ORDER[1],
            cluster_of(node("a-0", healthy=False, outdated=True)),
            "a-0",
            {"budget_reached": True},
            True,
            id="budget: an unhealthy Pod still goes",
        ),
        # skip_already_terminating_pods
        pytest.param(
            ECK_ORDER[2],
            cluster_of(node("a-0", terminating=True)),
            "a-0",
            {},
            False,
            id="terminating",
        ),
        pytest.param(ECK_ORDER[2], cluster_of(node("a-0")), "a-0", {}, True, id="not terminating"),
        # only_restart_healthy_node_if_green_or_yellow
        pytest.param(
            ECK_ORDER[3],
            THREE_MASTERS,
            "masters-0",
            {"health": ClusterHealth("red")},
            False,
            id="red",
        ),
        pytest.param(
            ECK_ORDER[3],
            THREE_MASTERS,
            "masters-0",
            {"health": ClusterHealth("unknown")},
            False,
            id="unknown",
        ),
        pytest.param(
            ECK_ORDER[3],
            THREE_MASTERS,
            "masters-0",
            {"health": ClusterHealth("yellow")},
            True,
            id="yellow",
        ),
        pytest.param(
            ECK_ORDER[3],
            cluster_of(node("a-0", in_cluster=False)),
            "a-0",
            {"health": ClusterHealth("red")},
            True,
            id="red: a Pod out of the cluster may go",
        ),
        # if_yellow_only_restart_upgrading_nodes_with_unassigned_replicas
        pytest.param(
            ECK_ORDER[4],
            YELLOW_PAIR,
            "m-0",
            {"spec_version": "7.5.0", "health": ClusterHealth("yellow")},
            True,
            id="yellow: upgrading",
        ),
        pytest.param(
            ECK_ORDER[4],
            YELLOW_PAIR,
            "m-1",
            {"spec_version": "7.5.0", "health": ClusterHealth("yellow")},
            False,
            id="yellow: not upgrading",
        ),
        pytest.param(
            ECK_ORDER[4],
            YELLOW_PAIR,
            "m-0",
            {"spec_version": "7.5.0", "health": ClusterHealth("yellow", initializing_shards=1)},
            False,
            id="yellow: shards initializing",
        ),
        pytest.param(
            ECK_ORDER[4],
            YELLOW_PAIR,
            "m-0",
            {"spec_version": "7.5.0", "health": ClusterHealth("yellow", timed_out=True)},
            False,
            id="yellow: health timed out",
        ),
        pytest.param(
            ECK_ORDER[4],
            cluster_of(node("m-0", version="7.5.0", outdated=True)),
            "m-0",
            {"spec_version": "7.5.0", "health": ClusterHealth("yellow")},
            True,
            id="yellow: a single node restarts anyway",
        ),
        pytest.param(
            ECK_ORDER[4],
            YELLOW_PAIR,
            "m-1",
            {"spec_version": "7.5.0", "health": ClusterHealth("green", relocating_shards=2)},
            True,
            id="green: not concerned",
        ),
        # require_started_replica
        pytest.param(
            ECK_ORDER[5],
            YELLOW_PAIR,
            "m-0",
            {
                "health": ClusterHealth("yellow"),
                "shards": [
                    shard("i", "0", "STARTED", "m-0", "p"),
                    shard("i", "0", "UNASSIGNED", "", "r"),
                ],
            },
            False,
            id="started replica: only copy unassigned",
        ),
        pytest.param(
            ECK_ORDER[5],
            YELLOW_PAIR,
            "m-0",
            {
                "health": ClusterHealth("yellow"),
                "shards": [
                    shard("i", "0", "STARTED", "m-0", "p"),
                    shard("i", "0", "STARTED", "m-1", "r"),
                ],
            },
            True,
            id="started replica: a started copy elsewhere",
        ),
        pytest.param(
            ECK_ORDER[5],
            YELLOW_PAIR,
            "m-0",
            {"health": ClusterHealth("yellow"), "shards": [shard("i", "0", "STARTED", "m-0", "p")]},
            True,
            id="started replica: no replica configured",
        ),
        pytest.param(
            ECK_ORDER[5],
            YELLOW_PAIR,
            "m-0",
            {
                "health": ClusterHealth("yellow"),
                "shards": [
                    shard("i", "0", "STARTED", "m-0", "r"),
                    shard("i", "0", "UNASSIGNED", "", "r"),
                ],
            },
            True,
            id="started replica: only replicas on the candidate",
        ),
        pytest.param(
            ECK_ORDER[5],
            YELLOW_PAIR,
            "m-0",
            {
                "health": ClusterHealth("green"),
                "shards": [
                    shard("i", "0", "STARTED", "m-0", "p"),
                    shard("i", "0", "UNASSIGNED", "", "r"),
                ],
            },
            True,
            id="started replica: green skips the check",
        ),
        # one_master_at_a_time
        pytest.param(ECK_ORDER[6], THREE_MASTERS, "masters-2", {}, True, id="master: all healthy"),
        pytest.param(
            ECK_ORDER[6],
            THREE_MASTERS,
            "masters-2",
            {"master_update_in_progress": True},
            False,
            id="master: another picked",
        ),
        pytest.param(
            ECK_ORDER[6],
            cluster_of(
                node("m-0", "master"),
                node("m-1", "master", in_cluster=False),
                node("m-2", "master", outdated=True),
            ),
            "m-2",
            {},
            False,
            id="master: another master unavailable",
        ),
        pytest.param(
            ECK_ORDER[6],
            cluster_of(node("m-0", "master"), node("m-1", "master", healthy=False, outdated=True)),
            "m-1",
            {},
            True,
            id="master: an unavailable master may go",
        ),
        pytest.param(
            ECK_ORDER[6],
            cluster_of(
                node("d-0", "data", outdated=True), node("m-0", "master"), masters={"d": True}
            ),
            "d-0",
            {"master_update_in_progress": True},
            False,
            id="master: a future master waits too",
        ),
        pytest.param(
            ECK_ORDER[6],
            cluster_of(node("d-0", "data", outdated=True)),
            "d-0",
            {"master_update_in_progress": True},
            True,
            id="master: data nodes do not care",
        ),
        pytest.param(
            ECK_ORDER[6],
            cluster_of(
                node("m-0", "master", healthy=False),
                node("o-0", "master", "data", outdated=True),
                masters={"o": False},
            ),
            "o-0",
            {},
            False,
            id="master: demotion waits for the other masters",
        ),
        # do_not_delete_last_master_if_all_master_ineligible_nodes_are_not_upgraded
        pytest.param(
            ECK_ORDER[7],
            cluster_of(node("m-0", "master", outdated=True), node("d-0", "data", outdated=True)),
            "m-0",
            {},
            False,
            id="last master: data not upgraded",
        ),
        pytest.param(
            ECK_ORDER[7],
            cluster_of(
                node("m-0", "master", outdated=True),
                node("m-1", "master", outdated=True),
                node("d-0", "data", outdated=True),
            ),
            "m-0",
            {},
            True,
            id="last master: other masters still to go",
        ),
        pytest.param(
            ECK_ORDER[7],
            cluster_of(node("m-0", "master", outdated=True), node("d-0", "data")),
            "m-0",
            {},
            True,
            id="last master: data done",
        ),
        # do_not_delete_pods_with_same_shards
        pytest.param(
            ECK_ORDER[8],
            INGEST,
            "ingest-1",
            {
                "selected": ["ingest-0"],
                "shards": [
                    shard("i", "0", "STARTED", "ingest-0", "p"),
                    shard("i", "0", "STARTED", "ingest-1", "r"),
                ],
            },
            False,
            id="same shards: copies of one shard",
        ),
        pytest.param(
            ECK_ORDER[8],
            INGEST,
            "ingest-1",
            {
                "selected": ["ingest-0"],
                "shards": [
                    shard("i", "0", "STARTED", "ingest-0", "p"),
                    shard("i", "1", "STARTED", "ingest-1", "r"),
                ],
            },
            True,
            id="same shards: different shard numbers",
        ),
        pytest.param(
            ECK_ORDER[8],
            INGEST,
            "ingest-1",
            {
                "shards": [
                    shard("i", "0", "STARTED", "ingest-0", "p"),
                    shard("i", "0", "STARTED", "ingest-1", "r"),
                ]
            },
            True,
            id="same shards: nothing picked yet",
        ),
        # do_not_delete_all_members_of_a_tier
        pytest.param(
            ECK_ORDER[9],
            cluster_of(
                node("ingest-0", "ingest", outdated=True), node("ingest-1", "ingest", healthy=False)
            ),
            "ingest-0",
            {},
            False,
            id="tier: the other member is down",
        ),
        pytest.param(
            ECK_ORDER[9], INGEST, "ml-0", {}, True, id="tier: a single-member tier may go"
        ),
        pytest.param(ECK_ORDER[9], INGEST, "ingest-0", {}, True, id="tier: another member is up"),
        pytest.param(
            ECK_ORDER[9],
            cluster_of(
                node("ingest-0", "ingest", healthy=False, outdated=True),
                node("ingest-1", "ingest", healthy=False),
            ),
            "ingest-0",
            {},
            True,
            id="tier: an unavailable member may go",
        ),
    ],
)
def test_predicate(
    predicate: str, topology: Topology, candidate: str, options: dict[str, object], expected: bool
) -> None:
    assert allowed(predicate, topology, candidate, **options) is expected  # type: ignore[arg-type]


def test_data_tier_predicate_needs_the_pods_statefulset_in_the_spec() -> None:
    topology = cluster_of(node("cold-0", "data_cold", version="7.14.0", outdated=True))
    ctx = context_of(topology, spec_version="7.15.0")
    ctx = PredicateContext(**{**ctx.__dict__, "expected_roles": {}})
    with pytest.raises(SnapshotError, match="no expected StatefulSet cold"):
        first_failing_predicate(ctx, ctx.current_pods[0], [], budget_reached=False)


def test_data_tier_predicate_needs_a_version_label() -> None:
    pod = PodState("cold-0", labels={})
    ctx = context_of(cluster_of(node("cold-0", "data_cold")), spec_version="7.15.0")
    with pytest.raises(SnapshotError, match="invalid version"):
        first_failing_predicate(ctx, pod, [], budget_reached=False)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, frozenset(), id="no annotation"),
        pytest.param(
            {"eck.k8s.elastic.co/disable-upgrade-predicates": "one_master_at_a_time"},
            {"one_master_at_a_time"},
            id="one name",
        ),
        pytest.param(
            {"eck.k8s.elastic.co/disable-upgrade-predicates": "a, b ,c"},
            {"a", "b", "c"},
            id="a list, trimmed",
        ),
        pytest.param({"eck.k8s.elastic.co/disable-upgrade-predicates": "*"}, {"*"}, id="all"),
    ],
)
def test_disabled_predicates(annotations: dict[str, str], expected: frozenset[str]) -> None:
    assert disabled_predicates(annotations) == expected


@pytest.mark.parametrize(
    ("disabled", "expected"),
    [
        pytest.param(
            frozenset(), "only_restart_healthy_node_if_green_or_yellow", id="first failing"
        ),
        pytest.param(
            frozenset({"only_restart_healthy_node_if_green_or_yellow"}),
            "do_not_delete_last_master_if_all_master_ineligible_nodes_are_not_upgraded",
            id="the next one is asked",
        ),
        pytest.param(
            frozenset(
                {
                    "only_restart_healthy_node_if_green_or_yellow",
                    "do_not_delete_last_master_if_all_master_ineligible_nodes_are_not_upgraded",
                }
            ),
            None,
            id="both disabled",
        ),
        pytest.param(frozenset({"*"}), None, id="all disabled"),
    ],
)
def test_first_failing_predicate(disabled: frozenset[str], expected: str | None) -> None:
    topology = cluster_of(node("m-0", "master", outdated=True), node("d-0", "data", outdated=True))
    ctx = context_of(topology, health=ClusterHealth("red"))
    failing = first_failing_predicate(
        ctx, ctx.current_pods[0], [], budget_reached=False, disabled=disabled
    )
    assert (failing.name if failing else None) == expected
