"""One pass over the node specs: what is written to the StatefulSets, then which steps run."""

from __future__ import annotations

import dataclasses

import pytest

from stackflow.stack.elasticsearch.orchestration import (
    AllocationSettings,
    ClusterHealth,
    ClusterNode,
    ClusterView,
    ExpectationCheck,
    ExpectedStatefulSet,
    NodeShutdown,
    PodState,
    Shard,
    StatefulSetState,
    resolve_change_budget,
)
from stackflow.stack.elasticsearch.orchestration.node_specs import (
    ELASTICSEARCH_NOT_REACHABLE_REASON,
    NodeSpecsSnapshot,
    drop_noops,
    plan_changes,
    statefulset_targets,
)
from stackflow.stack.elasticsearch.orchestration.steps import (
    AddVotingExclusions,
    ClearVotingExclusions,
    DeletePod,
    DisableReplicaAllocation,
    EnableAllocation,
    ExcludeFromAllocation,
    Flush,
    PutNodeShutdown,
    ScaleStatefulSet,
    Step,
)

SSET = "es-es-default"
NO_ALLOCATION_SETTINGS = AllocationSettings()
FRESH = ExpectationCheck(met=True)
MASTER_DATA = frozenset({"master", "data"})


def pod(
    ordinal: int, *, revision: str = "r1", version: str = "8.17.0", ready: bool = True
) -> PodState:
    return PodState(
        name=f"{SSET}-{ordinal}",
        labels={
            "controller-revision-hash": revision,
            "elasticsearch.k8s.elastic.co/statefulset-name": SSET,
            "elasticsearch.k8s.elastic.co/version": version,
            "elasticsearch.k8s.elastic.co/node-master": "true",
            "elasticsearch.k8s.elastic.co/node-data": "true",
        },
        ready=ready,
        restart_count=0,
    )


def cluster(
    count: int,
    *,
    shutdowns: tuple[NodeShutdown, ...] | None = None,
    allocation: AllocationSettings = NO_ALLOCATION_SETTINGS,
    voting: tuple[str, ...] = (),
    shards: tuple[Shard, ...] = (),
) -> ClusterView:
    return ClusterView(
        health=ClusterHealth("green"),
        nodes=tuple(
            ClusterNode(f"{SSET}-{i}", f"id-{i}", MASTER_DATA, "8.17.0") for i in range(count)
        ),
        shards=shards,
        allocation=allocation,
        voting_exclusions=voting,
        shutdowns=shutdowns,
    )


def snapshot(
    *,
    replicas: int = 3,
    wanted: int = 3,
    pods: tuple[PodState, ...] | None = None,
    view: ClusterView | None = None,
    spec_version: str = "8.17.0",
    update_revision: str = "r1",
    expectations: ExpectationCheck = FRESH,
) -> NodeSpecsSnapshot:
    return NodeSpecsSnapshot(
        spec_version=spec_version,
        status_version="8.17.0",
        budget=resolve_change_budget(1),
        expected=(ExpectedStatefulSet(SSET, wanted, MASTER_DATA),),
        statefulsets=(
            StatefulSetState(
                SSET, replicas, update_revision=update_revision, master=True, version=spec_version
            ),
        ),
        pods=pods if pods is not None else tuple(pod(i) for i in range(replicas)),
        cluster=view if view is not None else cluster(replicas),
        expectations=expectations,
    )


@pytest.mark.parametrize(
    ("replicas", "wanted", "write", "target"),
    [
        (3, 3, True, 3),
        # An upscale is written (maxSurge unbounded by default).
        (1, 3, True, 3),
        # A downscale keeps the replicas: the downscale removes the nodes, data moved first.
        (3, 1, True, 3),
    ],
)
def test_statefulset_targets(replicas: int, wanted: int, write: bool, target: int) -> None:
    targets = statefulset_targets(snapshot(replicas=replicas, wanted=wanted))
    assert targets.write is write
    assert targets.replicas[SSET] == target
    assert targets.new_template == frozenset({SSET})


def test_nothing_is_written_while_the_listing_is_stale() -> None:
    stale = ExpectationCheck(met=False, reason="Expecting deletion for Pods: es-es-default-0")
    targets = statefulset_targets(snapshot(expectations=stale))
    assert (targets.write, targets.requeue_reasons) == (False, (stale.reason,))
    assert plan_changes(snapshot(expectations=stale)).steps == ()


def test_a_cluster_at_rest_costs_no_step() -> None:
    assert plan_changes(snapshot()).steps == ()
    assert not plan_changes(snapshot()).in_progress


def test_an_unreachable_cluster_with_nothing_to_change_is_at_rest() -> None:
    assert not plan_changes(dataclasses.replace(snapshot(), cluster=None)).in_progress


