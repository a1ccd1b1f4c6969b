"""Rolling restarts: which Pods run an outdated template, which of them go now, and what is done
to the cluster before they go and after they are back.

StatefulSets use ``updateStrategy: OnDelete``: a new template only reaches a Pod the operator
deletes. A Pod is outdated when its ``controller-revision-hash`` differs from its StatefulSet's
``status.updateRevision`` (or its version label from the template's). The outdated Pods are walked
in ECK's order (``sortCandidates``) through the ten predicates (:mod:`.predicates`) within the
change budget. Before a Pod goes, the cluster is prepared: a ``restart`` node shutdown where the
cluster has the API (7.15.2 and later), else replica allocation set to ``primaries`` and a flush.
Once every Pod is back, allocation is enabled again and completed ``restart`` records are deleted.
A version upgrade of a cluster with at most two masters restarts every outdated Pod at once.
Pods stuck ``Pending`` or boot-looping on an old template are replaced at once (a forced upgrade).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from stackflow.stack.elasticsearch.orchestration.budget import (
    ChangeBudget,
    DeletionAllowance,
    deletion_allowance,
)
from stackflow.stack.elasticsearch.orchestration.expectations import ExpectationCheck
from stackflow.stack.elasticsearch.orchestration.predicates import (
    PredicateContext,
    first_failing_predicate,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    SHUTDOWN_COMPLETE,
    SHUTDOWN_RESTART,
    ClusterView,
    ExpectedStatefulSet,
    PodState,
    SnapshotError,
    StatefulSetState,
    expected_master_names,
    split_pod_name,
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
    Step,
)
from stackflow.stack.elasticsearch.orchestration.versions import (
    flush_is_synced,
    full_restart_required,
    orchestration_version,
    supports_node_shutdown,
)
from stackflow.stack.version import parse_version

ROLLING_DELETE_MESSAGE = "Deleting pod for rolling upgrade"
FULL_RESTART_DELETE_MESSAGE = "Deleting pod for full cluster upgrade"
FULL_RESTART_PENDING_MESSAGE = "Not all pods are ready for a full cluster upgrade"
FORCED_DELETE_MESSAGE = "Deleting Pod for forced rolling upgrade"
UPGRADE_IN_PROGRESS_REASON = "Nodes upgrade in progress"
NOT_BACK_REASON = "Nodes upgrade: some nodes are not back in the cluster yet"
POD_PENDING = "Pending"


def pods_to_upgrade(
    statefulsets: Sequence[StatefulSetState], pods: Sequence[PodState]
) -> tuple[PodState, ...]:
    """The Pods running an outdated template, StatefulSet by StatefulSet, highest ordinal first.

    A Pod is outdated when its revision differs from its StatefulSet's ``updateRevision`` (a
    StatefulSet without one has nothing scheduled), or when its version label differs from the
    template's. Ordinals without a Pod are skipped.
    """
    by_name = {pod.name: pod for pod in pods}
    outdated: list[PodState] = []
    for statefulset in statefulsets:
        for ordinal in reversed(range(statefulset.replicas)):
            pod = by_name.get(f"{statefulset.name}-{ordinal}")
            if pod is None:
                continue
            stale_revision = bool(statefulset.update_revision) and (
                pod.revision != statefulset.update_revision
            )
            stale_version = bool(statefulset.version) and pod.version != statefulset.version
            if stale_revision or stale_version:
                outdated.append(pod)
    return tuple(outdated)


def _candidate_key(pod: PodState) -> tuple[bool, str, int]:
    try:
        statefulset, ordinal = split_pod_name(pod.name)
    except ValueError:
        statefulset, ordinal = pod.name, 0
    return (pod.is_master, statefulset, -ordinal)


def sort_candidates(pods: Sequence[PodState]) -> tuple[PodState, ...]:
    """ECK's ``sortCandidates``: non-masters first, then by StatefulSet name, then highest ordinal."""
    return tuple(sorted(pods, key=_candidate_key))


