"""One pass over a cluster's node specs, in ECK's order (``reconcileNodeSpecs``), as two decisions.

:func:`statefulset_targets` says what to write to each StatefulSet (replicas within ``maxSurge``,
whether its new template goes out now); the caller writes them. When nothing was written,
:func:`plan_changes` decides the steps that change the running cluster: the forced upgrade of
StatefulSets that cannot start, the downscale (data moved first), the rolling restart, and the
clean-up of voting exclusions. A pass that wrote a StatefulSet stops there and looks again: the
StatefulSet controller must observe the write before the revisions can be trusted.

Steps that would not change anything (an allocation setting already at its value) are dropped, so
a cluster at rest costs no call and no step in the workflow's history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stackflow.stack.elasticsearch.orchestration.budget import ChangeBudget
from stackflow.stack.elasticsearch.orchestration.downscale import (
    DownscaleDecision,
    DownscaleSnapshot,
    calculate_downscales,
    clear_voting_exclusions,
    plan_downscale,
)
from stackflow.stack.elasticsearch.orchestration.expectations import ExpectationCheck
from stackflow.stack.elasticsearch.orchestration.rolling import (
    RollingDecision,
    RollingSnapshot,
    forced_upgrade,
    plan_rolling_restart,
    pods_to_upgrade,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ClusterView,
    ExpectedStatefulSet,
    PodState,
    StatefulSetState,
)
from stackflow.stack.elasticsearch.orchestration.steps import (
    NONE_EXCLUDED,
    ClearVotingExclusions,
    DeleteStatefulSet,
    DisableReplicaAllocation,
    EnableAllocation,
    ExcludeFromAllocation,
    ScaleStatefulSet,
    Step,
)
from stackflow.stack.elasticsearch.orchestration.upscale import UpscalePlan, plan_upscale
from stackflow.stack.elasticsearch.orchestration.versions import template_rollout

__all__ = [
    "ELASTICSEARCH_NOT_REACHABLE_REASON",
    "PAUSED_REASON",
    "ChangesPlan",
    "NodeSpecsSnapshot",
    "StatefulSetTargets",
    "drop_noops",
    "plan_changes",
    "statefulset_targets",
]

#: Why a pass that must ask Elasticsearch waits: it does not answer.
ELASTICSEARCH_NOT_REACHABLE_REASON = "Elasticsearch is not reachable"
#: The ``eck.k8s.elastic.co/pause-orchestration`` annotation's effect, as a requeue reason.
PAUSED_REASON = "Orchestration is paused"


@dataclass(frozen=True)
class NodeSpecsSnapshot:
    """Everything a pass over the node specs decides from.

    ``cluster`` is None when Elasticsearch did not answer. ``expectations`` is the freshness check
    of the listing (:func:`.expectations.expectations_met`).
    """

    spec_version: str
    status_version: str
    budget: ChangeBudget
    expected: tuple[ExpectedStatefulSet, ...]
    statefulsets: tuple[StatefulSetState, ...]
    pods: tuple[PodState, ...]
    cluster: ClusterView | None
    expectations: ExpectationCheck = dataclasses.field(
        default_factory=lambda: ExpectationCheck(met=True)
    )
    disabled_predicates: frozenset[str] = frozenset()
    shutdown_reason: str = ""


@dataclass(frozen=True)
class StatefulSetTargets:
    """What to write to the StatefulSets in this pass.

    ``replicas`` for each expected StatefulSet; ``new_template`` names those whose new spec goes
    out now (the others keep their current template and only take ``replicas``); with ``write``
    false nothing is written at all (the listing is not fresh enough to act on).
    """

    write: bool
    replicas: Mapping[str, int]
    new_template: frozenset[str]
    upscale: UpscalePlan | None = None
    requeue_reasons: tuple[str, ...] = ()


def statefulset_targets(snapshot: NodeSpecsSnapshot) -> StatefulSetTargets:
    """ECK's upscale and spec-change step: replicas within ``maxSurge``, masters last on upgrade."""
    if not snapshot.expectations.met:
        return StatefulSetTargets(
            write=False,
            replicas={},
            new_template=frozenset(),
            requeue_reasons=(snapshot.expectations.reason,),
        )
    upscale = plan_upscale(snapshot.statefulsets, snapshot.expected, snapshot.budget)
    rollout = template_rollout(
        spec_version=snapshot.spec_version,
        status_version=snapshot.status_version,
        expected=snapshot.expected,
        actual=snapshot.statefulsets,
        pods=snapshot.pods,
    )
    reasons = tuple(
        reason for reason in (upscale.requeue_reason, rollout.requeue_reason) if reason is not None
    )
    return StatefulSetTargets(
        write=True,
        replicas=dict(upscale.replicas),
        new_template=frozenset(rollout.update),
        upscale=upscale,
        requeue_reasons=reasons,
    )


