"""The controller-independent activities: scope check, license gate, notices, namespace flips.

Each takes the ``ControllerContext`` and one engine input model and returns one result model; the
registry wraps them as Temporal activities under the names in ``stackflow.models.engine``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client

from activities.binding import FlipTargets, Primary
from activities.context import ControllerContext
from activities.kinds import involved_reference
from activities.step import ScopedPrimary
from stackflow.controllers import Controller, FlipStrategy, Gate
from stackflow.kube import errors
from stackflow.kube.events import InvolvedObject
from stackflow.kube.writes import writing_as
from stackflow.licensing.model import EVENT_ACTION_LICENSE_CHECK, EVENT_REASON_INVALID_LICENSE
from stackflow.models.engine import (
    FlipTargetsInput,
    FlipTargetsResult,
    InvalidSpecNoticeInput,
    InvalidSpecNoticeResult,
    LicenseCheckInput,
    LicenseCheckResult,
    LicenseWaitNoticeInput,
    LicenseWaitNoticeResult,
    ResourceRef,
    ScopeCheckInput,
    ScopeCheckResult,
    SignalResourcesInput,
    SignalResourcesResult,
)
from stackflow.models.kinds import PODS
from stackflow.models.objects import view
from stackflow.stack.apps.status import merge_conditions
from stackflow.temporal import signal_with_start

__all__ = [
    "DYNAMIC_SELECTOR_UNLICENSED_MESSAGE",
    "REASON_VALIDATION",
    "controller_license_notice",
    "flip_targets",
    "invalid_spec_notice",
    "invalid_spec_status",
    "license_check",
    "license_notice",
    "license_wait_notice",
    "read_primary",
    "scope_check",
    "scope_check_reading_primary",
    "signal_resources",
    "unlicensed_status_patch",
]

DYNAMIC_SELECTOR_UNLICENSED_MESSAGE = (
    "Dynamic namespace selector is an enterprise feature. Enterprise features are disabled"
)
#: ECK's event reason when an enterprise-only resource (a StackConfigPolicy) is not reconciled.
REASON_RECONCILIATION_ERROR = "ReconciliationError"
#: ECK's event reason for a spec the reconcile refuses.
REASON_VALIDATION = "Validation"
RECONCILIATION_COMPLETE = "ReconciliationComplete"
SIGNAL_CONCURRENCY = 32
#: Read-patch rounds of an unlicensed status before a conflict fails the activity.
STATUS_CONFLICT_ATTEMPTS = 5


async def scope_check(context: ControllerContext, request: ScopeCheckInput) -> ScopeCheckResult:
    """Does the resource exist, is its namespace managed, and does reconciling it need a license?

    Existence is read unscoped: an object in a namespace that left scope still exists (its
    workflow goes ``OutOfScope``, it is not finalized). The informer cache answers when synced;
    a miss is confirmed by a GET, because this replica's cache may not have seen the ADDED event
    of an object just created (the trigger may come from the leader's informer) and "gone" runs
    the finalizers.
    """
    ref = request.ref
    gate = context.controllers.named(ref.controller).gate
    license_required = gate.requires_license(dynamic_scope=context.matcher.enabled)
    if not await _exists(context, ref):
        return ScopeCheckResult(
            exists=False,
            in_scope=context.matcher.name_matches(ref.namespace),
            license_required=license_required,
            reason=f"{ref.kind} {ref.namespace}/{ref.name} not found",
        )
    if not context.matcher.name_matches(ref.namespace):
        return ScopeCheckResult(
            exists=True,
            in_scope=False,
            license_required=license_required,
            reason=f"namespace {ref.namespace} is not managed (namespace selector)",
        )
    return ScopeCheckResult(exists=True, in_scope=True, license_required=license_required)


async def read_primary(context: ControllerContext, ref: ResourceRef) -> Primary | None:
    """The primary object ``ref`` names, read through the scoped client (None: not found, or its
    namespace is not managed). The one read of a reconcile's primary."""
    return await context.scoped.get_or_none(ref.resource, namespace=ref.namespace, name=ref.name)


async def scope_check_reading_primary(
    context: ControllerContext, request: ScopeCheckInput
) -> ScopedPrimary:
    """``scope_check``, reading the primary for the reconcile on the way: in a managed
    namespace one GET answers both whether it exists and what the reconcile is handed.

    When that GET finds nothing, ``scope_check`` tells gone from out of scope (the namespace
    may have just left it); should it still see the object (a cache behind a deletion), the
    reconcile is handed None and answers its family's "not found".
    """
    ref = request.ref
    if context.matcher.name_matches(ref.namespace):
        primary = await read_primary(context, ref)
        if primary is not None:
            gate = context.controllers.named(ref.controller).gate
            license_required = gate.requires_license(dynamic_scope=context.matcher.enabled)
            scope = ScopeCheckResult(exists=True, in_scope=True, license_required=license_required)
            return ScopedPrimary(scope=scope, primary=primary)
    return ScopedPrimary(scope=await scope_check(context, request))


async def _exists(context: ControllerContext, ref: ResourceRef) -> bool:
    """Whether the primary object exists, whatever its namespace's scope (cache first)."""
    resource = ref.resource
    if context.cache is not None:
        cached = context.cache.get(resource, namespace=ref.namespace, name=ref.name)
        if isinstance(cached, dict):
            return True
    try:
        await context.unscoped.get(resource, namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return False
    return True


async def license_check(
    context: ControllerContext, request: LicenseCheckInput
) -> LicenseCheckResult:
    """Whether enterprise features are enabled now (operator licenses re-read every time)."""
    verdict = await context.licenses.verdict()
    return LicenseCheckResult(licensed=verdict.licensed, reason=verdict.reason)


async def _operator_pod(context: ControllerContext) -> InvolvedObject:
    pod = await context.scoped.get_or_none(
        PODS, namespace=context.operator_namespace, name=context.pod_name
    )
    if pod is None:
        # Outside a cluster (dev) there is no Pod object: the event still names it, without uid.
        pod = {"metadata": {"namespace": context.operator_namespace, "name": context.pod_name}}
    return InvolvedObject.of({"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"]})


def license_notice(gate: Gate, kind: str) -> tuple[str, str, bool]:
    """The Warning a license wait records (pure): its reason, its message, and whether the
    operator Pod gets it too.

    The dynamic-scope gate is the operator's feature: ``InvalidLicense`` on the Pod and on the
    resource. An enterprise-only kind is the resource's own feature: ECK records
    ``ReconciliationError`` on the resource alone, naming the kind.
    """
    if gate is Gate.ENTERPRISE:
        message = f"{kind} is an enterprise feature. Enterprise features are disabled"
        return REASON_RECONCILIATION_ERROR, message, False
    return EVENT_REASON_INVALID_LICENSE, DYNAMIC_SELECTOR_UNLICENSED_MESSAGE, True


def controller_license_notice(controller: Controller | None, kind: str) -> tuple[str, str, bool]:
    """``license_notice`` for a controller row: its own ``unlicensed`` notice when it has one
    (on the resource alone), else its gate's (pure)."""
    if controller is not None and controller.unlicensed is not None:
        return controller.unlicensed.reason, controller.unlicensed.message, False
    gate = controller.gate if controller is not None else Gate.DYNAMIC_SCOPE
    return license_notice(gate, kind)


def unlicensed_status_patch(
    obj: Mapping[str, Any], wanted: Sequence[Mapping[str, Any]], *, now: datetime
) -> dict[str, Any] | None:
    """The ``/status`` merge patch giving ``obj`` the ``wanted`` conditions (merged by type,
    each keeping its transition time while its status holds, the others as read), with the
    object's resourceVersion; None when it already has them (pure)."""
    current: Sequence[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    types = {str(condition["type"]) for condition in wanted}
    merged = merge_conditions(current, wanted, now=now) + [
        dict(condition) for condition in current if str(condition.get("type")) not in types
    ]
    if merged == [dict(condition) for condition in current]:
        return None
    patch: dict[str, Any] = {"status": {"conditions": merged}}
    resource_version = view(obj).resource_version
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    return patch


async def _write_unlicensed_status(
    context: ControllerContext, ref: ResourceRef, conditions: Sequence[Mapping[str, Any]]
) -> None:
    """Give the waiting resource its controller's unlicensed conditions (a conflict: read again)."""
    for attempt in range(1, STATUS_CONFLICT_ATTEMPTS + 1):
        obj = await context.scoped.get_or_none(ref.resource, namespace=ref.namespace, name=ref.name)
        if obj is None:
            return
        patch = unlicensed_status_patch(obj, conditions, now=context.clock())
        if patch is None:
            return
        try:
            with writing_as(ref.controller):
                await context.scoped.patch_status(
                    ref.resource, patch, namespace=ref.namespace, name=ref.name
                )
        except errors.NotFound:
            return
        except errors.Conflict:
            if attempt == STATUS_CONFLICT_ATTEMPTS:
                raise
            continue
        return


async def license_wait_notice(
    context: ControllerContext, request: LicenseWaitNoticeInput
) -> LicenseWaitNoticeResult:
    """The Warning of ``controller_license_notice`` (action ``LicenseCheck``): ``InvalidLicense``
    on the operator Pod and on the resource, ``ReconciliationError`` on an enterprise-only
    resource, or the controller's own notice (and its status conditions) on the resource."""
    controller = context.controllers.get(request.ref.controller)
    reason, message, on_pod = controller_license_notice(controller, request.ref.kind)
    recorded = 0
    if context.pod_name and on_pod:
        await context.events.warning(
            await _operator_pod(context),
            reason=reason,
            message=message,
            action=EVENT_ACTION_LICENSE_CHECK,
        )
        recorded += 1
    obj = await context.scoped.get_or_none(
        request.ref.resource, namespace=request.ref.namespace, name=request.ref.name
    )
    if obj is not None:
        await context.events.warning(
            InvolvedObject.of(involved_reference(request.ref, obj)),
            reason=reason,
            message=message,
            action=EVENT_ACTION_LICENSE_CHECK,
        )
        recorded += 1
    notice = controller.unlicensed if controller is not None else None
    if obj is not None and notice is not None and notice.conditions is not None:
        await _write_unlicensed_status(context, request.ref, notice.conditions())
    return LicenseWaitNoticeResult(events=recorded)


def invalid_spec_status(obj: Mapping[str, Any], *, message: str, now: datetime) -> dict[str, Any]:
    """The status merge patch for an invalid spec: phase ``Invalid`` and a failed condition (pure)."""
    status = obj.get("status") or {}
    conditions = [
        dict(condition)
        for condition in status.get("conditions") or []
        if condition.get("type") != RECONCILIATION_COMPLETE
    ]
    previous = next(
        (
            condition
            for condition in status.get("conditions") or []
            if condition.get("type") == RECONCILIATION_COMPLETE
        ),
        None,
    )
    transition = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if previous is not None and previous.get("status") == "False":
        transition = str(previous.get("lastTransitionTime") or transition)
    conditions.append(
        {
            "type": RECONCILIATION_COMPLETE,
            "status": "False",
            "lastTransitionTime": transition,
            "message": message,
        }
    )
    patch: dict[str, Any] = {"phase": "Invalid", "conditions": conditions}
    generation = view(obj).generation
    if generation is not None:
        patch["observedGeneration"] = generation
    return {"status": patch}


async def invalid_spec_notice(
    context: ControllerContext, request: InvalidSpecNoticeInput
) -> InvalidSpecNoticeResult:
    """Phase ``Invalid``, a failed ``ReconciliationComplete`` condition and a Warning event."""
    ref = request.ref
    obj = await context.scoped.get_or_none(ref.resource, namespace=ref.namespace, name=ref.name)
    if obj is None:
        return InvalidSpecNoticeResult(recorded=False)
    await context.events.warning(
        InvolvedObject.of(involved_reference(ref, obj)),
        reason=REASON_VALIDATION,
        message=request.message,
    )
    patch = invalid_spec_status(obj, message=request.message, now=context.clock())
    if {**(obj.get("status") or {}), **patch["status"]} == (obj.get("status") or {}):
        return InvalidSpecNoticeResult(recorded=False)
    try:
        await context.scoped.patch_status(
            ref.resource, patch, namespace=ref.namespace, name=ref.name
        )
    except errors.NotFound:
        return InvalidSpecNoticeResult(recorded=False)
    return InvalidSpecNoticeResult(recorded=True)


async def namespace_objects(
    context: ControllerContext, controller: Controller, namespace: str
) -> list[Mapping[str, Any]]:
    """ECK's ``ReconcileObjectsInNamespace``: every object of the kind there, unscoped."""
    listed = await context.unscoped.list(controller.primary, namespace=namespace)
    return list(listed["items"])


async def flip_targets(
    context: ControllerContext, request: FlipTargetsInput, *, mapper: FlipTargets | None
) -> FlipTargetsResult:
    """The resources a namespace flip concerns for one controller, by its flip strategy.

    ``mapper`` is the controller's own flip mapper, bound to its family (its strategy is
    ``CONTROLLER``).
    """
    controller = context.controllers.named(request.controller)
    if controller.flip is FlipStrategy.NAMESPACE_OBJECTS or mapper is None:
        objects = await namespace_objects(context, controller, request.namespace)
    else:
        objects = await mapper(request.namespace, request.direction)
    refs = {controller.ref_of(obj) for obj in objects}
    ordered = sorted(refs, key=lambda ref: (ref.namespace, ref.name))
    return FlipTargetsResult(refs=tuple(ordered))


def _temporal_client(context: ControllerContext) -> Client:
    if context.temporal_client is not None:
        return context.temporal_client
    return activity.client()


async def signal_resources(
    context: ControllerContext, request: SignalResourcesInput
) -> SignalResourcesResult:
    """Signal-with-start the ``ResourceWorkflow`` of every ref with the trigger.

    At most ``SIGNAL_CONCURRENCY`` calls are in flight: one after another, a flip of a thousand
    resources waits a thousand round trips; all at once, it floods the frontend. Progress (refs
    signalled so far) is heartbeated so a slow fan-out shows in the UI and stays alive under a
    heartbeat timeout.
    """
    client = _temporal_client(context)
    limit = asyncio.Semaphore(SIGNAL_CONCURRENCY)
    heartbeating = activity.in_activity()
    signalled = 0

    async def signal(ref: ResourceRef) -> None:
        nonlocal signalled
        async with limit:
            await signal_with_start(
                client,
                task_queue=context.task_queue,
                ref=ref,
                trigger=request.trigger,
                local_step=context.controllers.named(ref.controller).local_step,
            )
        signalled += 1
        if heartbeating:
            # The SDK throttles heartbeats, so one per ref costs nothing on the wire.
            activity.heartbeat(signalled)

    await asyncio.gather(*(signal(ref) for ref in request.refs))
    return SignalResourcesResult(signalled=signalled)
