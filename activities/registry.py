"""``build_activities(context)``: the activities a worker registers, bound to their classes.

Two kinds of class hold the activities' dependencies. ``EngineActivities`` holds the
controller-independent ones (``stackflow.models.engine``: scope check, license gate, notices,
flips, cluster steps, signals; and the leader's sweeps and reports). Per controller of
``context.controllers``, its family's class (``FAMILIES``, see ``activities.binding``) holds its
reconcile, finalize, compensations and flip mapper; ``ControllerBinding`` adds what the engine
does around them (the primary read once per reconcile, the reconcile step's gates) and registers
them under the names the controller's table row lists. ``_register`` is the one place an activity
is defined: it names it, translates its Kubernetes and Elasticsearch errors to
``ApplicationError`` (``translated_errors``) and attributes a controller's writes to it
(``writing_as``, so the watchers do not wake a controller for its own writes).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from temporalio import activity

from activities import (
    apps,
    associations,
    autoops,
    autoscaler,
    cluster_license_secret,
    cluster_steps,
    elasticsearch,
    garbage,
    generic,
    license_wait_condition,
    remoteclusters,
    stackconfigpolicy,
    telemetry,
    trial,
)
from activities.binding import (
    ControllerActivities,
    Family,
    FlipTargets,
    Primary,
    flip_targets_of,
)
from activities.context import ControllerContext
from activities.errors import translated_errors
from activities.step import ScopedPrimary, reconcile_step
from stackflow.controllers import Controller, FlipStrategy
from stackflow.kube.writes import writing_as
from stackflow.models.engine import (
    ACT_CLUSTER_STEP,
    ACT_FLIP_TARGETS,
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    ACT_SIGNAL_RESOURCES,
    ACT_UNDO_CLUSTER_STEP,
    ClusterStepInput,
    ClusterStepResult,
    CompensateInput,
    CompensateResult,
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
    ReconcileInput,
    ReconcileResult,
    ReconcileStepInput,
    ReconcileStepResult,
    ScopeCheckInput,
    ScopeCheckResult,
    SignalResourcesInput,
    SignalResourcesResult,
    StepVerdict,
)
from stackflow.models.garbage import (
    ACT_SWEEP_SECRETS,
    ACT_SWEEP_WORKFLOWS,
    SweepSecretsInput,
    SweepSecretsResult,
    SweepWorkflowsInput,
    SweepWorkflowsResult,
)
from stackflow.models.license_condition import (
    ACT_LICENSE_CONDITION,
    LicenseConditionInput,
    LicenseConditionResult,
)
from stackflow.models.telemetry import (
    ACT_LICENSE_USAGE,
    ACT_TELEMETRY_REPORT,
    LicenseUsageInput,
    LicenseUsageResult,
    TelemetryReportInput,
    TelemetryReportResult,
)

__all__ = [
    "FAMILIES",
    "BindingError",
    "ControllerBinding",
    "EngineActivities",
    "build_activities",
    "reconcile_family",
]

Activity = Callable[..., Awaitable[Any]]


#: Every controller family of this package, by controller name.
FAMILIES: Mapping[str, Family] = {
    **elasticsearch.FAMILIES,
    **cluster_license_secret.FAMILIES,
    **trial.FAMILIES,
    **apps.FAMILIES,
    **associations.FAMILIES,
    **stackconfigpolicy.FAMILIES,
    **autoops.FAMILIES,
    **autoscaler.FAMILIES,
    **remoteclusters.FAMILIES,
}


class BindingError(ValueError):
    """The controller table and the families disagree (a wiring bug: fail at start-up)."""


async def reconcile_family(
    family: ControllerActivities, request: ReconcileInput, primary: Primary | None
) -> ReconcileResult:
    """The family's reconcile of ``primary``, or its "not found" result when there is none."""
    if primary is None:
        return family.primary_missing(request.ref)
    return await family.reconcile(request, primary)


