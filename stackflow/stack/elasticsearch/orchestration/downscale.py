"""Downscales: which nodes leave, how many may leave now, when their data has moved, and the
replica counts the StatefulSets get in this pass.

A StatefulSet with fewer replicas in the spec than it has loses its highest ordinals; a
StatefulSet whose node set was removed or renamed goes to 0 the same way and is deleted once empty.
ECK's invariants bound each pass: never the last running master, at most one master, and no more
nodes than ``maxUnavailable`` allows. Data leaves a node first: through a ``remove`` node shutdown
where the cluster has the API (7.15.2 and later), else through the allocation filter
``cluster.routing.allocation.exclude._name``. A master leaves the voting configuration before its
StatefulSet shrinks; the exclusions are cleared once every StatefulSet has exactly its Pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stackflow.stack.elasticsearch.orchestration.budget import ChangeBudget, removals_allowed
from stackflow.stack.elasticsearch.orchestration.expectations import pods_match_replicas
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    SHUTDOWN_COMPLETE,
    SHUTDOWN_IN_PROGRESS,
    SHUTDOWN_NOT_STARTED,
    SHUTDOWN_REMOVE,
    SHUTDOWN_STALLED,
    ClusterView,
    ExpectedStatefulSet,
    PodState,
    SnapshotError,
    StatefulSetState,
    ordinal_pod_name,
)
from stackflow.stack.elasticsearch.orchestration.steps import (
    NONE_EXCLUDED,
    AddVotingExclusions,
    ClearVotingExclusions,
    DeleteNodeShutdown,
    DeleteStatefulSet,
    ExcludeFromAllocation,
    PutNodeShutdown,
    ScaleStatefulSet,
    Step,
)
from stackflow.stack.elasticsearch.orchestration.versions import (
    FieldProblem,
    orchestration_version,
    supports_node_shutdown,
)

#: ECK's invariant reasons (``downscale_invariants.go``), word for word.
ONE_MASTER_AT_A_TIME = "A master node is already in the process of being removed"
LAST_RUNNING_MASTER = "Cannot remove the last running master node"
RESPECT_MAX_UNAVAILABLE = "Not removing node to respect maxUnavailable setting"
#: ECK's validation message when no node set leaves a master-eligible node.
MASTER_REQUIRED_MESSAGE = "Elasticsearch needs to have at least one master node"

DOWNSCALE_IN_PROGRESS_REASON = "Downscale in progress"
CANNOT_CLEAR_VOTING_EXCLUSIONS_REASON = "Cannot clear voting exclusions yet"
PHASE_MIGRATING_DATA = "MigratingData"
PHASE_STALLED = "Stalled"
DELAYED_MESSAGE = (
    "Requested topology change delayed by data migration. Ensure index settings allow node removal."
)
STALLED_MESSAGE = (
    "Requested topology change is stalled. "
    "User intervention maybe required if this condition persists. {explanation}"
)


def master_required_problem(expected: Sequence[ExpectedStatefulSet]) -> FieldProblem | None:
    """ECK's refusal of a spec that leaves no master-eligible node (every master count at 0,
    or no master node set at all). Voting-only masters do not count."""
    if any(s.master and "voting_only" not in s.roles and s.replicas > 0 for s in expected):
        return None
    return FieldProblem("spec.nodeSets", MASTER_REQUIRED_MESSAGE)


def leaving_nodes(statefulset: str, *, initial: int, target: int) -> tuple[str, ...]:
    """The Pods that leave when ``statefulset`` goes from ``initial`` to ``target`` replicas,
    highest ordinal first."""
    return tuple(ordinal_pod_name(statefulset, i) for i in range(initial - 1, target - 1, -1))


@dataclass(frozen=True)
class DownscaleState:
    """What the invariants track while one pass goes through the StatefulSets.

    ``running_masters`` counts ready master Pods; ``removals_allowed`` is the budget left
    (``None``: unbounded); ``master_removal_in_progress`` is set once a master may leave.
    """

    running_masters: int
    removals_allowed: int | None
    master_removal_in_progress: bool = False


def downscale_state(
    pods: Sequence[PodState], *, budget: ChangeBudget, desired_nodes: int
) -> DownscaleState:
    """The invariants' state at the start of a pass (``desired_nodes``: the spec's node count)."""
    ready = [pod for pod in pods if pod.ready]
    return DownscaleState(
        running_masters=sum(1 for pod in ready if pod.is_master),
        removals_allowed=removals_allowed(
            budget, ready_pods=len(ready), desired_nodes=desired_nodes
        ),
    )


def check_invariants(state: DownscaleState, *, master: bool, requested: int) -> tuple[int, str]:
    """How many of ``requested`` removals a StatefulSet may make now, and ECK's reason when none.

    A master StatefulSet removes at most one node, not while another master leaves and never the
    last running master; every StatefulSet stays within the ``maxUnavailable`` budget.
    """
    if master:
        if state.master_removal_in_progress:
            return 0, ONE_MASTER_AT_A_TIME
        if state.running_masters == 1:
            return 0, LAST_RUNNING_MASTER
        requested = 1
    allowed = (
        requested if state.removals_allowed is None else min(requested, state.removals_allowed)
    )
    if allowed == 0:
        return 0, RESPECT_MAX_UNAVAILABLE
    return allowed, ""


def record_removal(state: DownscaleState, *, master: bool, removals: int) -> DownscaleState:
    """The state after a StatefulSet was granted ``removals``."""
    if removals == 0:
        return state
    return DownscaleState(
        running_masters=state.running_masters - 1 if master else state.running_masters,
        removals_allowed=None
        if state.removals_allowed is None
        else state.removals_allowed - removals,
        master_removal_in_progress=state.master_removal_in_progress or master,
    )


@dataclass(frozen=True)
class StatefulSetDownscale:
    """One StatefulSet shrinking: from ``initial`` to ``target`` now, ``final`` in the end."""

    statefulset: str
    master: bool
    initial: int
    target: int
    final: int

    @property
    def leaving(self) -> tuple[str, ...]:
        """The Pods leaving in this step, highest ordinal first."""
        return leaving_nodes(self.statefulset, initial=self.initial, target=self.target)


@dataclass(frozen=True)
class DownscalePlan:
    """The StatefulSets to shrink, those to delete (empty and without a node set), and the
    StatefulSets the invariants held back with ECK's reason."""

    downscales: tuple[StatefulSetDownscale, ...] = ()
    deletions: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()

    @property
    def leaving(self) -> tuple[str, ...]:
        """Every Pod leaving, StatefulSet by StatefulSet."""
        return tuple(name for downscale in self.downscales for name in downscale.leaving)