def statefulset_pods(
    statefulsets: Sequence[StatefulSetState], pods: Sequence[PodState]
) -> tuple[PodState, ...]:
    """The Pods that belong to one of ``statefulsets`` (by their ``statefulset-name`` label)."""
    names = {statefulset.name for statefulset in statefulsets}
    return tuple(pod for pod in pods if pod.statefulset in names)


def healthy_pod_names(pods: Sequence[PodState], cluster: ClusterView) -> frozenset[str]:
    """The Pods that are healthy for a rolling restart: ready, not terminating and in the cluster."""
    in_cluster = cluster.node_names
    return frozenset(
        pod.name for pod in pods if pod.ready and not pod.terminating and pod.name in in_cluster
    )


@dataclass(frozen=True)
class HeldBack:
    """A Pod to restart that waits: the first predicate that held it back and what it says."""

    pod: str
    predicate: str
    message: str


@dataclass(frozen=True)
class Selection:
    """The Pods picked for a restart in this pass, and those held back by a predicate."""

    selected: tuple[PodState, ...]
    held_back: tuple[HeldBack, ...]
    allowance: DeletionAllowance


def select_restarts(
    context: PredicateContext,
    candidates: Sequence[PodState],
    allowance: DeletionAllowance,
    *,
    disabled: frozenset[str] = frozenset(),
) -> Selection:
    """Walk the sorted ``candidates`` through the predicates within the budget (ECK's walk).

    Each Pod that passes is picked, leaves the healthy set and uses one unit of the allowance; the
    walk stops when the allowance reaches zero, so with the budget already spent one Pod (an
    unavailable one, as the predicates allow no other) can still go. ``SnapshotError`` from a
    predicate is passed on.
    """
    remaining = allowance.allowed
    selected: list[PodState] = []
    held_back: list[HeldBack] = []
    for candidate in candidates:
        failing = first_failing_predicate(
            context, candidate, selected, budget_reached=allowance.reached, disabled=disabled
        )
        if failing is not None:
            held_back.append(HeldBack(candidate.name, failing.name, failing.message))
            continue
        context = dataclasses.replace(
            context,
            healthy=context.healthy - {candidate.name},
            master_update_in_progress=context.master_update_in_progress
            or candidate.is_master
            or candidate.name in context.expected_masters,
        )
        selected.append(candidate)
        remaining -= 1
        if remaining <= 0:
            break
    return Selection(tuple(selected), tuple(held_back), allowance)


@dataclass(frozen=True)
class Preparation:
    """What to do to the cluster before restarting Pods, and the nodes asked to shut down now."""

    steps: tuple[Step, ...]
    requested: frozenset[str] = frozenset()


def prepare_restarts(
    pods: Sequence[PodState],
    *,
    cluster: ClusterView,
    node_shutdown: bool,
    target_version: str,
    terminating: Sequence[str] = (),
    reason: str = "",
    allocation_delay: str | None = None,
) -> Preparation:
    """The steps before ``pods`` restart (ECK's ``prepareClusterForNodeRestart``).

    With the node shutdown API: a ``restart`` shutdown for each ready Pod that has none of that
    type (a ready Pod missing from the cluster is a ``SnapshotError``). ECK's quirk is kept: with no
    ready Pod among them, the call cancels every ``restart`` shutdown of the nodes not terminating.
    Without the API: replica allocation off (unless it already is) and a flush (synced before 8.0).
    """
    if not node_shutdown:
        steps: list[Step] = []
        if cluster.allocation.replicas_enabled:
            steps.append(DisableReplicaAllocation())
        steps.append(Flush(synced=flush_is_synced(parse_version(target_version))))
        return Preparation(tuple(steps))
    ready = [pod.name for pod in pods if pod.ready]
    if not ready:
        return Preparation(_cancel_shutdowns(cluster, SHUTDOWN_RESTART, terminating))
    puts: list[Step] = []
    for name in ready:
        node_id = cluster.node_id(name)
        if node_id is None:
            raise SnapshotError(f"node {name} currently not member of the cluster")
        existing = cluster.shutdown_of(node_id)
        if existing is not None and existing.is_type(SHUTDOWN_RESTART):
            continue
        puts.append(PutNodeShutdown(name, node_id, SHUTDOWN_RESTART, reason, allocation_delay))
    requested = frozenset(step.node for step in puts if isinstance(step, PutNodeShutdown))
    return Preparation(tuple(puts), requested)