class ControllerBinding:
    """One controller's activities as the engine runs them: its family's methods, with the
    primary read once per reconcile and the reconcile step's gates."""

    def __init__(
        self, context: ControllerContext, controller: Controller, family: ControllerActivities
    ) -> None:
        self.context = context
        self.controller = controller
        self.family = family

    async def reconcile(self, request: ReconcileInput) -> ReconcileResult:
        """Read the primary, then reconcile it (the gates ran as activities of their own)."""
        primary = await generic.read_primary(self.context, request.ref)
        return await reconcile_family(self.family, request, primary)

    async def reconcile_step(self, request: ReconcileStepInput) -> ReconcileStepResult:
        """The scope check (which reads the primary), the license gate, the reconcile."""
        context = self.context

        async def scope_check(check: ScopeCheckInput) -> ScopedPrimary:
            return await generic.scope_check_reading_primary(context, check)

        async def license_check(check: LicenseCheckInput) -> LicenseCheckResult:
            return await generic.license_check(context, check)

        async def reconcile(reconcile: ReconcileInput, primary: Primary | None) -> ReconcileResult:
            return await reconcile_family(self.family, reconcile, primary)

        result = await reconcile_step(
            request, scope_check=scope_check, license_check=license_check, reconcile=reconcile
        )
        context.license_waiters.record(
            request.ref.workflow_id, waiting=result.verdict is StepVerdict.UNLICENSED
        )
        return result

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """The family's clean-up after the deleted primary."""
        return await self.family.finalize(request)

    def activities(self) -> dict[str, Activity]:
        """Its activities under the names of its table row, each attributed to the controller."""
        controller = self.controller
        bodies: dict[str, Callable[[Any], Awaitable[Any]]] = {
            controller.reconcile_activity: self.reconcile,
            controller.reconcile_step_activity: self.reconcile_step,
            controller.finalize_activity: self.finalize,
            **{name: self.family.compensations[name] for name in controller.compensations},
        }
        return {
            name: _register(name, body, writer=controller.name) for name, body in bodies.items()
        }


class EngineActivities:
    """The controller-independent activities, bound to the process's ``ControllerContext`` and
    the controllers' own flip mappers."""

    def __init__(self, context: ControllerContext, flip_mappers: Mapping[str, FlipTargets]) -> None:
        self.context = context
        self.flip_mappers = flip_mappers

    async def scope_check(self, request: ScopeCheckInput) -> ScopeCheckResult:
        """Does the resource exist, is its namespace managed, does it need a license?"""
        return await generic.scope_check(self.context, request)

    async def license_check(self, request: LicenseCheckInput) -> LicenseCheckResult:
        """Whether enterprise features are enabled now."""
        return await generic.license_check(self.context, request)

    async def license_wait_notice(self, request: LicenseWaitNoticeInput) -> LicenseWaitNoticeResult:
        """The Warning events (and conditions) of a resource that waits for a license."""
        return await generic.license_wait_notice(self.context, request)

    async def invalid_spec_notice(self, request: InvalidSpecNoticeInput) -> InvalidSpecNoticeResult:
        """Phase ``Invalid``, a failed condition and a Warning event."""
        return await generic.invalid_spec_notice(self.context, request)

    async def license_condition(self, request: LicenseConditionInput) -> LicenseConditionResult:
        """The license-wait condition on a waiting resource."""
        return await license_wait_condition.license_condition(self.context, request)

    async def flip_targets(self, request: FlipTargetsInput) -> FlipTargetsResult:
        """The resources a namespace flip concerns for one controller."""
        mapper = self.flip_mappers.get(request.controller)
        return await generic.flip_targets(self.context, request, mapper=mapper)

    async def cluster_step(self, request: ClusterStepInput) -> ClusterStepResult:
        """One step that changes a running Elasticsearch cluster (its controller's write)."""
        with writing_as(request.ref.controller):
            return await cluster_steps.run_cluster_step(self.context, request)

    async def undo_cluster_step(self, request: CompensateInput) -> CompensateResult:
        """The compensation of what a cluster step left in a cluster (an exclusion, a shutdown)."""
        return await cluster_steps.undo_cluster_step(self.context, request)

    async def signal_resources(self, request: SignalResourcesInput) -> SignalResourcesResult:
        """Signal-with-start the workflows of the refs."""
        return await generic.signal_resources(self.context, request)

    async def sweep_workflows(self, request: SweepWorkflowsInput) -> SweepWorkflowsResult:
        """Terminate the workflows of resources that are gone."""
        return await garbage.sweep_orphaned_workflows(self.context, request)

    async def sweep_secrets(self, request: SweepSecretsInput) -> SweepSecretsResult:
        """Delete the orphaned soft-owned Secrets."""
        return await garbage.sweep_orphaned_secrets(self.context, request)

    async def license_usage(self, request: LicenseUsageInput) -> LicenseUsageResult:
        """The licensing usage report."""
        return await telemetry.license_usage(self.context, request)

    async def telemetry_report(self, request: TelemetryReportInput) -> TelemetryReportResult:
        """The telemetry report."""
        return await telemetry.telemetry_report(self.context, request)

    def activities(self) -> dict[str, Activity]:
        """Its activities under their names of ``stackflow.models``."""
        bodies: dict[str, Callable[[Any], Awaitable[Any]]] = {
            ACT_SCOPE_CHECK: self.scope_check,
            ACT_LICENSE_CHECK: self.license_check,
            ACT_LICENSE_WAIT_NOTICE: self.license_wait_notice,
            ACT_INVALID_SPEC_NOTICE: self.invalid_spec_notice,
            ACT_LICENSE_CONDITION: self.license_condition,
            ACT_FLIP_TARGETS: self.flip_targets,
            ACT_CLUSTER_STEP: self.cluster_step,
            ACT_UNDO_CLUSTER_STEP: self.undo_cluster_step,
            ACT_SIGNAL_RESOURCES: self.signal_resources,
            ACT_SWEEP_WORKFLOWS: self.sweep_workflows,
            ACT_SWEEP_SECRETS: self.sweep_secrets,
            ACT_LICENSE_USAGE: self.license_usage,
            ACT_TELEMETRY_REPORT: self.telemetry_report,
        }
        return {name: _register(name, body, writer=None) for name, body in bodies.items()}


