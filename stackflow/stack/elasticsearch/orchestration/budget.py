"""ECK's change budget (``spec.updateStrategy.changeBudget``) and the three counts derived from it.

``maxUnavailable`` bounds how many Pods may be down at once (default 1); ``maxSurge`` bounds how
many Pods may exist beyond the spec (default: unbounded). A negative value means unbounded. In the
resolved :class:`ChangeBudget`, ``None`` stands for unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_UNAVAILABLE = 1


@dataclass(frozen=True)
class ChangeBudget:
    """The resolved budget: ``None`` is unbounded."""

    max_unavailable: int | None = DEFAULT_MAX_UNAVAILABLE
    max_surge: int | None = None


def resolve_change_budget(
    max_unavailable: int | None = None, max_surge: int | None = None
) -> ChangeBudget:
    """The budget for the values as written in the spec (``None``: not set).

    Unset takes ECK's default (1 unavailable, unbounded surge); a negative value is unbounded.
    """
    unavailable = DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable
    return ChangeBudget(
        max_unavailable=None if unavailable < 0 else unavailable,
        max_surge=None if max_surge is None or max_surge < 0 else max_surge,
    )


def change_budget_from_spec(spec: Mapping[str, Any]) -> ChangeBudget:
    """The budget of an Elasticsearch ``spec`` (``updateStrategy.changeBudget``)."""
    change_budget: Mapping[str, Any] = (spec.get("updateStrategy") or {}).get("changeBudget") or {}
    return resolve_change_budget(
        max_unavailable=change_budget.get("maxUnavailable"),
        max_surge=change_budget.get("maxSurge"),
    )


@dataclass(frozen=True)
class DeletionAllowance:
    """How many Pods a rolling change may take down now, and whether the budget is used up.

    When ``reached`` is true ECK still restarts one Pod that is already unavailable, so that a
    broken Pod can be fixed by a new spec even when the budget is spent.
    """

    allowed: int
    reached: bool


def deletion_allowance(budget: ChangeBudget, *, pods: int, healthy: int) -> DeletionAllowance:
    """ECK's ``getAllowedDeletions``: ``maxUnavailable`` minus the Pods already unavailable.

    ``pods`` is the number of Pods the StatefulSets should have (the sum of their replicas);
    ``healthy`` the number that are ready, not terminating and in the cluster.
    """
    if budget.max_unavailable is None:
        return DeletionAllowance(allowed=pods, reached=False)
    allowed = budget.max_unavailable - (pods - healthy)
    return DeletionAllowance(allowed=allowed, reached=allowed <= 0)


def removals_allowed(budget: ChangeBudget, *, ready_pods: int, desired_nodes: int) -> int | None:
    """ECK's downscale budget: how many nodes may leave now (``None``: any number).

    A downscale keeps at least ``desired_nodes - maxUnavailable`` nodes ready.
    """
    if budget.max_unavailable is None:
        return None
    return max(ready_pods - (desired_nodes - budget.max_unavailable), 0)


def creates_allowed(budget: ChangeBudget, *, actual_nodes: int, expected_nodes: int) -> int | None:
    """ECK's upscale budget: how many Pods may be created now (``None``: any number).

    ``actual_nodes`` and ``expected_nodes`` are the sums of the existing and the wanted StatefulSets'
    replicas; the cluster may exceed the wanted size by ``maxSurge``.
    """
    if budget.max_surge is None:
        return None
    return max(budget.max_surge + expected_nodes - actual_nodes, 0)