def _cancel_shutdowns(
    cluster: ClusterView, shutdown_type: str, terminating: Sequence[str]
) -> tuple[Step, ...]:
    terminating_ids = {cluster.node_id(name) for name in terminating} - {None}
    return tuple(
        DeleteNodeShutdown(record.node_id)
        for record in cluster.shutdowns or ()
        if record.is_type(shutdown_type) and record.node_id not in terminating_ids
    )


def ready_to_delete(pod: PodState, *, cluster: ClusterView, node_shutdown: bool) -> bool:
    """Whether ``pod`` may be deleted now: its shutdown record reads ``COMPLETE``.

    Always without the shutdown API, and for a Pod that is not ready (there is nothing to shut
    down). ``SnapshotError`` when a ready Pod is not in the cluster or has no shutdown record.
    """
    if not node_shutdown or not pod.ready:
        return True
    node_id = cluster.node_id(pod.name)
    if node_id is None:
        raise SnapshotError(f"node {pod.name} currently not member of the cluster")
    record = cluster.shutdown_of(node_id)
    if record is None:
        raise SnapshotError(f"no shutdown in progress for {pod.name}")
    return record.status == SHUTDOWN_COMPLETE


def _demotion(pod: PodState, expected_masters: frozenset[str]) -> tuple[Step, ...]:
    # A master that the spec turns into another kind of node leaves the voting configuration first.
    if pod.is_master and pod.name not in expected_masters:
        return (AddVotingExclusions((pod.name,)),)
    return ()


@dataclass(frozen=True)
class AfterRestarts:
    """What to do once restarted Pods are back, and why to look again."""

    steps: tuple[Step, ...] = ()
    requeue_reason: str | None = None


def complete_restarts(
    *,
    statefulsets: Sequence[StatefulSetState],
    pods: Sequence[PodState],
    cluster: ClusterView,
    node_shutdown: bool,
    no_transient_settings: bool = False,
    restarting: frozenset[str] = frozenset(),
) -> AfterRestarts:
    """ECK's ``maybeCompleteNodeUpgrades``, to run once the expectations are met.

    Completed ``restart`` shutdowns of nodes back in the cluster are deleted at once (never those
    of terminating Pods, nor those of ``restarting`` Pods: outdated Pods whose shutdown was
    requested in an earlier pass and which are deleted next — ECK reads a shutdown back within
    the pass that requested it, a pure decision only in the next one). When every Pod the StatefulSets should have is in the cluster, allocation
    is enabled again (unless the ``no_transient_settings`` hint says transient settings are gone)
    and every other completed ``restart`` shutdown of a node not terminating is deleted too.
    """
    terminating_ids = {cluster.node_id(pod.name) for pod in pods if pod.terminating} - {None}
    restarting_ids = {cluster.node_id(name) for name in restarting} - {None}
    in_cluster_ids = {node.id for node in cluster.nodes}
    completed = [
        record
        for record in cluster.shutdowns or ()
        if node_shutdown
        and record.is_type(SHUTDOWN_RESTART)
        and record.status == SHUTDOWN_COMPLETE
        and record.node_id not in terminating_ids
        and record.node_id not in restarting_ids
    ]
    steps: list[Step] = [
        DeleteNodeShutdown(record.node_id)
        for record in completed
        if record.node_id in in_cluster_ids
    ]
    if not completed and (no_transient_settings or cluster.allocation.replicas_enabled):
        # Nothing to complete: no need to wait for every node to be back (ECK waits anyway).
        return AfterRestarts(tuple(steps))
    expected_pods = [name for statefulset in statefulsets for name in statefulset.pod_names()]
    if not all(name in cluster.node_names for name in expected_pods):
        return AfterRestarts(tuple(steps), NOT_BACK_REASON)
    if not no_transient_settings and not cluster.allocation.replicas_enabled:
        steps.append(EnableAllocation())
    steps += [
        DeleteNodeShutdown(record.node_id)
        for record in completed
        if record.node_id not in in_cluster_ids
    ]
    return AfterRestarts(tuple(steps))


