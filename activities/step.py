"""The reconcile step: the scope check, the license gate and the reconcile in one activity.

The workflow used to run each as its own (local) activity, paying a round trip to the Temporal
server and a history event for every gate on every reconcile. The step runs them in order inside
one activity and answers a verdict, so a reconcile costs the history one marker; the gates'
decisions stay readable in the UI as the step's result (``verdict`` and ``reason``).

The scope check reads the primary object, and the reconcile is handed what it read: one read per
reconcile (``ScopedPrimary``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from activities.binding import Primary
from activities.errors import invalid_spec_message
from stackflow.models.engine import (
    LicenseCheckInput,
    LicenseCheckResult,
    ReconcileInput,
    ReconcileResult,
    ReconcileStepInput,
    ReconcileStepResult,
    ScopeCheckInput,
    ScopeCheckResult,
    StepVerdict,
)

__all__ = ["LicenseCheck", "Reconcile", "ScopeCheck", "ScopedPrimary", "reconcile_step"]


@dataclass(frozen=True)
class ScopedPrimary:
    """The scope check's verdict and the primary object it read (None when it read none)."""

    scope: ScopeCheckResult
    primary: Primary | None = None


ScopeCheck = Callable[[ScopeCheckInput], Awaitable[ScopedPrimary]]
LicenseCheck = Callable[[LicenseCheckInput], Awaitable[LicenseCheckResult]]
#: The reconcile of the primary the scope check read (None: the family's "not found" result).
Reconcile = Callable[[ReconcileInput, Primary | None], Awaitable[ReconcileResult]]


async def reconcile_step(
    request: ReconcileStepInput,
    *,
    scope_check: ScopeCheck,
    license_check: LicenseCheck,
    reconcile: Reconcile,
) -> ReconcileStepResult:
    """Run the gates, then the reconcile if they let it through; the first gate that stops wins.

    An invalid spec is a verdict too (the workflow records it and waits for a change); every other
    failure leaves the step as it would leave the reconcile, to be retried.
    """
    ref = request.ref
    scoped = await scope_check(ScopeCheckInput(ref=ref))
    scope = scoped.scope
    if not scope.exists:
        return ReconcileStepResult(verdict=StepVerdict.DELETED, reason=scope.reason)
    if not scope.in_scope:
        return ReconcileStepResult(verdict=StepVerdict.OUT_OF_SCOPE, reason=scope.reason)
    if scope.license_required:
        license = await license_check(LicenseCheckInput(ref=ref))
        if not license.licensed:
            return ReconcileStepResult(verdict=StepVerdict.UNLICENSED, reason=license.reason)
    try:
        result = await reconcile(ReconcileInput(ref=ref, triggers=request.triggers), scoped.primary)
    except Exception as error:
        message = invalid_spec_message(error)
        if message is None:
            raise
        return ReconcileStepResult(verdict=StepVerdict.INVALID_SPEC, reason=message)
    return ReconcileStepResult(verdict=StepVerdict.RECONCILED, reconciled=result)
