"""``build_activities(context)``: the controller table's activities, bound to their implementations.

Each activity is a closure over the process's ``ControllerContext``, registered under its contract
name with ``@activity.defn(name=...)``: the generic ones of ``stackflow.models.engine`` and, per
controller of ``context.controllers``, the names its table row lists, implemented by the
``IMPLEMENTATIONS`` of its family's activities module. Every body is wrapped so that Kubernetes
and Elasticsearch errors leave it as ``ApplicationError``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from temporalio import activity

from activities import (
    apps,
    associations,
    autoops,
    autoscaler,
    cluster_steps,
    elasticsearch,
    garbage,
    generic,
    license,
    license_condition,
    remoteclusters,
    stackconfigpolicy,
    telemetry,
    trial,
)
from activities.binding import Compensation, ControllerActivities, FlipTargets
from activities.context import ControllerContext
from activities.errors import translated_errors
from activities.step import reconcile_step
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
)
from stackflow.stack.associations.table import ASSOCIATIONS
from workflows.decisions import ACT_LICENSE_CONDITION, LicenseConditionInput, LicenseConditionResult

__all__ = ["IMPLEMENTATIONS", "BindingError", "build_activities"]

Activity = Callable[..., Awaitable[Any]]

#: Every controller implementation of this package, by controller name.
IMPLEMENTATIONS: Mapping[str, ControllerActivities] = {
    **elasticsearch.IMPLEMENTATIONS,
    **license.IMPLEMENTATIONS,
    **trial.IMPLEMENTATIONS,
    **apps.IMPLEMENTATIONS,
    **associations.IMPLEMENTATIONS,
    **stackconfigpolicy.IMPLEMENTATIONS,
    **autoops.IMPLEMENTATIONS,
    **autoscaler.IMPLEMENTATIONS,
    **remoteclusters.IMPLEMENTATIONS,
}


#: Compensation names that earlier versions recorded in workflow state, for in-process registries
#: that no longer exist. A run that still holds such a step must be able to complete it.
RETIRED_COMPENSATIONS = (
    "elasticsearch.release_observers",
    *(f"{association.name}.release_watches" for association in ASSOCIATIONS),
)


async def _nothing_to_release(request: CompensateInput) -> CompensateResult:
    return CompensateResult(released=False)


def _retired_compensations(context: ControllerContext) -> dict[str, Activity]:
    """Each retired compensation name, registered as an activity that releases nothing."""
    return {
        name: activity.defn(name=name)(_copy(_nothing_to_release))
        for name in RETIRED_COMPENSATIONS
        if name.partition(".")[0] in context.controllers
    }


def _copy(function: Callable[[CompensateInput], Awaitable[CompensateResult]]) -> Activity:
    """A fresh function object: each registered name needs its own activity definition."""

    async def run(request: CompensateInput) -> CompensateResult:
        return await function(request)

    return run


class BindingError(ValueError):
    """The controller table and the implementations disagree (a wiring bug: fail at start-up)."""


def _generic_activities(
    context: ControllerContext, flip_mappers: Mapping[str, FlipTargets]
) -> dict[str, Activity]:
    @activity.defn(name=ACT_SCOPE_CHECK)
    @translated_errors
    async def scope_check(request: ScopeCheckInput) -> ScopeCheckResult:
        return await generic.scope_check(context, request)

    @activity.defn(name=ACT_LICENSE_CHECK)
    @translated_errors
    async def license_check(request: LicenseCheckInput) -> LicenseCheckResult:
        return await generic.license_check(context, request)

    @activity.defn(name=ACT_LICENSE_WAIT_NOTICE)
    @translated_errors
    async def license_wait_notice(request: LicenseWaitNoticeInput) -> LicenseWaitNoticeResult:
        return await generic.license_wait_notice(context, request)

    @activity.defn(name=ACT_INVALID_SPEC_NOTICE)
    @translated_errors
    async def invalid_spec_notice(request: InvalidSpecNoticeInput) -> InvalidSpecNoticeResult:
        return await generic.invalid_spec_notice(context, request)

    @activity.defn(name=ACT_LICENSE_CONDITION)
    @translated_errors
    async def license_wait_condition(request: LicenseConditionInput) -> LicenseConditionResult:
        return await license_condition.license_condition(context, request)

    @activity.defn(name=ACT_FLIP_TARGETS)
    @translated_errors
    async def flip_targets(request: FlipTargetsInput) -> FlipTargetsResult:
        mapper = flip_mappers.get(request.controller)
        return await generic.flip_targets(context, request, mapper=mapper)

    @activity.defn(name=ACT_CLUSTER_STEP)
    @translated_errors
    async def cluster_step(request: ClusterStepInput) -> ClusterStepResult:
        with writing_as(request.ref.controller):
            return await cluster_steps.run_cluster_step(context, request)

    @activity.defn(name=ACT_SIGNAL_RESOURCES)
    @translated_errors
    async def signal_resources(request: SignalResourcesInput) -> SignalResourcesResult:
        return await generic.signal_resources(context, request)

    return {
        ACT_SCOPE_CHECK: scope_check,
        ACT_LICENSE_CHECK: license_check,
        ACT_LICENSE_WAIT_NOTICE: license_wait_notice,
        ACT_INVALID_SPEC_NOTICE: invalid_spec_notice,
        ACT_LICENSE_CONDITION: license_wait_condition,
        ACT_FLIP_TARGETS: flip_targets,
        ACT_SIGNAL_RESOURCES: signal_resources,
        ACT_CLUSTER_STEP: cluster_step,
    }


def _controller_activities(
    context: ControllerContext, controller: Controller, implementation: ControllerActivities
) -> dict[str, Activity]:
    # Every write of a controller's activities is attributed to it, so the watchers do not wake
    # it for its own writes (``stackflow.kube.writes``).
    @activity.defn(name=controller.reconcile_activity)
    @translated_errors
    async def reconcile(request: ReconcileInput) -> ReconcileResult:
        with writing_as(controller.name):
            return await implementation.reconcile(context, request)

    @activity.defn(name=controller.finalize_activity)
    @translated_errors
    async def finalize(request: FinalizeInput) -> FinalizeResult:
        with writing_as(controller.name):
            return await implementation.finalize(context, request)

    @activity.defn(name=controller.reconcile_step_activity)
    @translated_errors
    async def step(request: ReconcileStepInput) -> ReconcileStepResult:
        with writing_as(controller.name):
            return await reconcile_step(
                request,
                scope_check=functools.partial(generic.scope_check, context),
                license_check=functools.partial(generic.license_check, context),
                reconcile=functools.partial(implementation.reconcile, context),
            )

    built: dict[str, Activity] = {
        controller.reconcile_activity: reconcile,
        controller.reconcile_step_activity: step,
        controller.finalize_activity: finalize,
    }
    for name in controller.compensations:
        built[name] = _compensation(context, name, implementation.compensations[name], controller)
    return built


def _compensation(
    context: ControllerContext, name: str, compensate: Compensation, controller: Controller
) -> Activity:
    @activity.defn(name=name)
    @translated_errors
    async def run(request: CompensateInput) -> CompensateResult:
        with writing_as(controller.name):
            return await compensate(context, request)

    return run


def _check_binding(controller: Controller, implementation: ControllerActivities | None) -> None:
    """Raise ``BindingError`` unless ``implementation`` provides what the table row names."""
    if implementation is None:
        raise BindingError(f"controller {controller.name!r} has no activities implementation")
    missing = set(controller.compensations) - set(implementation.compensations)
    if missing:
        raise BindingError(
            f"controller {controller.name!r}: no implementation of {', '.join(sorted(missing))}"
        )
    custom_flip = controller.flip is FlipStrategy.CONTROLLER
    if custom_flip != (implementation.flip_targets is not None):
        raise BindingError(
            f"controller {controller.name!r}: flip strategy {controller.flip.value} needs "
            f"{'a' if custom_flip else 'no'} flip_targets implementation"
        )


def build_activities(
    context: ControllerContext,
    *,
    implementations: Mapping[str, ControllerActivities] = IMPLEMENTATIONS,
) -> dict[str, Activity]:
    """Every activity a worker registers, by registered name, bound to ``context``.

    ``BindingError`` when a controller of ``context.controllers`` lacks an implementation.
    """
    flip_mappers: dict[str, FlipTargets] = {}
    built: dict[str, Activity] = {}
    for controller in context.controllers:
        implementation = implementations.get(controller.name)
        _check_binding(controller, implementation)
        assert implementation is not None  # checked above
        if implementation.flip_targets is not None:
            flip_mappers[controller.name] = implementation.flip_targets
        built.update(_controller_activities(context, controller, implementation))
    return {
        **_retired_compensations(context),
        **_generic_activities(context, flip_mappers),
        **garbage.build_garbage_activities(context),
        **telemetry.report_activities(context),
        **built,
    }
