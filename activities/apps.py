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

from collections.abc import Callable, Mapping
from typing import Any

from activities.apply import ApplyOutcome, apply_object, delete_soft_owned_secrets
from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from activities.kinds import CONFIGMAPS, PODS, SECRETS, SERVICES, resource_of
from stackflow.api.kinds import kind_info
from stackflow.kube import errors
from stackflow.kube.resources import ResourceRef as KubeResource
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    ObjectKey,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.stack.apps import (
    AppKind,
    app_kind,
    application_status,
    desired_children,
    validate_application,
)
from stackflow.stack.apps.associations import (
    confs_from_annotations,
    parse_confs,
    referenced_secret_names,
)

__all__ = [
    "DAEMONSETS",
    "DEPLOYMENTS",
    "NOT_GREEN_REQUEUE_SECONDS",
    "STATEFULSETS",
    "app_owner",
    "app_references",
    "app_resource",
    "child_resource",
    "finalize",
    "reconcile",
]

#: How soon an application that is not green yet is looked at again (pods starting).
NOT_GREEN_REQUEUE_SECONDS = 10.0

DEPLOYMENTS = KubeResource("apps", "v1", "deployments", namespaced=True, kind="Deployment")
DAEMONSETS = KubeResource("apps", "v1", "daemonsets", namespaced=True, kind="DaemonSet")
STATEFULSETS = KubeResource("apps", "v1", "statefulsets", namespaced=True, kind="StatefulSet")
WORKLOAD_RESOURCES: tuple[KubeResource, ...] = (DEPLOYMENTS, DAEMONSETS, STATEFULSETS)
#: The kinds the builder returns, by (apiVersion, kind).
_CHILD_RESOURCES: Mapping[tuple[str, str], KubeResource] = {
    (resource.api_version, resource.kind): resource
    for resource in (SECRETS, SERVICES, CONFIGMAPS, *WORKLOAD_RESOURCES)
}
#: Children listed to give the builder what exists now (certificates and generated keys reused).
_EXISTING_RESOURCES: tuple[KubeResource, ...] = (SECRETS, SERVICES, CONFIGMAPS)


def app_resource(kind: str) -> KubeResource:
    """The Kubernetes resource of an application kind (its storage version)."""
    info = kind_info(app_kind(kind).kind)
    return KubeResource(
        info.group, info.storage_version, info.plural, namespaced=True, kind=info.kind
    )


def child_resource(child: Mapping[str, Any]) -> KubeResource:
    """The resource of a child manifest the builder returned; KeyError for an unexpected kind."""
    return _CHILD_RESOURCES[(str(child.get("apiVersion")), str(child.get("kind")))]


def _selector(kind: AppKind, name: str) -> str:
    return f"{kind.name_label}={name}"


OwnerMapper = Callable[[Mapping[str, Any]], tuple[str, str] | None]


def app_owner(kind: str) -> OwnerMapper:
    """A pure owner mapper for ``kind``'s children: their ``<prefix>/name`` label and namespace."""
    label = app_kind(kind).name_label

    def owner(child: Mapping[str, Any]) -> tuple[str, str] | None:
        metadata = child.get("metadata") or {}
        name = (metadata.get("labels") or {}).get(label)
        namespace = metadata.get("namespace")
        return (str(namespace), str(name)) if name and namespace else None

    return owner


def _spec_secret_names(spec: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for field in ("configRef", "pipelinesRef"):
        value = (spec.get(field) or {}).get("secretName")
        if value:
            names.add(str(value))
    certificate = (((spec.get("http") or {}).get("tls") or {}).get("certificate") or {}).get(
        "secretName"
    )
    if certificate:
        names.add(str(certificate))
    for entry in spec.get("secureSettings") or []:
        if isinstance(entry, Mapping) and entry.get("secretName"):
            names.add(str(entry["secretName"]))
    return names


def app_references(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """The Secrets an application depends on: spec references and its association Secrets (pure).

    Association Secrets (credentials, CA copies, external targets' Secrets) are read from the conf
    annotations: their content goes into the config hash, so a change must roll the pods.
    """
    metadata = obj.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    names = _spec_secret_names(obj.get("spec") or {})
    names.update(referenced_secret_names(parse_confs(confs_from_annotations(obj))))
    return [ObjectKey(kind="Secret", namespace=namespace, name=name) for name in sorted(names)]


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
        if ((current.get("metadata") or {}).get("labels") or {}).get(kind.name_label) != owner:
            continue  # not ours: never touch a workload the operator did not make
        try:
            await context.scoped.delete(resource, namespace=namespace, name=name)
        except errors.NotFound:
            continue
        deleted += 1
    return deleted


async def reconcile(context: ControllerContext, request: ReconcileInput) -> ReconcileResult:
    """Bring one application's children and status in line with its spec."""
    ref = request.ref
    kind = app_kind(ref.kind)
    try:
        obj = await context.scoped.get(resource_of(ref), namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return ReconcileResult(phase=Phase.RECONCILING, message=f"{ref.kind} not found")
    problems = validate_application(kind.kind, obj)
    if problems:
        raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))
    existing = await _existing_objects(context, kind, obj)
    try:
        children = desired_children(kind.kind, obj, existing=existing, now=context.clock())
    except (ValueError, KeyError) as error:
        raise InvalidSpecError(str(error)) from error
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
            resource_of(ref), {"status": changed}, namespace=ref.namespace, name=ref.name
        )
    green = status.get("health") == "green"
    return ReconcileResult(
        phase=Phase.READY if green else Phase.RECONCILING,
        message=(
            f"health {status.get('health')}, {status.get('availableNodes', 0)} available, "
            f"{written} objects written"
        ),
        requeue_after_seconds=None if green else NOT_GREEN_REQUEUE_SECONDS,
        observed_generation=(obj.get("metadata") or {}).get("generation"),
        referenced=tuple(app_references(obj)),
    )


async def finalize(context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
    """Delete the soft-owned Secrets of a deleted application (``-http-certs-public``).

    Read through the scoped client, so nothing is deleted in a namespace that is out of scope;
    every other child goes with its ownerReference.
    """
    return FinalizeResult(deleted=await delete_soft_owned_secrets(context.scoped, request.ref))