def remove_transient_settings(
    *, node_shutdown: bool, no_transient_settings: bool, reconciled: bool
) -> tuple[Step, ...]:
    """ECK's one-off clean-up once the cluster has the node shutdown API.

    The transient ``exclude._name`` and ``enable`` settings of the older way are removed once the
    node specs are fully reconciled; the caller then records the ``no_transient_settings``
    orchestration hint (``eck.k8s.elastic.co/orchestration-hints``) so it is done only once.
    """
    if node_shutdown and reconciled and not no_transient_settings:
        return (RemoveTransientAllocationSettings(),)
    return ()


def _after_steps(cluster: ClusterView, steps: Sequence[Step]) -> ClusterView:
    # The cluster as the rest of the pass sees it: without the shutdown records just deleted.
    deleted = {step.node_id for step in steps if isinstance(step, DeleteNodeShutdown)}
    if cluster.shutdowns is None or not deleted:
        return cluster
    remaining = tuple(record for record in cluster.shutdowns if record.node_id not in deleted)
    return dataclasses.replace(cluster, shutdowns=remaining)


@dataclass(frozen=True)
class RollingSnapshot:
    """Everything a rolling restart pass decides from.

    ``expectations`` is the result of :func:`.expectations.expectations_met`; ``shutdown_reason``
    the Elasticsearch resource's ``resourceVersion``; ``allocation_delay`` the
    ``restart-allocation-delay`` value, sent with ``restart`` shutdowns.
    """

    spec_version: str
    status_version: str
    budget: ChangeBudget
    statefulsets: tuple[StatefulSetState, ...]
    expected: tuple[ExpectedStatefulSet, ...]
    pods: tuple[PodState, ...]
    cluster: ClusterView
    disabled_predicates: frozenset[str] = frozenset()
    expectations: ExpectationCheck = field(default_factory=lambda: ExpectationCheck(met=True))
    shutdown_reason: str = ""
    allocation_delay: str | None = None
    no_transient_settings: bool = False


@dataclass(frozen=True)
class RollingDecision:
    """The outcome of a rolling restart pass.

    ``reported`` is false when the pass stopped before looking at the Pods (the status keeps its
    previous upgrade list). ``to_upgrade`` names every outdated Pod; ``held_back`` the ones a
    predicate held back; ``selected`` those picked; ``deleted`` those the ``steps`` delete.
    ``shutdowns_requested`` names picked Pods whose ``restart`` shutdown the steps request: their
    deletion depends on what Elasticsearch answers, so run the steps, read the shutdowns again and
    call :func:`continue_after_shutdowns` (ECK reads the record back right after its ``PUT``).
    ``waiting_for_shutdown`` are picked Pods whose shutdown is not complete yet. ``pending_message``
    explains, on a full restart, why nothing is deleted yet. ``error`` is set when the snapshot
    could not be acted on; the steps before it are still to be run.
    """

    reported: bool = True
    to_upgrade: tuple[str, ...] = ()
    held_back: tuple[HeldBack, ...] = ()
    selected: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    shutdowns_requested: tuple[str, ...] = ()
    waiting_for_shutdown: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    full_restart: bool = False
    delete_message: str = ROLLING_DELETE_MESSAGE
    pending_message: str | None = None
    requeue_reasons: tuple[str, ...] = ()
    error: str | None = None


