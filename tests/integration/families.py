"""A controller family's activities, called in tests as the engine calls them.

Each function takes the ``ControllerContext`` first and builds the family of the request's
controller from ``activities.registry.FAMILIES``; ``reconcile`` reads the primary once and hands
it to the family (its "not found" result when there is none), as the registered activity does.
Errors are not translated (wrap in ``translated_errors`` to see what the workflow sees).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.binding import ControllerActivities, flip_targets_of
from activities.context import ControllerContext
from activities.generic import read_primary
from activities.registry import FAMILIES, reconcile_family
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    ReconcileInput,
    ReconcileResult,
)

__all__ = ["family", "finalize", "flip_targets", "reconcile"]


def family(context: ControllerContext, controller: str) -> ControllerActivities:
    """The family of ``controller``, bound to ``context``."""
    return FAMILIES[controller](context, context.controllers.named(controller))


async def reconcile(context: ControllerContext, request: ReconcileInput) -> ReconcileResult:
    """One reconcile of ``request.ref``: its primary read once, then its family's reconcile."""
    primary = await read_primary(context, request.ref)
    return await reconcile_family(family(context, request.ref.controller), request, primary)


async def finalize(context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
    """The finalizer of ``request.ref``'s controller."""
    return await family(context, request.ref.controller).finalize(request)


async def flip_targets(
    context: ControllerContext, controller: str, namespace: str, direction: FlipDirectionName
) -> list[Mapping[str, Any]]:
    """The controller's own flip mapper's answer for a flip of ``namespace``."""
    mapper = flip_targets_of(family(context, controller))
    assert mapper is not None, f"{controller} has no flip mapper of its own"
    return await mapper(namespace, direction)
