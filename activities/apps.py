"""One reconcile for every stack application (Kibana, APM Server, Enterprise Search, Beat, Agent,
Logstash, Elastic Maps Server, Package Registry), driven by ``stackflow.stack.apps.APP_KINDS``.

Reconcile reads the object through the scoped client, validates it (``InvalidSpec`` when the spec
cannot be reconciled), reads its current children and the Secrets it references, builds every child
with the pure builder, applies them idempotently, removes a workload of another kind left by a
spec change, and writes the computed status through ``/status``. Until the application is green it
asks to be reconciled again. The pure helpers here (owner mapper, references, resources) also feed
the controller table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.apply import ApplyOutcome, apply_object, delete_soft_owned_secrets
from activities.binding import Family, FamilyActivities, Primary
from activities.building import build_off_loop
from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from activities.unknown_fields import warn_unknown_fields
from stackflow.controllers.apps import APP_CONTROLLER_NAMES, app_references
from stackflow.kube import errors
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import (
    CONFIGMAPS,
    DAEMONSETS,
    DEPLOYMENTS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.apps import (
    AppKind,
    app_kind,
    application_status,
    desired_children,
    validate_application,
)

__all__ = [
    "FAMILIES",
    "NOT_GREEN_REQUEUE_SECONDS",
    "ApplicationActivities",
    "child_resource",
]

#: How soon an application that is not green yet is looked at again (pods starting).
NOT_GREEN_REQUEUE_SECONDS = 10.0

WORKLOAD_RESOURCES: tuple[Kind, ...] = (DEPLOYMENTS, DAEMONSETS, STATEFULSETS)
#: The kinds the builder returns, by (apiVersion, kind).
_CHILD_RESOURCES: Mapping[tuple[str, str], Kind] = {
    (resource.api_version, resource.kind): resource
    for resource in (SECRETS, SERVICES, CONFIGMAPS, *WORKLOAD_RESOURCES)
}
#: Children listed to give the builder what exists now (certificates and generated keys reused).
_EXISTING_RESOURCES: tuple[Kind, ...] = (SECRETS, SERVICES, CONFIGMAPS)


def child_resource(child: Mapping[str, Any]) -> Kind:
    """The resource of a child manifest the builder returned; KeyError for an unexpected kind."""
    return _CHILD_RESOURCES[(str(child.get("apiVersion")), str(child.get("kind")))]


def _selector(kind: AppKind, name: str) -> str:
    return equality_selector_string({kind.name_label: name})


async def _existing_objects(
    context: ControllerContext, kind: AppKind, obj: Mapping[str, Any]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The application's current children and the Secrets it references, by (kind, name)."""
    metadata = obj["metadata"]
    namespace, name = str(metadata["namespace"]), str(metadata["name"])
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in _EXISTING_RESOURCES:
        listed = await context.scoped.list(
            resource, namespace=namespace, label_selector=_selector(kind, name)
        )
        for item in listed["items"]:
            existing[(resource.kind, str(item["metadata"]["name"]))] = item
    for reference in app_references(obj):
        key = ("Secret", reference.name)
        if key in existing:
            continue
        try:
            existing[key] = await context.scoped.get(
                SECRETS, namespace=reference.namespace, name=reference.name
            )
        except errors.NotFound:
            continue
    return existing


async def _remove_replaced_workloads(
    context: ControllerContext, *, kind: AppKind, workload: Mapping[str, Any]
) -> int:
    """Delete this application's workload of another kind (Beat ``daemonSet`` → ``deployment``)."""
    metadata = workload["metadata"]
    namespace, name = str(metadata["namespace"]), str(metadata["name"])
    owner = str((metadata.get("labels") or {}).get(kind.name_label) or "")
    deleted = 0
    for resource in WORKLOAD_RESOURCES:
        if resource.kind == workload.get("kind"):
            continue
        try:
            current = await context.scoped.get(resource, namespace=namespace, name=name)
        except errors.NotFound:
            continue
        if view(current).labels.get(kind.name_label) != owner:
            continue  # not ours: never touch a workload the operator did not make
        try:
            await context.scoped.delete(resource, namespace=namespace, name=name)
        except errors.NotFound:
            continue
        deleted += 1
    return deleted


class ApplicationActivities(FamilyActivities):
    """An application controller's activities (Kibana, APM Server, ...), bound to the process's
    ``ControllerContext``; one class for every application kind."""

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Bring one application's children and status in line with its spec."""
        context, obj = self.context, primary
        ref = request.ref
        kind = app_kind(ref.kind)
        problems = validate_application(kind.kind, obj)
        if problems:
            raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))
        await warn_unknown_fields(context, ref, obj)
        existing = await _existing_objects(context, kind, obj)
        now = context.clock()
        children = await build_off_loop(
            f"{kind.kind} {ref.namespace}/{ref.name}",
            lambda: desired_children(kind.kind, obj, existing=existing, now=now),
        )
        written = 0
        workload: dict[str, Any] | None = None
        for child in children:
            applied = await apply_object(context.scoped, child_resource(child), child)
            if applied.outcome is not ApplyOutcome.UNCHANGED:
                written += 1
            if child_resource(child) in WORKLOAD_RESOURCES:
                workload = applied.obj
        if workload is not None:
            written += await _remove_replaced_workloads(context, kind=kind, workload=workload)
        pods = await context.scoped.list(
            PODS, namespace=ref.namespace, label_selector=_selector(kind, ref.name)
        )
        status = application_status(
            kind.kind, obj, workload=workload, pods=pods["items"], now=context.clock()
        )
        current = obj.get("status") or {}
        # Only the fields that changed: the association controllers write their own status fields
        # concurrently, and re-sending a stale copy of them would undo their work.
        changed = {key: value for key, value in status.items() if current.get(key) != value}
        if changed:
            await context.scoped.patch_status(
                ref.resource, {"status": changed}, namespace=ref.namespace, name=ref.name
            )
        green = status.get("health") == "green"
        return ReconcileResult(
            phase=Phase.READY if green else Phase.RECONCILING,
            message=(
                f"health {status.get('health')}, {status.get('availableNodes', 0)} available, "
                f"{written} objects written"
            ),
            requeue_after_seconds=None if green else NOT_GREEN_REQUEUE_SECONDS,
            observed_generation=view(obj).generation,
            referenced=tuple(app_references(obj)),
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """Delete the soft-owned Secrets of a deleted application (``-http-certs-public``); every
        other child goes with its ownerReference.

        Listed unscoped: the application is gone (the scope check read it unscoped), and its
        soft-owned Secrets are the operator's own, deleted whatever the namespace's scope (as ECK).
        """
        return FinalizeResult(
            deleted=await delete_soft_owned_secrets(self.context.unscoped, request.ref)
        )


FAMILIES: Mapping[str, Family] = dict.fromkeys(APP_CONTROLLER_NAMES.values(), ApplicationActivities)