def test_an_unreachable_cluster_is_not_changed() -> None:
    plan = plan_changes(dataclasses.replace(snapshot(update_revision="r2"), cluster=None))
    assert plan.steps == ()
    assert plan.requeue_reasons == (ELASTICSEARCH_NOT_REACHABLE_REASON,)


def test_a_build_without_the_shutdown_api_restarts_the_older_way() -> None:
    # 8.17 has the node shutdown API, the minimal distribution does not: primaries and a flush.
    plan = plan_changes(snapshot(update_revision="r2", view=cluster(3, shutdowns=None)))
    assert plan.steps == (
        DisableReplicaAllocation(),
        Flush(synced=False),
        DeletePod(f"{SSET}-2", "Deleting pod for rolling upgrade"),
    )


def test_the_shutdown_api_restarts_in_two_passes() -> None:
    first = plan_changes(snapshot(update_revision="r2", view=cluster(3, shutdowns=())))
    assert first.steps == (PutNodeShutdown(f"{SSET}-2", "id-2", "restart", ""),)
    # Next pass: the record this operator requested reads COMPLETE; it is kept and the Pod goes.
    done = (NodeShutdown("id-2", "RESTART", "COMPLETE"),)
    second = plan_changes(snapshot(update_revision="r2", view=cluster(3, shutdowns=done)))
    assert second.steps == (DeletePod(f"{SSET}-2", "Deleting pod for rolling upgrade"),)


def test_a_downscale_moves_data_before_it_resizes_and_restarts_wait() -> None:
    on_2 = (Shard("i", "0", True, "STARTED", f"{SSET}-2"),)
    moving = plan_changes(snapshot(wanted=2, view=cluster(3, shards=on_2)))
    assert moving.steps == (ExcludeFromAllocation(f"{SSET}-2"),)
    assert moving.downscale is not None
    assert moving.downscale.phase == "MigratingData"
    excluded = AllocationSettings(exclude_name=f"{SSET}-2")
    moved = plan_changes(snapshot(wanted=2, view=cluster(3, allocation=excluded)))
    assert moved.steps == (AddVotingExclusions((f"{SSET}-2",)), ScaleStatefulSet(SSET, 2))
    # The resize ends the pass: no restart is decided from the sizes before it.
    assert moved.upgrade is None


def test_voting_exclusions_are_cleared_once_every_pod_is_there() -> None:
    plan = plan_changes(snapshot(replicas=2, wanted=2, view=cluster(2, voting=(f"{SSET}-2",))))
    assert ClearVotingExclusions() in plan.steps


@pytest.mark.parametrize(
    ("steps", "view", "kept"),
    [
        ((ExcludeFromAllocation("none_excluded"),), cluster(3), ()),
        (
            (ExcludeFromAllocation("none_excluded"),),
            cluster(3, allocation=AllocationSettings(exclude_name="a")),
            (ExcludeFromAllocation("none_excluded"),),
        ),
        ((EnableAllocation(),), cluster(3), ()),
        (
            (EnableAllocation(),),
            cluster(3, allocation=AllocationSettings(enable="primaries")),
            (EnableAllocation(),),
        ),
        (
            (DisableReplicaAllocation(),),
            cluster(3, allocation=AllocationSettings(enable="primaries")),
            (),
        ),
        ((ClearVotingExclusions(),), cluster(3), ()),
        ((ClearVotingExclusions(),), cluster(3, voting=("x",)), (ClearVotingExclusions(),)),
    ],
)
def test_steps_that_change_nothing_are_dropped(
    steps: tuple[Step, ...], view: ClusterView, kept: tuple[Step, ...]
) -> None:
    assert drop_noops(steps, view) == kept


def test_a_statefulset_whose_pods_cannot_start_is_replaced_at_once() -> None:
    stuck = tuple(dataclasses.replace(pod(i), ready=False, restart_count=3) for i in range(3))
    plan = plan_changes(snapshot(update_revision="r2", pods=stuck, view=None))
    assert plan.forced == (SSET,)
    assert [step.pod for step in plan.steps if isinstance(step, DeletePod)] == [
        f"{SSET}-{i}" for i in range(3)
    ]


def test_nodes_not_back_hold_the_pass_only_while_a_restart_is_to_complete() -> None:
    # Nothing restarted: allocation on, no record. A Pod not (yet) in _nodes holds nothing.
    assert not plan_changes(snapshot(view=cluster(2))).in_progress
    # After a restart the older way (replicas off), allocation waits for every node to be back.
    off = AllocationSettings(enable="primaries")
    waiting = plan_changes(snapshot(view=cluster(2, allocation=off)))
    assert waiting.steps == ()
    assert waiting.requeue_reasons == ("Nodes upgrade: some nodes are not back in the cluster yet",)
    back = plan_changes(snapshot(view=cluster(3, allocation=off)))
    assert back.steps == (EnableAllocation(),)