def calculate_downscales(
    actual: Sequence[StatefulSetState],
    expected: Sequence[ExpectedStatefulSet],
    state: DownscaleState | None,
) -> DownscalePlan:
    """ECK's ``calculateDownscales``, StatefulSet by StatefulSet in the order given.

    A StatefulSet not in the spec wants 0 replicas; once it has 0 it is deleted. With a ``state``
    the invariants bound the removals (and the state carries over from one StatefulSet to the
    next); without one every wanted removal is listed (what the status shows as eventually leaving).
    """
    wanted = {s.name: s.replicas for s in expected}
    downscales: list[StatefulSetDownscale] = []
    deletions: list[str] = []
    refused: list[tuple[str, str]] = []
    for statefulset in actual:
        expected_replicas = wanted.get(statefulset.name, 0)
        if statefulset.name not in wanted and statefulset.replicas == 0:
            deletions.append(statefulset.name)
            continue
        if expected_replicas >= statefulset.replicas:
            continue
        requested = statefulset.replicas - expected_replicas
        allowed = requested
        if state is not None:
            allowed, reason = check_invariants(
                state, master=statefulset.master, requested=requested
            )
            if allowed == 0:
                refused.append((statefulset.name, reason))
                continue
            state = record_removal(state, master=statefulset.master, removals=allowed)
        downscales.append(
            StatefulSetDownscale(
                statefulset=statefulset.name,
                master=statefulset.master,
                initial=statefulset.replicas,
                target=statefulset.replicas - allowed,
                final=expected_replicas,
            )
        )
    return DownscalePlan(tuple(downscales), tuple(deletions), tuple(refused))


def migration_steps(
    leaving: Sequence[str],
    *,
    cluster: ClusterView,
    node_shutdown: bool,
    terminating: Sequence[str] = (),
    reason: str = "",
) -> tuple[Step, ...]:
    """The steps that move data off the ``leaving`` nodes, or cancel that when none leaves.

    With the node shutdown API: a ``remove`` shutdown for each leaving node that has none of that
    type (a node missing from the cluster is a ``SnapshotError``); with nobody leaving, every
    ``remove`` shutdown is deleted except those of terminating Pods. Without the API: the
    allocation filter ``exclude._name`` lists the leaving nodes (``none_excluded`` when none).
    """
    if not node_shutdown:
        return (ExcludeFromAllocation(",".join(leaving) if leaving else NONE_EXCLUDED),)
    if not leaving:
        terminating_ids = {cluster.node_id(name) for name in terminating} - {None}
        return tuple(
            DeleteNodeShutdown(record.node_id)
            for record in cluster.shutdowns or ()
            if record.is_type(SHUTDOWN_REMOVE) and record.node_id not in terminating_ids
        )
    steps: list[Step] = []
    for name in leaving:
        node_id = cluster.node_id(name)
        if node_id is None:
            raise SnapshotError(f"node {name} currently not member of the cluster")
        existing = cluster.shutdown_of(node_id)
        if existing is not None and existing.is_type(SHUTDOWN_REMOVE):
            continue
        steps.append(PutNodeShutdown(name, node_id, SHUTDOWN_REMOVE, reason))
    return tuple(steps)