def _with_deletions(
    decision: RollingDecision,
    pods: Sequence[PodState],
    *,
    cluster: ClusterView,
    node_shutdown: bool,
    expected_masters: frozenset[str],
) -> RollingDecision:
    steps: list[Step] = []
    ready: list[PodState] = []
    waiting: list[str] = []
    try:
        for pod in pods:
            steps += _demotion(pod, expected_masters)
            if ready_to_delete(pod, cluster=cluster, node_shutdown=node_shutdown):
                ready.append(pod)
                continue
            waiting.append(pod.name)
            if not decision.full_restart:
                # ECK stops at the first Pod not ready; the ones before it are deleted.
                waiting += [p.name for p in pods[len(ready) + 1 :]]
                break
    except SnapshotError as error:
        return dataclasses.replace(decision, steps=decision.steps + tuple(steps), error=str(error))
    if decision.full_restart and waiting:
        # All or nothing: a cluster without quorum to spare restarts in one go.
        return dataclasses.replace(
            decision,
            steps=decision.steps + tuple(steps),
            waiting_for_shutdown=tuple(waiting),
            pending_message=FULL_RESTART_PENDING_MESSAGE,
        )
    steps += [DeletePod(pod.name, decision.delete_message) for pod in ready]
    return dataclasses.replace(
        decision,
        steps=decision.steps + tuple(steps),
        deleted=tuple(pod.name for pod in ready),
        waiting_for_shutdown=tuple(waiting),
    )


def _expected_masters(snapshot: RollingSnapshot) -> frozenset[str]:
    return frozenset(expected_master_names(snapshot.expected))


def continue_after_shutdowns(
    decision: RollingDecision, snapshot: RollingSnapshot, cluster: ClusterView
) -> RollingDecision:
    """The second half of a pass whose steps requested ``restart`` shutdowns.

    ``cluster`` is read again after those steps ran; the returned decision's ``steps`` are only
    what is left to run: the voting exclusions of demoted masters and the deletions of the picked
    Pods whose shutdown is complete.
    """
    by_name = {pod.name: pod for pod in snapshot.pods}
    picked = [by_name[name] for name in decision.selected if name in by_name]
    return _with_deletions(
        dataclasses.replace(decision, steps=(), shutdowns_requested=()),
        picked,
        cluster=cluster,
        node_shutdown=True,
        expected_masters=_expected_masters(snapshot),
    )


def plan_rolling_restart(snapshot: RollingSnapshot) -> RollingDecision:
    """ECK's ``handleUpgrades`` over a snapshot: complete earlier restarts, then restart more.

    Nothing is done while the expectations are not met. Otherwise the steps are: the clean-up of
    restarts that are over (:func:`complete_restarts`), then either the full restart (a version
    upgrade with at most two masters: every outdated Pod) or the predicate walk within the budget,
    the preparation of the picked Pods, a voting exclusion for each master losing its role, and the
    deletions (see ``shutdowns_requested`` when the preparation asks for shutdowns).
    """
    if not snapshot.expectations.met:
        return RollingDecision(
            reported=False,
            requeue_reasons=(f"Nodes upgrade: {snapshot.expectations.reason}",),
        )
    current_pods = statefulset_pods(snapshot.statefulsets, snapshot.pods)
    outdated = pods_to_upgrade(snapshot.statefulsets, snapshot.pods)
    to_upgrade = tuple(pod.name for pod in outdated)
    masters = _expected_masters(snapshot)
    try:
        # A build without the shutdown module (the minimal distribution) answers no records:
        # it takes the older way, as a cluster before 7.15.2 does.
        node_shutdown = snapshot.cluster.shutdowns is not None and supports_node_shutdown(
            orchestration_version(snapshot.pods, snapshot.spec_version)
        )
        full = full_restart_required(
            spec_version=snapshot.spec_version,
            status_version=snapshot.status_version,
            pods=current_pods,
            expected_masters=tuple(masters),
        )
    except ValueError as error:
        return RollingDecision(to_upgrade=to_upgrade, error=str(error))
    after = complete_restarts(
        statefulsets=snapshot.statefulsets,
        pods=current_pods,
        cluster=snapshot.cluster,
        node_shutdown=node_shutdown,
        no_transient_settings=snapshot.no_transient_settings,
        restarting=frozenset(pod.name for pod in outdated if not pod.terminating),
    )
    cluster = _after_steps(snapshot.cluster, after.steps)
    requeue = (after.requeue_reason,) if after.requeue_reason else ()
    if not outdated:
        # ECK's full-restart path records nothing when no Pod is outdated: the status keeps its list.
        return RollingDecision(
            reported=not full, steps=after.steps, full_restart=full, requeue_reasons=requeue
        )
    decision = RollingDecision(
        to_upgrade=to_upgrade,
        steps=after.steps,
        full_restart=full,
        delete_message=FULL_RESTART_DELETE_MESSAGE if full else ROLLING_DELETE_MESSAGE,
        requeue_reasons=(*requeue, UPGRADE_IN_PROGRESS_REASON),
    )
    try:
        if full:
            picked = outdated
        else:
            healthy = healthy_pod_names(current_pods, cluster)
            allowance = deletion_allowance(
                snapshot.budget,
                pods=sum(statefulset.replicas for statefulset in snapshot.statefulsets),
                healthy=len(healthy),
            )
            context = PredicateContext(
                spec_version=snapshot.spec_version,
                expected_roles={s.name: s.roles for s in snapshot.expected},
                expected_masters=masters,
                healthy=healthy,
                to_upgrade=outdated,
                current_pods=current_pods,
                health=cluster.health,
                shards=cluster.shards,
            )
            selection = select_restarts(
                context, sort_candidates(outdated), allowance, disabled=snapshot.disabled_predicates
            )
            picked = selection.selected
            decision = dataclasses.replace(decision, held_back=selection.held_back)
        decision = dataclasses.replace(decision, selected=tuple(pod.name for pod in picked))
        if not picked:
            return decision
        preparation = prepare_restarts(
            picked,
            cluster=cluster,
            node_shutdown=node_shutdown,
            target_version=snapshot.spec_version,
            terminating=tuple(pod.name for pod in current_pods if pod.terminating),
            reason=snapshot.shutdown_reason,
            allocation_delay=snapshot.allocation_delay,
        )
    except SnapshotError as error:
        return dataclasses.replace(decision, error=str(error))
    decision = dataclasses.replace(decision, steps=decision.steps + preparation.steps)
    if preparation.requested:
        return dataclasses.replace(
            decision,
            shutdowns_requested=tuple(p.name for p in picked if p.name in preparation.requested),
        )
    return _with_deletions(
        decision, picked, cluster=cluster, node_shutdown=node_shutdown, expected_masters=masters
    )


