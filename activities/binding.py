"""``ControllerActivities``: the class a controller family's activities are methods of.

The controller table (``stackflow.controllers``) names each controller's activities; the family
that implements them is a class holding its dependencies, as Temporal's samples bind activities
(``hello/hello_activity_method.py``). The pattern, for a family module ``activities/<family>.py``::

    class ElasticsearchActivities(FamilyActivities):
        '''Elasticsearch's activities: its children, status and cluster license.'''

        async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
            ...  # ``primary`` is the object ``request.ref`` names, read once by the engine
        async def finalize(self, request: FinalizeInput) -> FinalizeResult:
            ...
        # optional, exactly when the table row's flip strategy is ``CONTROLLER``:
        async def flip_targets(self, namespace: str, direction: FlipDirectionName) -> list[...]:
            ...

    FAMILIES: Mapping[str, Family] = {ELASTICSEARCH_CONTROLLER.name: ElasticsearchActivities}

``FamilyActivities.__init__(context, controller)`` keeps ``self.context`` (the process's
``ControllerContext``) and ``self.controller`` (the table row). A family with compensations
overrides ``compensations`` with a mapping from the names its table row lists in
``Controller.compensations`` to bound methods ``(CompensateInput) -> CompensateResult``. A family
whose primary being gone is not ``Reconciling`` sets ``primary_missing_phase`` (or overrides
``primary_missing``). ``FAMILIES`` maps controller names to factories ``(context, controller) ->
ControllerActivities`` (the class itself); ``activities.registry`` checks the table and the
families agree (``BindingError`` at start-up), reads each reconcile's primary once, and registers
the methods under the table's activity names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from activities.context import ControllerContext
from stackflow.controllers import Controller
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
)

__all__ = [
    "Compensation",
    "ControllerActivities",
    "Family",
    "FamilyActivities",
    "FlipTargets",
    "FlipsTargets",
    "Primary",
    "flip_targets_of",
]

#: The primary object a reconcile is about, as the engine read it (``request.ref``'s object).
Primary = dict[str, Any]
#: A bound compensation: releases one thing the resource acquired outside itself.
Compensation = Callable[[CompensateInput], Awaitable[CompensateResult]]
#: A bound flip mapper: a namespace flip → the primary objects it concerns.
FlipTargets = Callable[[str, FlipDirectionName], Awaitable[list[Mapping[str, Any]]]]


class ControllerActivities(Protocol):
    """What one controller's activities do, bound to their dependencies."""

    @property
    def compensations(self) -> Mapping[str, Compensation]:
        """Keyed by the registered names the table lists in ``Controller.compensations``."""
        ...

    def primary_missing(self, ref: ResourceRef) -> ReconcileResult:
        """The reconcile's result when the primary object ``ref`` names does not exist."""
        ...

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Bring what ``primary`` owns and its status in line with its spec."""
        ...

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """Clean up after the deleted primary object."""
        ...


@runtime_checkable
class FlipsTargets(Protocol):
    """A family with its own flip mapper (table row flip strategy ``CONTROLLER``)."""

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """The primary objects a flip of ``namespace`` concerns (listed unscoped)."""
        ...


#: How ``FAMILIES`` builds a family's activities: usually the class itself.
Family = Callable[[ControllerContext, Controller], ControllerActivities]


def flip_targets_of(activities: ControllerActivities) -> FlipTargets | None:
    """The family's own flip mapper, or None when it has none."""
    if isinstance(activities, FlipsTargets):
        return activities.flip_targets
    return None


class FamilyActivities:
    """The common part of a family class: its dependencies, no compensations, and the result of
    a reconcile whose primary is gone (``primary_missing_phase``, ``"<kind> not found"``)."""

    primary_missing_phase: ClassVar[Phase] = Phase.RECONCILING

    def __init__(self, context: ControllerContext, controller: Controller) -> None:
        self.context = context
        self.controller = controller

    @property
    def compensations(self) -> Mapping[str, Compensation]:
        """None by default."""
        return {}

    def primary_missing(self, ref: ResourceRef) -> ReconcileResult:
        """``"<kind> not found"`` in ``primary_missing_phase``."""
        return ReconcileResult(phase=self.primary_missing_phase, message=f"{ref.kind} not found")