@dataclass(frozen=True)
class LeavingNode:
    """A node the spec removes: its shutdown status (ECK's values) and Elasticsearch's explanation."""

    name: str
    shutdown_status: str
    explanation: str = ""


def migration_status(
    node: str, *, cluster: ClusterView, node_shutdown: bool, requested: frozenset[str]
) -> LeavingNode:
    """Whether the data of leaving ``node`` has moved ("migration complete").

    With the node shutdown API, the node's shutdown record says so (``COMPLETE``, ``IN_PROGRESS``,
    ``STALLED`` or ``NOT_STARTED``); one requested in this pass has no answer yet and is
    ``IN_PROGRESS``. Without the API, the migration is complete once no shard copy is on the node,
    no shard is unassigned (its node cannot be told) and the health shows no shard activity.
    """
    if not node_shutdown:
        busy = (
            cluster.health.has_shard_activity()
            or any(shard.node == node for shard in cluster.shards)
            or any(not shard.node for shard in cluster.shards)
        )
        return LeavingNode(node, SHUTDOWN_IN_PROGRESS if busy else SHUTDOWN_COMPLETE)
    if node in requested:
        return LeavingNode(node, SHUTDOWN_IN_PROGRESS)
    node_id = cluster.node_id(node)
    if node_id is None:
        raise SnapshotError(
            f"while checking shutdown status: node {node} currently not member of the cluster"
        )
    record = cluster.shutdown_of(node_id)
    if record is None:
        raise SnapshotError(f"while checking shutdown status: no shutdown in progress for {node}")
    return LeavingNode(node, record.status, record.explanation)


@dataclass(frozen=True)
class DownscaleEvent:
    """A Kubernetes event ECK records on the Elasticsearch resource during a downscale."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class DownscaleSnapshot:
    """Everything a downscale pass decides from.

    ``statefulsets`` are the existing ones (the pass goes through them by name), ``pods`` every Pod
    of the cluster, ``shutdown_reason`` the Elasticsearch resource's ``resourceVersion``.
    """

    spec_version: str
    budget: ChangeBudget
    statefulsets: tuple[StatefulSetState, ...]
    expected: tuple[ExpectedStatefulSet, ...]
    pods: tuple[PodState, ...]
    cluster: ClusterView
    shutdown_reason: str = ""


@dataclass(frozen=True)
class DownscaleDecision:
    """The outcome of a downscale pass.

    ``desired_leaving`` are all the nodes the spec removes, ``leaving`` those whose removal starts
    now (the rest are delayed by the invariants, ``refused`` says why); ``nodes`` the status of
    each desired leaving node; ``replicas`` the replica count of every remaining StatefulSet after
    this pass. ``error`` is set when the snapshot could not be acted on (the steps before it are
    still to be run).
    """

    desired_leaving: tuple[str, ...] = ()
    leaving: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    nodes: tuple[LeavingNode, ...] = ()
    replicas: Mapping[str, int] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    phase: str | None = None
    events: tuple[DownscaleEvent, ...] = ()
    requeue_reasons: tuple[str, ...] = ()
    error: str | None = None

    @property
    def stalled(self) -> bool:
        """Whether a leaving node's shutdown is stalled."""
        return any(node.shutdown_status == SHUTDOWN_STALLED for node in self.nodes)


