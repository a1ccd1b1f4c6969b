"""The reconcile step's verdicts: the first gate that stops it wins; an invalid spec is a verdict."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.binding import Primary
from activities.errors import InvalidSpecError
from activities.step import ScopedPrimary, reconcile_step
from stackflow.kube import errors as kube_errors
from stackflow.models.engine import (
    INVALID_SPEC_ERROR,
    LicenseCheckInput,
    LicenseCheckResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
    ReconcileStepInput,
    ScopeCheckInput,
    ScopeCheckResult,
    StepVerdict,
)
from tests.workflows.fakes import make_ref

GREEN = ReconcileResult(phase=Phase.READY, message="green")
#: The primary object the scope check reads.
PRIMARY: Primary = {"metadata": {"namespace": "ns", "name": "es", "resourceVersion": "7"}}


def scripted(
    scope: ScopeCheckResult, licensed: bool, outcome: ReconcileResult | Exception
) -> tuple[list[str], dict[str, object]]:
    """The three callables of the step, recording which ran (and what the reconcile was handed)."""
    ran: list[str] = []

    async def scope_check(request: ScopeCheckInput) -> ScopedPrimary:
        ran.append("scope")
        return ScopedPrimary(scope=scope, primary=PRIMARY if scope.exists else None)

    async def license_check(request: LicenseCheckInput) -> LicenseCheckResult:
        ran.append("license")
        return LicenseCheckResult(licensed=licensed, reason="" if licensed else "no license")

    async def reconcile(request: ReconcileInput, primary: Primary | None) -> ReconcileResult:
        ran.append("reconcile")
        assert primary is PRIMARY, "the reconcile is handed what the scope check read"
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return ran, {"scope_check": scope_check, "license_check": license_check, "reconcile": reconcile}


IN_SCOPE = ScopeCheckResult(exists=True, in_scope=True, license_required=False)
GATED = ScopeCheckResult(exists=True, in_scope=True, license_required=True)


@pytest.mark.parametrize(
    ("scope", "licensed", "outcome", "verdict", "reason", "ran"),
    [
        (
            ScopeCheckResult(exists=False, in_scope=True, license_required=True, reason="gone"),
            True,
            GREEN,
            StepVerdict.DELETED,
            "gone",
            ["scope"],
        ),
        (
            ScopeCheckResult(exists=True, in_scope=False, license_required=True, reason="ns"),
            True,
            GREEN,
            StepVerdict.OUT_OF_SCOPE,
            "ns",
            ["scope"],
        ),
        (GATED, False, GREEN, StepVerdict.UNLICENSED, "no license", ["scope", "license"]),
        (GATED, True, GREEN, StepVerdict.RECONCILED, "", ["scope", "license", "reconcile"]),
        (IN_SCOPE, False, GREEN, StepVerdict.RECONCILED, "", ["scope", "reconcile"]),
        (
            IN_SCOPE,
            True,
            InvalidSpecError("spec.nodeSets: empty"),
            StepVerdict.INVALID_SPEC,
            "spec.nodeSets: empty",
            ["scope", "reconcile"],
        ),
        (
            IN_SCOPE,
            True,
            ApplicationError("bad", type=INVALID_SPEC_ERROR, non_retryable=True),
            StepVerdict.INVALID_SPEC,
            "bad",
            ["scope", "reconcile"],
        ),
    ],
)
async def test_the_step_verdicts(
    scope: ScopeCheckResult,
    licensed: bool,
    outcome: ReconcileResult | Exception,
    verdict: StepVerdict,
    reason: str,
    ran: list[str],
) -> None:
    calls, steps = scripted(scope, licensed, outcome)
    result = await reconcile_step(ReconcileStepInput(ref=make_ref(), triggers=()), **steps)  # type: ignore[arg-type]
    assert (result.verdict, result.reason, calls) == (verdict, reason, ran)
    assert (result.reconciled is not None) is (verdict is StepVerdict.RECONCILED)


async def test_any_other_failure_leaves_the_step_to_be_retried() -> None:
    _, steps = scripted(IN_SCOPE, True, kube_errors.Conflict("changed meanwhile"))
    with pytest.raises(kube_errors.Conflict):
        await reconcile_step(ReconcileStepInput(ref=make_ref(), triggers=()), **steps)  # type: ignore[arg-type]


async def test_a_primary_the_scope_check_did_not_read_reaches_the_reconcile_as_none() -> None:
    """The scope check saw the object (a cache behind a deletion) but its GET found nothing: the
    reconcile answers its family's "not found" (``registry.reconcile_family``)."""
    handed: list[Primary | None] = []

    async def scope_check(request: ScopeCheckInput) -> ScopedPrimary:
        return ScopedPrimary(scope=IN_SCOPE)

    async def license_check(request: LicenseCheckInput) -> LicenseCheckResult:
        raise AssertionError("not gated")

    async def reconcile(request: ReconcileInput, primary: Primary | None) -> ReconcileResult:
        handed.append(primary)
        return GREEN

    result = await reconcile_step(
        ReconcileStepInput(ref=make_ref(), triggers=()),
        scope_check=scope_check,
        license_check=license_check,
        reconcile=reconcile,
    )

    assert (result.verdict, handed) == (StepVerdict.RECONCILED, [None])
