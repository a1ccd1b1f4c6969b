"""Scriptable fake activities registered under the engine's real activity names, and test helpers."""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.binding import Primary
from activities.step import ScopedPrimary, reconcile_step
from stackflow.models.engine import (
    ACT_CLUSTER_STEP,
    ACT_FLIP_TARGETS,
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    ACT_SIGNAL_RESOURCES,
    INVALID_SPEC_ERROR,
    ClusterStepInput,
    ClusterStepResult,
    CompensateInput,
    CompensateResult,
    CompensationStep,
    FinalizeInput,
    FinalizeResult,
    FlipTargetsInput,
    FlipTargetsResult,
    InvalidSpecNoticeInput,
    InvalidSpecNoticeResult,
    LicenseCheckInput,
    LicenseCheckResult,
    LicenseWaitNoticeInput,
    LicenseWaitNoticeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
    ReconcileStepInput,
    ReconcileStepResult,
    ResourceRef,
    ScopeCheckInput,
    ScopeCheckResult,
    SignalResourcesInput,
    SignalResourcesResult,
    finalize_activity,
    reconcile_activity,
    reconcile_step_activity,
)
from stackflow.models.license_condition import (
    ACT_LICENSE_CONDITION,
    LicenseConditionInput,
    LicenseConditionResult,
)

CONTROLLER = "elasticsearch"
RELEASE_OBSERVER = f"{CONTROLLER}.release_observer"
RELEASE_WATCH = f"{CONTROLLER}.release_watch"


def make_ref(name: str | None = None, namespace: str = "team-a") -> ResourceRef:
    """An Elasticsearch reference with a unique name (one workflow id per test)."""
    return ResourceRef(
        controller=CONTROLLER,
        group="elasticsearch.k8s.elastic.co",
        version="v1",
        kind="Elasticsearch",
        plural="elasticsearches",
        namespace=namespace,
        name=name or f"es-{uuid.uuid4().hex[:10]}",
    )


def step(key: str, activity_name: str = RELEASE_OBSERVER) -> CompensationStep:
    """A compensation step releasing `key`."""
    return CompensationStep(activity=activity_name, key=key)


def invalid_spec(message: str = "spec.nodeSets must not be empty") -> ApplicationError:
    """The error a controller's reconcile raises for an invalid spec."""
    return ApplicationError(message, type=INVALID_SPEC_ERROR, non_retryable=True)


