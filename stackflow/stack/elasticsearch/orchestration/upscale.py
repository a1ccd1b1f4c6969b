"""Upscales: how many new Pods each StatefulSet gets in this pass, within ``maxSurge``.

The spec may ask for more Pods than exist. The cluster may exceed its wanted size by ``maxSurge``
(unbounded by default), so the new Pods are granted StatefulSet by StatefulSet in spec order until
the allowance is spent; the others wait (``PENDING``). A StatefulSet the spec shrinks keeps its
current replicas here: the downscale removes its Pods later, safely. Masters are not created one
at a time: a new cluster creates all of them at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stackflow.stack.elasticsearch.orchestration.budget import ChangeBudget, creates_allowed
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ExpectedStatefulSet,
    StatefulSetState,
    ordinal_pod_name,
)

NEW_NODE_PENDING = "PENDING"
NEW_NODE_EXPECTED = "EXPECTED"
LIMITED_BY_MAX_SURGE = "Limiting nodes creation to respect maxSurge setting"
UPSCALE_IN_PROGRESS_REASON = "Upscale in progress"


@dataclass(frozen=True)
class NewNode:
    """A Pod the spec adds: ``EXPECTED`` when its StatefulSet was scaled for it, else ``PENDING``."""

    name: str
    status: str
    message: str | None = None


@dataclass(frozen=True)
class UpscalePlan:
    """The replica count of every expected StatefulSet for this pass, and the new nodes' status."""

    replicas: Mapping[str, int] = field(default_factory=dict)
    nodes: tuple[NewNode, ...] = ()

    @property
    def requeue_reason(self) -> str | None:
        """ECK's requeue reason while Pods are being added."""
        return UPSCALE_IN_PROGRESS_REASON if self.nodes else None


def pods_to_create(
    actual: Sequence[StatefulSetState], expected: Sequence[ExpectedStatefulSet]
) -> tuple[str, ...]:
    """Every Pod the spec has and the StatefulSets do not, highest ordinal first per StatefulSet."""
    current = {statefulset.name: statefulset.replicas for statefulset in actual}
    return tuple(
        ordinal_pod_name(statefulset.name, ordinal)
        for statefulset in expected
        for ordinal in range(statefulset.replicas - 1, current.get(statefulset.name, 0) - 1, -1)
    )


def plan_upscale(
    actual: Sequence[StatefulSetState],
    expected: Sequence[ExpectedStatefulSet],
    budget: ChangeBudget,
) -> UpscalePlan:
    """ECK's replica adjustment (``adjustResources`` with ``upscaleState``).

    ``actual`` and ``expected`` sum to the cluster's current and wanted size; the difference plus
    ``maxSurge`` is how many Pods may be created now.
    """
    allowance = creates_allowed(
        budget,
        actual_nodes=sum(statefulset.replicas for statefulset in actual),
        expected_nodes=sum(statefulset.replicas for statefulset in expected),
    )
    return grant_creations(actual, expected, allowance)


def grant_creations(
    actual: Sequence[StatefulSetState],
    expected: Sequence[ExpectedStatefulSet],
    allowance: int | None,
) -> UpscalePlan:
    """Grant up to ``allowance`` new Pods (``None``: any number), StatefulSet by StatefulSet in
    spec order, and say which new Pods are expected now and which wait."""
    current = {statefulset.name: statefulset.replicas for statefulset in actual}
    statuses = {name: NewNode(name, NEW_NODE_PENDING) for name in pods_to_create(actual, expected)}
    granted_so_far = 0
    replicas: dict[str, int] = {}
    for statefulset in expected:
        have = current.get(statefulset.name, 0)
        want = statefulset.replicas
        if want <= have:
            # Same size, or a downscale the downscale step does later: keep the current count.
            replicas[statefulset.name] = have if statefulset.name in current else want
            continue
        granted = want - have
        if allowance is not None:
            granted = min(granted, allowance - granted_so_far)
        granted_so_far += granted
        replicas[statefulset.name] = have + granted
        if granted > 0:
            message = (
                f"Upscaling StatefulSet {statefulset.name} from {have} to {have + granted} replicas"
            )
            for ordinal in range(have, have + granted):
                name = ordinal_pod_name(statefulset.name, ordinal)
                statuses[name] = NewNode(name, NEW_NODE_EXPECTED, message)
        for ordinal in range(have + granted, want):
            name = ordinal_pod_name(statefulset.name, ordinal)
            statuses[name] = NewNode(name, NEW_NODE_PENDING, LIMITED_BY_MAX_SURGE)
    return UpscalePlan(replicas, tuple(statuses[name] for name in sorted(statuses)))