def _register(name: str, body: Callable[[Any], Awaitable[Any]], *, writer: str | None) -> Activity:
    """``body`` (a bound method of one input model) as the activity ``name``: its errors
    translated, its writes attributed to controller ``writer`` when there is one.

    Temporal reads an activity's input and result types from its annotations: the function it
    registers carries the method's.
    """
    translated = translated_errors(body)

    async def run(request: Any) -> Any:
        if writer is None:
            return await translated(request)
        with writing_as(writer):
            return await translated(request)

    hints = typing.get_type_hints(body)
    (parameter,) = inspect.signature(body).parameters
    run.__annotations__ = {"request": hints[parameter], "return": hints["return"]}
    run.__name__ = run.__qualname__ = getattr(body, "__name__", name)
    run.__doc__ = body.__doc__
    return activity.defn(name=name)(run)


def _check_binding(controller: Controller, family: ControllerActivities | None) -> None:
    """Raise ``BindingError`` unless ``family`` provides what the table row names."""
    if family is None:
        raise BindingError(f"controller {controller.name!r} has no activities implementation")
    missing = set(controller.compensations) - set(family.compensations)
    if missing:
        raise BindingError(
            f"controller {controller.name!r}: no implementation of {', '.join(sorted(missing))}"
        )
    custom_flip = controller.flip is FlipStrategy.CONTROLLER
    if custom_flip != (flip_targets_of(family) is not None):
        raise BindingError(
            f"controller {controller.name!r}: flip strategy {controller.flip.value} needs "
            f"{'a' if custom_flip else 'no'} flip_targets implementation"
        )


def build_activities(
    context: ControllerContext, *, families: Mapping[str, Family] = FAMILIES
) -> dict[str, Activity]:
    """Every activity a worker registers, by registered name, bound to ``context``.

    ``BindingError`` when a controller of ``context.controllers`` and its family disagree.
    """
    flip_mappers: dict[str, FlipTargets] = {}
    built: dict[str, Activity] = {}
    for controller in context.controllers:
        factory = families.get(controller.name)
        family = factory(context, controller) if factory is not None else None
        _check_binding(controller, family)
        assert family is not None  # checked above
        mapper = flip_targets_of(family)
        if mapper is not None:
            flip_mappers[controller.name] = mapper
        built.update(ControllerBinding(context, controller, family).activities())
    return {**EngineActivities(context, flip_mappers).activities(), **built}