@dataclass(frozen=True)
class ChangesPlan:
    """The steps of this pass, in order, and what the status reports of them."""

    steps: tuple[Step, ...] = ()
    upgrade: RollingDecision | None = None
    downscale: DownscaleDecision | None = None
    forced: tuple[str, ...] = ()
    requeue_reasons: tuple[str, ...] = ()
    error: str | None = None

    @property
    def in_progress(self) -> bool:
        """Whether anything is still to do (a step to run or a reason to look again)."""
        return bool(self.steps or self.requeue_reasons or self.error)


def _changes_pending(snapshot: NodeSpecsSnapshot) -> bool:
    """Whether a node is to leave or to restart (what needs Elasticsearch's answers)."""
    actual = tuple(sorted(snapshot.statefulsets, key=lambda s: s.name))
    leaving = calculate_downscales(actual, snapshot.expected, None).leaving
    return bool(leaving or pods_to_upgrade(snapshot.statefulsets, snapshot.pods))


def _changes_statefulsets(steps: Sequence[Step]) -> bool:
    return any(isinstance(step, ScaleStatefulSet | DeleteStatefulSet) for step in steps)


def plan_changes(snapshot: NodeSpecsSnapshot) -> ChangesPlan:
    """The forced upgrade, the downscale, the rolling restart and the voting clean-up of a pass.

    Each stops the pass where ECK's does: a forced upgrade returns at once; a downscale that
    resizes a StatefulSet leaves the restarts for the next pass (they decide from the sizes).
    """
    if not snapshot.expectations.met:
        return ChangesPlan(requeue_reasons=(snapshot.expectations.reason,))
    forced = forced_upgrade(snapshot.statefulsets, snapshot.pods)
    if forced.attempted:
        return ChangesPlan(
            steps=forced.steps,
            forced=forced.statefulsets,
            requeue_reasons=("Forced rolling upgrade in progress",),
        )
    cluster = snapshot.cluster
    if cluster is None:
        # Nothing to change needs no answer; a change waits for one.
        if not _changes_pending(snapshot):
            return ChangesPlan()
        return ChangesPlan(requeue_reasons=(ELASTICSEARCH_NOT_REACHABLE_REASON,))
    downscale = plan_downscale(
        DownscaleSnapshot(
            spec_version=snapshot.spec_version,
            budget=snapshot.budget,
            statefulsets=snapshot.statefulsets,
            expected=snapshot.expected,
            pods=snapshot.pods,
            cluster=cluster,
            shutdown_reason=snapshot.shutdown_reason,
        )
    )
    steps = list(drop_noops(downscale.steps, cluster))
    reasons = list(downscale.requeue_reasons)
    if downscale.error is not None:
        return ChangesPlan(
            steps=tuple(steps),
            downscale=downscale,
            requeue_reasons=tuple(reasons),
            error=downscale.error,
        )
    if _changes_statefulsets(steps):
        return ChangesPlan(steps=tuple(steps), downscale=downscale, requeue_reasons=tuple(reasons))
    upgrade = plan_rolling_restart(
        RollingSnapshot(
            spec_version=snapshot.spec_version,
            status_version=snapshot.status_version,
            budget=snapshot.budget,
            statefulsets=snapshot.statefulsets,
            expected=snapshot.expected,
            pods=snapshot.pods,
            cluster=cluster,
            disabled_predicates=snapshot.disabled_predicates,
            shutdown_reason=snapshot.shutdown_reason,
        )
    )
    steps += drop_noops(upgrade.steps, cluster)
    reasons += upgrade.requeue_reasons
    if upgrade.error is not None:
        return ChangesPlan(
            steps=tuple(steps),
            upgrade=upgrade,
            downscale=downscale,
            requeue_reasons=tuple(reasons),
            error=upgrade.error,
        )
    if not downscale.desired_leaving and not upgrade.to_upgrade:
        clearing = clear_voting_exclusions(
            snapshot.statefulsets, snapshot.pods, cluster.voting_exclusions
        )
        steps += clearing.steps
        if clearing.requeue_reason is not None:
            reasons.append(clearing.requeue_reason)
    return ChangesPlan(
        steps=tuple(steps),
        upgrade=upgrade,
        downscale=downscale,
        requeue_reasons=tuple(dict.fromkeys(reasons)),
    )


def drop_noops(steps: Sequence[Step], cluster: ClusterView) -> tuple[Step, ...]:
    """``steps`` without those that would leave the cluster as it is.

    ECK writes ``exclude._name: none_excluded`` and ``enable: all`` on every pass; here a cluster
    already so is left alone, so that a cluster at rest costs no call and no history.
    """
    kept: list[Step] = []
    allocation = cluster.allocation
    for step in steps:
        match step:
            case ExcludeFromAllocation(value=value) if value == allocation.exclude_name or (
                value == NONE_EXCLUDED and allocation.exclude_name == ""
            ):
                continue
            case EnableAllocation() if allocation.enable in ("", "all"):
                continue
            case DisableReplicaAllocation() if allocation.enable == "primaries":
                continue
            case ClearVotingExclusions() if cluster.voting_exclusions == ():
                continue
        kept.append(step)
    return tuple(kept)
