"""ECK's expectations: is the view of the StatefulSets and Pods fresh enough to act on?

Downscales, restarts and voting-exclusion changes are decided from a listing that may lag behind
the operator's own writes. ECK acts only when (in this order) every Pod it deleted is gone, every
StatefulSet it updated shows the new generation, the StatefulSet controller has observed every
StatefulSet, and each StatefulSet has exactly the Pods ``0 … replicas-1`` (terminating ones count).
The reasons are ECK's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from stackflow.stack.elasticsearch.orchestration.snapshot import PodState, StatefulSetState


@dataclass(frozen=True)
class ExpectationCheck:
    """Whether the view may be acted on, and if not, why (ECK's reason text)."""

    met: bool
    reason: str = ""


def _go_list(items: Iterable[str]) -> str:
    # ECK formats these lists with Go's %s of a []string: "[a b]".
    return "[" + " ".join(items) + "]"


def pods_match_replicas(
    statefulsets: Sequence[StatefulSetState], pods: Sequence[PodState]
) -> ExpectationCheck:
    """Whether every StatefulSet has exactly its Pods ``0 … replicas-1`` (ECK's pod reconciliation).

    Pods are matched by their ``statefulset-name`` label; a terminating Pod still counts. The reason
    of the first StatefulSet that does not match lists the creations and deletions still pending.
    """
    for statefulset in statefulsets:
        expected = statefulset.pod_names()
        actual = [pod.name for pod in pods if pod.statefulset == statefulset.name]
        creations = [name for name in expected if name not in actual]
        deletions = [name for name in actual if name not in expected]
        if creations or deletions:
            reason = ""
            if creations:
                reason += f", creations: {_go_list(creations)}"
            if deletions:
                reason += f", deletions: {_go_list(deletions)}"
            return ExpectationCheck(met=False, reason=reason)
    return ExpectationCheck(met=True)


def expectations_met(
    statefulsets: Sequence[StatefulSetState],
    pods: Sequence[PodState],
    *,
    awaited_deletions: Iterable[str] = (),
    awaited_generations: Mapping[str, int] | None = None,
) -> ExpectationCheck:
    """ECK's ``expectationsSatisfied`` over a snapshot.

    ``awaited_deletions`` names the Pods the operator deleted that are still listed (same UID);
    ``awaited_generations`` maps a StatefulSet the operator updated to the generation it wrote.
    """
    pending_deletions = sorted(set(awaited_deletions))
    if pending_deletions:
        return ExpectationCheck(
            met=False, reason=f"Expecting deletion for Pods: {','.join(pending_deletions)}"
        )
    by_name = {statefulset.name: statefulset for statefulset in statefulsets}
    stale = sorted(
        name
        for name, generation in (awaited_generations or {}).items()
        if name in by_name and by_name[name].generation < generation
    )
    if stale:
        return ExpectationCheck(
            met=False, reason=f"*v1.StatefulSet not reconciled yet: {','.join(stale)}"
        )
    unobserved = [s.name for s in statefulsets if s.generation != s.observed_generation]
    if unobserved:
        return ExpectationCheck(
            met=False,
            reason=f"observedGeneration is not reconciled yet for StatefulSets {','.join(unobserved)}",
        )
    return pods_match_replicas(statefulsets, pods)
