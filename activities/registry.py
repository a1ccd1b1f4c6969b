"""``build_activities(context)``: the controller table and the generic steps as Temporal activities.

Each activity is a closure over the process's ``ControllerContext``, registered under its contract
name with ``@activity.defn(name=...)``: the generic ones of ``stackflow.models.engine`` and, per
controller, ``{name}.reconcile``, ``{name}.finalize`` and each compensation name. Every body is
wrapped so that Kubernetes and Elasticsearch errors leave it as ``ApplicationError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from temporalio import activity

from activities import generic
from activities.context import ControllerContext
from activities.errors import translated_errors
from stackflow.controllers import CONTROLLERS, Compensation, Controller
from stackflow.models.engine import (
    ACT_FLIP_TARGETS,
    ACT_INVALID_SPEC_NOTICE,
    ACT_LICENSE_CHECK,
    ACT_LICENSE_WAIT_NOTICE,
    ACT_SCOPE_CHECK,
    ACT_SIGNAL_RESOURCES,
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
    ScopeCheckInput,
    ScopeCheckResult,
    SignalResourcesInput,
    SignalResourcesResult,
    finalize_activity,
    reconcile_activity,
)

__all__ = ["activity_names", "build_activities"]

_In = TypeVar("_In")
_Out = TypeVar("_Out")


def _generic_activities(context: ControllerContext) -> list[Callable[..., Any]]:
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

    @activity.defn(name=ACT_FLIP_TARGETS)
    @translated_errors
    async def flip_targets(request: FlipTargetsInput) -> FlipTargetsResult:
        return await generic.flip_targets(context, request)

    @activity.defn(name=ACT_SIGNAL_RESOURCES)
    @translated_errors
    async def signal_resources(request: SignalResourcesInput) -> SignalResourcesResult:
        return await generic.signal_resources(context, request)

    return [
        scope_check,
        license_check,
        license_wait_notice,
        invalid_spec_notice,
        flip_targets,
        signal_resources,
    ]


def _reconcile(context: ControllerContext, controller: Controller) -> Callable[..., Any]:
    @activity.defn(name=reconcile_activity(controller.name))
    @translated_errors
    async def reconcile(request: ReconcileInput) -> ReconcileResult:
        return await controller.reconcile(context, request)

    return reconcile


def _finalize(context: ControllerContext, controller: Controller) -> Callable[..., Any]:
    @activity.defn(name=finalize_activity(controller.name))
    @translated_errors
    async def finalize(request: FinalizeInput) -> FinalizeResult:
        return await controller.finalize(context, request)

    return finalize


def _compensation(
    context: ControllerContext, name: str, compensate: Compensation
) -> Callable[..., Any]:
    @activity.defn(name=name)
    @translated_errors
    async def run(request: CompensateInput) -> CompensateResult:
        return await compensate(context, request)

    return run


def build_activities(
    context: ControllerContext, *, controllers: Sequence[Controller] = CONTROLLERS
) -> list[Callable[..., Awaitable[Any]]]:
    """Every activity a worker registers, bound to ``context``."""
    built: list[Callable[..., Awaitable[Any]]] = list(_generic_activities(context))
    for controller in controllers:
        built.append(_reconcile(context, controller))
        built.append(_finalize(context, controller))
        for name, compensate in controller.compensations.items():
            built.append(_compensation(context, name, compensate))
    return built


def activity_names(activities: Sequence[Callable[..., Any]]) -> list[str]:
    """The registered names of built activities (for logs and tests)."""
    names: list[str] = []
    for function in activities:
        definition = activity._Definition.from_callable(function)
        if definition is not None and definition.name is not None:
            names.append(definition.name)
    return names