@dataclass
class FakeEngine:
    """The activities' behaviour, scripted by each test, and every call they received."""

    exists: bool = True
    in_scope: bool = True
    license_required: bool = False
    licensed: bool = True
    #: Outcomes of the next reconciles (a ReconcileResult or an exception to raise), in order.
    outcomes: deque[ReconcileResult | Exception] = field(default_factory=deque)
    #: Kinds of cluster steps that fail (``ClusterStep.kind``, e.g. ``"flush"``).
    failing_steps: set[str] = field(default_factory=set)
    #: What a cluster step of a kind leaves in the cluster (compensations) or undoes (keys).
    step_acquires: dict[str, tuple[CompensationStep, ...]] = field(default_factory=dict)
    step_releases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Keys whose compensation fails (a release the cluster refuses).
    failing_compensations: set[str] = field(default_factory=set)
    #: When given, every compensation waits for it to be set before it answers.
    compensations_open: asyncio.Event | None = None
    default_outcome: ReconcileResult = field(
        default_factory=lambda: ReconcileResult(phase=Phase.READY, message="green")
    )
    flip_targets: dict[str, tuple[ResourceRef, ...]] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def count(self, name: str) -> int:
        """How many times the activity `name` ran."""
        return sum(1 for called, _ in self.calls if called == name)

    def inputs(self, name: str) -> list[Any]:
        """The inputs the activity `name` received, in order."""
        return [argument for called, argument in self.calls if called == name]

    def activities(self) -> list[Callable[..., Awaitable[Any]]]:
        """Every fake, registered under the real activity name."""
        engine = self

        @activity.defn(name=ACT_SCOPE_CHECK)
        async def scope_check(request: ScopeCheckInput) -> ScopeCheckResult:
            engine.calls.append((ACT_SCOPE_CHECK, request))
            return ScopeCheckResult(
                exists=engine.exists,
                in_scope=engine.in_scope,
                license_required=engine.license_required,
                reason="" if engine.in_scope else "namespace team-a does not match",
            )

        @activity.defn(name=ACT_LICENSE_CHECK)
        async def license_check(request: LicenseCheckInput) -> LicenseCheckResult:
            engine.calls.append((ACT_LICENSE_CHECK, request))
            return LicenseCheckResult(
                licensed=engine.licensed, reason="" if engine.licensed else "no license"
            )

        @activity.defn(name=ACT_LICENSE_WAIT_NOTICE)
        async def license_wait_notice(request: LicenseWaitNoticeInput) -> LicenseWaitNoticeResult:
            engine.calls.append((ACT_LICENSE_WAIT_NOTICE, request))
            return LicenseWaitNoticeResult(events=2)

        @activity.defn(name=ACT_INVALID_SPEC_NOTICE)
        async def invalid_spec_notice(request: InvalidSpecNoticeInput) -> InvalidSpecNoticeResult:
            engine.calls.append((ACT_INVALID_SPEC_NOTICE, request))
            return InvalidSpecNoticeResult(recorded=True)

        @activity.defn(name=ACT_LICENSE_CONDITION)
        async def license_condition(request: LicenseConditionInput) -> LicenseConditionResult:
            engine.calls.append((ACT_LICENSE_CONDITION, request))
            return LicenseConditionResult(written=True)

        @activity.defn(name=reconcile_activity(CONTROLLER))
        async def reconcile(request: ReconcileInput) -> ReconcileResult:
            engine.calls.append((reconcile_activity(CONTROLLER), request))
            outcome = engine.outcomes.popleft() if engine.outcomes else engine.default_outcome
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

        @activity.defn(name=reconcile_step_activity(CONTROLLER))
        async def step(request: ReconcileStepInput) -> ReconcileStepResult:
            # The real composition, over the fakes: each gate and the reconcile is recorded as if
            # it had run as its own activity, so tests count scope checks and reconciles alike.
            engine.calls.append((reconcile_step_activity(CONTROLLER), request))

            async def scope_check_reading(check: ScopeCheckInput) -> ScopedPrimary:
                scope = await scope_check(check)
                return ScopedPrimary(scope=scope, primary={} if scope.exists else None)

            async def reconcile_primary(
                reconciled: ReconcileInput, primary: Primary | None
            ) -> ReconcileResult:
                return await reconcile(reconciled)

            return await reconcile_step(
                request,
                scope_check=scope_check_reading,
                license_check=license_check,
                reconcile=reconcile_primary,
            )

        @activity.defn(name=finalize_activity(CONTROLLER))
        async def finalize(request: FinalizeInput) -> FinalizeResult:
            engine.calls.append((finalize_activity(CONTROLLER), request))
            return FinalizeResult(deleted=("observer",))

        def compensation(name: str) -> Callable[[CompensateInput], Awaitable[CompensateResult]]:
            @activity.defn(name=name)
            async def compensate(request: CompensateInput) -> CompensateResult:
                engine.calls.append((name, request))
                if engine.compensations_open is not None:
                    await engine.compensations_open.wait()
                if request.step.key in engine.failing_compensations:
                    raise ApplicationError(f"{request.step.key} refused", non_retryable=True)
                return CompensateResult(released=True)

            return compensate

        @activity.defn(name=ACT_FLIP_TARGETS)
        async def flip_targets(request: FlipTargetsInput) -> FlipTargetsResult:
            engine.calls.append((ACT_FLIP_TARGETS, request))
            return FlipTargetsResult(refs=engine.flip_targets.get(request.controller, ()))

        @activity.defn(name=ACT_CLUSTER_STEP)
        async def cluster_step(request: ClusterStepInput) -> ClusterStepResult:
            engine.calls.append((ACT_CLUSTER_STEP, request))
            if request.step.kind in engine.failing_steps:
                raise ApplicationError(f"{request.step.kind} refused", non_retryable=True)
            return ClusterStepResult(
                done=True,
                message=request.step.kind,
                acquired=engine.step_acquires.get(request.step.kind, ()),
                released=engine.step_releases.get(request.step.kind, ()),
            )

        @activity.defn(name=ACT_SIGNAL_RESOURCES)
        async def signal_resources(request: SignalResourcesInput) -> SignalResourcesResult:
            engine.calls.append((ACT_SIGNAL_RESOURCES, request))
            return SignalResourcesResult(signalled=len(request.refs))

        return [
            scope_check,
            license_check,
            license_wait_notice,
            invalid_spec_notice,
            license_condition,
            reconcile,
            step,
            finalize,
            compensation(RELEASE_OBSERVER),
            compensation(RELEASE_WATCH),
            flip_targets,
            signal_resources,
            cluster_step,
        ]