@dataclass(frozen=True)
class ForcedUpgrade:
    """The Pods replaced at once because their StatefulSet cannot form a cluster as it is."""

    statefulsets: tuple[str, ...] = ()
    steps: tuple[DeletePod, ...] = ()

    @property
    def attempted(self) -> bool:
        """Whether a forced upgrade happens: the pass then stops and looks again later."""
        return bool(self.statefulsets)


def _all_pending(pods: Sequence[PodState]) -> bool:
    return all(pod.phase == POD_PENDING for pod in pods)


def _all_bootlooping(pods: Sequence[PodState]) -> bool:
    # A Pod with no status for its elasticsearch container has not shown it can start: it counts.
    return all(not pod.ready and pod.restart_count != 0 for pod in pods)


def forced_upgrade(
    statefulsets: Sequence[StatefulSetState], pods: Sequence[PodState]
) -> ForcedUpgrade:
    """ECK's forced rolling upgrade (``upgrade_forced.go``), StatefulSet by StatefulSet.

    When **all** the Pods of a StatefulSet are ``Pending``, or all are boot-looping (not ready and
    the ``elasticsearch`` container restarted at least once, or not started), its outdated Pods are
    deleted at once: no predicate, no budget. A spec that keeps a cluster from forming is thereby
    replaced by a fixed one. One Pod running fine keeps its StatefulSet out of it.
    """
    current = statefulset_pods(statefulsets, pods)
    outdated = {pod.name for pod in pods_to_upgrade(statefulsets, pods)}
    forced: list[str] = []
    steps: list[DeletePod] = []
    for name in sorted({pod.statefulset for pod in current}):
        members = [pod for pod in current if pod.statefulset == name]
        to_delete = [pod.name for pod in members if pod.name in outdated]
        if not to_delete or not (_all_pending(members) or _all_bootlooping(members)):
            continue
        forced.append(name)
        steps += [DeletePod(pod, FORCED_DELETE_MESSAGE) for pod in to_delete]
    return ForcedUpgrade(tuple(forced), tuple(steps))
