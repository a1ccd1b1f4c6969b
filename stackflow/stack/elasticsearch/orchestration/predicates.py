"""ECK's ten rolling-restart predicates, in ECK's order and under ECK's names.

A Pod whose template is outdated is restarted only when every predicate allows it; the first one
that does not is the reason it is held back, reported by name (for ``status.inProgressOperations``)
and with a readable message (for conditions). The annotation
``eck.k8s.elastic.co/disable-upgrade-predicates`` (a comma list of names, or ``*``) turns named
predicates off: their refusal is ignored and the next predicate is asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from stackflow.stack.elasticsearch.orchestration.snapshot import (
    HEALTH_GREEN,
    HEALTH_RED,
    HEALTH_YELLOW,
    NON_MASTER_ROLES,
    SHARD_STARTED,
    ClusterHealth,
    PodState,
    Shard,
    SnapshotError,
    can_contain_data,
    has_role,
    split_pod_name,
)
from stackflow.stack.elasticsearch.orchestration.versions import DATA_TIERS_VERSION
from stackflow.stack.version import parse_version

DISABLE_PREDICATES_ANNOTATION = "eck.k8s.elastic.co/disable-upgrade-predicates"
#: Disables every predicate.
ALL_PREDICATES = "*"


@dataclass(frozen=True)
class PredicateContext:
    """What the predicates look at while a rolling restart picks its Pods.

    ``expected_roles`` maps each StatefulSet of the spec to its nodes' roles; ``expected_masters``
    are the Pod names of the master-eligible nodes the spec wants; ``healthy`` the Pods that are
    ready, not terminating and in the cluster (Pods picked earlier in the walk are removed from it);
    ``current_pods`` every Pod of the existing StatefulSets; ``master_update_in_progress`` is set
    once a master (or future master) has been picked.
    """

    spec_version: str
    expected_roles: Mapping[str, frozenset[str]]
    expected_masters: frozenset[str]
    healthy: frozenset[str]
    to_upgrade: tuple[PodState, ...]
    current_pods: tuple[PodState, ...]
    health: ClusterHealth
    shards: tuple[Shard, ...] = ()
    master_update_in_progress: bool = False


Allows = Callable[[PredicateContext, PodState, Sequence[PodState], bool], bool]


@dataclass(frozen=True)
class Predicate:
    """One predicate: ECK's name, what it says when it holds a Pod back, and the rule itself.

    ``allows(context, candidate, selected, budget_reached)`` is true when ``candidate`` may be
    restarted, given the Pods ``selected`` earlier in this pass.
    """

    name: str
    message: str
    allows: Allows


def depends_on(node: frozenset[str], other: frozenset[str]) -> bool:
    """Whether a node with roles ``node`` must be upgraded after one with roles ``other``.

    Hot after warm, cold and frozen; warm after cold and frozen; cold after frozen; content and
    frozen after nothing. A node that is not master-eligible never waits for a master: the last
    master must not end up waiting for a data node that waits for it.
    """
    if not has_role(node, "master") and has_role(other, "master"):
        return False
    if has_role(node, "data_hot"):
        return any(has_role(other, tier) for tier in ("data_warm", "data_cold", "data_frozen"))
    if has_role(node, "data_warm"):
        return any(has_role(other, tier) for tier in ("data_cold", "data_frozen"))
    if has_role(node, "data_cold"):
        return has_role(other, "data_frozen")
    return False


def has_dependency_in_others(node: frozenset[str], others: Iterable[frozenset[str]]) -> bool:
    """Whether one of ``others`` is a strict dependency of ``node`` (a mutual one does not count)."""
    if not can_contain_data(node):
        return False
    return any(
        can_contain_data(other) and depends_on(node, other) and not depends_on(other, node)
        for other in others
    )


def _expected_roles_of(context: PredicateContext, pod: PodState) -> frozenset[str]:
    statefulset, _ = split_pod_name(pod.name)
    roles = context.expected_roles.get(statefulset)
    if roles is None:
        raise SnapshotError(f"no expected StatefulSet {statefulset} for Pod {pod.name}")
    return roles


def _data_tier_first(
    context: PredicateContext, candidate: PodState, selected: Sequence[PodState], _: bool
) -> bool:
    if candidate.version == context.spec_version:
        # Only a version change orders the tiers.
        return True
    try:
        running = parse_version(candidate.version)
    except ValueError as error:
        raise SnapshotError(f"Pod {candidate.name}: {error}") from error
    if not running.at_least(*DATA_TIERS_VERSION):
        return True
    roles = _expected_roles_of(context, candidate)
    # Pods picked earlier count too: a whole tier goes before the next one starts.
    others = [_expected_roles_of(context, pod) for pod in (*context.to_upgrade, *selected)]
    return not has_dependency_in_others(roles, others)


def _budget_not_reached(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], budget_reached: bool
) -> bool:
    # With the budget spent, only Pods already unavailable are restarted: a new spec can still fix them.
    return not (budget_reached and candidate.name in context.healthy)


def _not_terminating(
    _: PredicateContext, candidate: PodState, __: Sequence[PodState], ___: bool
) -> bool:
    return not candidate.terminating


def _green_or_yellow(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    if context.health.status in (HEALTH_GREEN, HEALTH_YELLOW):
        return True
    # A red or unknown cluster is never degraded further; a broken Pod may still be restarted.
    return candidate.name not in context.healthy


def _yellow_only_upgrading(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    if context.health.status != HEALTH_YELLOW or candidate.name not in context.healthy:
        return True
    if len(context.current_pods) == 1:
        # A single node cannot host its replicas: yellow is its normal state.
        return True
    if candidate.version == context.spec_version:
        return False
    # During a version upgrade, replicas of primaries on upgraded nodes cannot go to older nodes,
    # so yellow is expected; go on only while no shard moves.
    return not context.health.has_shard_activity() and context.health.status != HEALTH_RED


def _require_started_replica(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    if context.health.status == HEALTH_GREEN:
        return True
    if (
        len(context.current_pods) == 1
        and context.health.status == HEALTH_YELLOW
        and candidate.name in context.healthy
    ):
        return True
    copies: dict[tuple[str, str], int] = {}
    started: dict[tuple[str, str], int] = {}
    for shard in context.shards:
        if shard.node == candidate.name:
            continue
        copies[shard.key] = copies.get(shard.key, 0) + 1
        if shard.state == SHARD_STARTED:
            started[shard.key] = started.get(shard.key, 0) + 1
    for shard in context.shards:
        if shard.node != candidate.name or not shard.primary:
            continue
        # An index without replicas has no other copy: its unavailability is accepted.
        if copies.get(shard.key, 0) > 0 and started.get(shard.key, 0) == 0:
            return False
    return True


def _one_master_at_a_time(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    will_be_master = candidate.name in context.expected_masters
    if not candidate.is_master:
        # A node about to become master counts as a master change too.
        return not context.master_update_in_progress if will_be_master else True
    if context.master_update_in_progress:
        return False
    if candidate.name not in context.healthy:
        # An unavailable master gets its chance to restart, even when it leaves the masters.
        return True
    if not will_be_master:
        # A master losing its role leaves only while every other master is available.
        return all(pod.name in context.healthy for pod in context.current_pods if pod.is_master)
    healthy_masters = sum(
        1 for pod in context.current_pods if pod.is_master and pod.name in context.healthy
    )
    return healthy_masters == len(context.expected_masters)


def _last_master_last(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    if not candidate.is_master:
        return True
    others = [pod for pod in context.to_upgrade if pod.name != candidate.name]
    if any(pod.is_master for pod in others):
        return True
    return not any(not pod.is_master for pod in others)


def _no_shared_shards(
    context: PredicateContext, candidate: PodState, selected: Sequence[PodState], _: bool
) -> bool:
    on_candidate = {shard.key for shard in context.shards if shard.node == candidate.name}
    if not selected or not on_candidate:
        return True
    picked = {pod.name for pod in selected}
    return not any(shard.key in on_candidate for shard in context.shards if shard.node in picked)


def _keep_every_tier(
    context: PredicateContext, candidate: PodState, _: Sequence[PodState], __: bool
) -> bool:
    if candidate.name not in context.healthy:
        # An unavailable Pod adds nothing to its tier's availability.
        return True
    for role in NON_MASTER_ROLES:
        if not candidate.has_role_label(role):
            continue
        # Current capacity counts, not the capacity the spec will have.
        current = sum(1 for pod in context.current_pods if pod.has_role_label(role))
        if current == 1:
            continue
        others_healthy = sum(
            1
            for pod in context.current_pods
            if pod.name != candidate.name
            and pod.name in context.healthy
            and pod.has_role_label(role)
        )
        if others_healthy <= 0:
            return False
    return True


PREDICATES: tuple[Predicate, ...] = (
    Predicate(
        "data_tier_with_higher_priority_must_be_upgraded_first",
        "waits for the data tiers it depends on to be upgraded first (frozen, cold, warm, then hot)",
        _data_tier_first,
    ),
    Predicate(
        "do_not_restart_healthy_node_if_MaxUnavailable_reached",
        "maxUnavailable is reached: only unavailable nodes are restarted now",
        _budget_not_reached,
    ),
    Predicate(
        "skip_already_terminating_pods",
        "the Pod is already terminating",
        _not_terminating,
    ),
    Predicate(
        "only_restart_healthy_node_if_green_or_yellow",
        "the cluster is neither green nor yellow: only unavailable nodes are restarted now",
        _green_or_yellow,
    ),
    Predicate(
        "if_yellow_only_restart_upgrading_nodes_with_unassigned_replicas",
        "the cluster is yellow: only nodes changing version restart, and only while no shard moves",
        _yellow_only_upgrading,
    ),
    Predicate(
        "require_started_replica",
        "a primary shard on this node has no started copy on another node",
        _require_started_replica,
    ),
    Predicate(
        "one_master_at_a_time",
        "another master-eligible node is restarting or unavailable: masters change one at a time",
        _one_master_at_a_time,
    ),
    Predicate(
        "do_not_delete_last_master_if_all_master_ineligible_nodes_are_not_upgraded",
        "the last master-eligible node waits until every other node is upgraded",
        _last_master_last,
    ),
    Predicate(
        "do_not_delete_pods_with_same_shards",
        "a node restarting in this pass holds a copy of the same shard",
        _no_shared_shards,
    ),
    Predicate(
        "do_not_delete_all_members_of_a_tier",
        "it is the last available node of one of its roles",
        _keep_every_tier,
    ),
)

PREDICATE_NAMES: tuple[str, ...] = tuple(predicate.name for predicate in PREDICATES)


def disabled_predicates(annotations: Mapping[str, str]) -> frozenset[str]:
    """The predicate names the ``disable-upgrade-predicates`` annotation turns off (``*``: all)."""
    value = annotations.get(DISABLE_PREDICATES_ANNOTATION)
    if value is None:
        return frozenset()
    return frozenset(part.strip() for part in value.split(","))


def first_failing_predicate(
    context: PredicateContext,
    candidate: PodState,
    selected: Sequence[PodState],
    *,
    budget_reached: bool,
    disabled: frozenset[str] = frozenset(),
) -> Predicate | None:
    """The first predicate, in ECK's order, that holds ``candidate`` back (``None``: it may go).

    ``SnapshotError`` when the snapshot lacks what a predicate needs (a version label that does not
    parse, a Pod whose StatefulSet is not in the spec during a version change).
    """
    for predicate in PREDICATES:
        if predicate.allows(context, candidate, selected, budget_reached):
            continue
        if predicate.name in disabled or ALL_PREDICATES in disabled:
            continue
        return predicate
    return None
