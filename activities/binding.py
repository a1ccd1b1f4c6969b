"""``ControllerActivities``: the implementation a controller's name is bound to.

The controller table (``stackflow.controllers``) names each controller's activities; every
activities module of a controller family exports ``IMPLEMENTATIONS``, a mapping from controller
name to the functions that implement them. ``activities.registry`` checks the two agree and
registers the functions under the table's names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from activities.context import ControllerContext
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    ReconcileInput,
    ReconcileResult,
)

__all__ = ["Compensation", "ControllerActivities", "Finalize", "FlipTargets", "Reconcile"]

Reconcile = Callable[[ControllerContext, ReconcileInput], Awaitable[ReconcileResult]]
Finalize = Callable[[ControllerContext, FinalizeInput], Awaitable[FinalizeResult]]
Compensation = Callable[[ControllerContext, CompensateInput], Awaitable[CompensateResult]]
#: A namespace flip → the primary objects it concerns (for ``FlipStrategy.CONTROLLER``).
FlipTargets = Callable[
    [ControllerContext, str, FlipDirectionName], Awaitable[list[Mapping[str, Any]]]
]


@dataclass(frozen=True)
class ControllerActivities:
    """What one controller's activities do."""

    reconcile: Reconcile
    finalize: Finalize
    #: Keyed by the registered names the table lists in ``Controller.compensations``.
    compensations: Mapping[str, Compensation] = field(default_factory=dict)
    #: Required exactly when the table row's flip strategy is ``CONTROLLER``.
    flip_targets: FlipTargets | None = None