def _go_list(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"


def plan_downscale(snapshot: DownscaleSnapshot) -> DownscaleDecision:
    """ECK's ``HandleDownscale`` over a snapshot (to run once the expectations are met).

    Steps, in order: delete the empty StatefulSets that have no node set; move data off the
    nodes leaving now (or cancel earlier moves); then, per StatefulSet, walk its leaving nodes
    from the highest ordinal and stop at the first whose data has not moved: the ones before it
    leave (a voting exclusion first for masters) and the StatefulSet is scaled to what remains.
    """
    actual = tuple(sorted(snapshot.statefulsets, key=lambda s: s.name))
    desired = calculate_downscales(actual, snapshot.expected, None).leaving
    statuses: dict[str, LeavingNode] = {
        name: LeavingNode(name, SHUTDOWN_NOT_STARTED) for name in desired
    }
    state = downscale_state(
        snapshot.pods,
        budget=snapshot.budget,
        desired_nodes=sum(s.replicas for s in snapshot.expected),
    )
    plan = calculate_downscales(actual, snapshot.expected, state)
    replicas = {s.name: s.replicas for s in actual if s.name not in plan.deletions}
    steps: list[Step] = [DeleteStatefulSet(name) for name in plan.deletions]
    leaving = plan.leaving
    requeue: list[str] = []
    events: list[DownscaleEvent] = []
    phase: str | None = None

    def decision(error: str | None = None) -> DownscaleDecision:
        return DownscaleDecision(
            desired_leaving=desired,
            leaving=leaving,
            refused=plan.refused,
            nodes=tuple(statuses[name] for name in sorted(statuses)),
            replicas=dict(replicas),
            steps=tuple(steps),
            phase=phase,
            events=tuple(events),
            # ECK records the same reason once per StatefulSet; it is one reason.
            requeue_reasons=tuple(dict.fromkeys(requeue)),
            error=error,
        )

    try:
        # A build without the shutdown module (the minimal distribution) answers no records:
        # it takes the older way, as a cluster before 7.15.2 does.
        node_shutdown = snapshot.cluster.shutdowns is not None and supports_node_shutdown(
            orchestration_version(snapshot.pods, snapshot.spec_version)
        )
        migration = migration_steps(
            leaving,
            cluster=snapshot.cluster,
            node_shutdown=node_shutdown,
            terminating=[pod.name for pod in snapshot.pods if pod.terminating],
            reason=snapshot.shutdown_reason,
        )
    except (SnapshotError, ValueError) as error:
        return decision(str(error))
    steps += migration
    requested = frozenset(step.node for step in migration if isinstance(step, PutNodeShutdown))
    for name in leaving:
        statuses[name] = LeavingNode(name, SHUTDOWN_IN_PROGRESS)
    for downscale in plan.downscales:
        target = downscale.initial
        for node in downscale.leaving:
            try:
                status = migration_status(
                    node, cluster=snapshot.cluster, node_shutdown=node_shutdown, requested=requested
                )
            except SnapshotError as error:
                return decision(str(error))
            statuses[node] = status
            if status.shutdown_status == SHUTDOWN_COMPLETE:
                target -= 1
                continue
            if status.shutdown_status == SHUTDOWN_STALLED:
                phase = PHASE_STALLED
                events.append(
                    DownscaleEvent(
                        "Warning", "Stalled", STALLED_MESSAGE.format(explanation=status.explanation)
                    )
                )
            elif status.shutdown_status == SHUTDOWN_IN_PROGRESS:
                phase = PHASE_MIGRATING_DATA
                events.append(DownscaleEvent("Normal", "Delayed", DELAYED_MESSAGE))
            else:
                return decision(
                    f"Unexpected state. Node shutdown could not be started: {status.explanation}"
                )
            break
        if target == downscale.initial:
            requeue.append(DOWNSCALE_IN_PROGRESS_REASON)
            continue
        if downscale.master:
            removed = leaving_nodes(downscale.statefulset, initial=downscale.initial, target=target)
            steps.append(AddVotingExclusions(removed))
        steps.append(ScaleStatefulSet(downscale.statefulset, target))
        replicas[downscale.statefulset] = target
        if target != downscale.final:
            requeue.append(DOWNSCALE_IN_PROGRESS_REASON)
    delayed = sorted(set(desired) - set(leaving))
    if delayed:
        requeue.append(f"Downscale in progress, delayed nodes: {_go_list(delayed)}")
    return decision()


@dataclass(frozen=True)
class VotingExclusionsClearing:
    """Whether the voting exclusions are cleared in this pass, and why to look again if not."""

    steps: tuple[Step, ...] = ()
    requeue_reason: str | None = None


def clear_voting_exclusions(
    statefulsets: Sequence[StatefulSetState],
    pods: Sequence[PodState],
    voting_exclusions: Sequence[str] | None = None,
) -> VotingExclusionsClearing:
    """When to clear the voting exclusions: only while every StatefulSet has exactly its Pods.

    Excluded masters are then gone, or are back to stay. A Pod still to be created or removed
    means an excluded master may still be on its way out: look again later. ECK clears every pass;
    when the snapshot shows there are no exclusions (``voting_exclusions`` empty, not ``None``)
    the call is skipped.
    """
    if not pods_match_replicas(statefulsets, pods).met:
        return VotingExclusionsClearing(requeue_reason=CANNOT_CLEAR_VOTING_EXCLUSIONS_REASON)
    if voting_exclusions is not None and not voting_exclusions:
        return VotingExclusionsClearing()
    return VotingExclusionsClearing(steps=(ClearVotingExclusions(),))
