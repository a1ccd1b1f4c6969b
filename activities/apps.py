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
from stackflow.api.kinds import kind_info
from stackflow.config import OperatorConfig
from stackflow.controllers.apps import APP_CONTROLLER_NAMES, app_references
from stackflow.elastic.factory import runs_in_cluster
from stackflow.kube import errors
from stackflow.kube.events import (
    EVENT_ACTION_ASSOCIATION_CONFIGURATION,
    EVENT_ASSOCIATION_ERROR,
    InvolvedObject,
)
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
from stackflow.stack.apps.fleet import (
    FleetAnswer,
    FleetGate,
    fleet_gate,
    fleet_server_reference,
    kibana_reference,
)
from stackflow.stack.apps.status import associations_configured, unconfigured_association

__all__ = [
    "FAMILIES",
    "NOT_GREEN_REQUEUE_SECONDS",
    "ApplicationActivities",
    "child_resource",
    "fleet_reachable",
]

#: How soon an application that is not green yet is looked at again (pods starting).
NOT_GREEN_REQUEUE_SECONDS = 10.0

KIBANA = kind_info("Kibana").resource
AGENT = kind_info("Agent").resource
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
        if reference.kind != "Secret":
            continue  # a Fleet-mode Agent's Kibana and Fleet Server: read by the Fleet gate
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


def fleet_reachable(config: OperatorConfig, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the operator could reach a Kibana's Fleet API: Kibana's address is its in-cluster
    Service name, dialled only with in-cluster networking (the ``in-cluster-networking`` key;
    unset, on exactly when the operator runs in a Pod), as the Elasticsearch clients."""
    dial = config.in_cluster_networking
    return runs_in_cluster(environ) if dial is None else dial


async def _fleet_gate(context: ControllerContext, obj: Mapping[str, Any]) -> FleetGate:
    """The Fleet gate of an application: the Kibana of a Fleet-mode Agent read (its health),
    Fleet's answer from what the operator can reach (it has no Fleet API client: in reach, nothing
    is asked; out of reach, Fleet did not answer, as a client could not dial it)."""
    kibana = kibana_reference(obj)
    if kibana is None:
        return FleetGate(build_workload=True)
    namespace, name = kibana
    found = await context.scoped.get_or_none(KIBANA, namespace=namespace, name=name)
    kibana_status = (found or {}).get("status") or {}
    health = kibana_status.get("health")
    # ECK's version check: each association's conf carries the version its target reports in its
    # status (a Fleet Server without Pods reports none); Stackflow's confs carry the spec's.
    reported = bool(kibana_status.get("version"))
    fleet_server = fleet_server_reference(obj)
    if fleet_server is not None:
        server = await context.scoped.get_or_none(
            AGENT, namespace=fleet_server[0], name=fleet_server[1]
        )
        reported = reported and bool(((server or {}).get("status") or {}).get("version"))
    reachable = fleet_reachable(context.config)
    return fleet_gate(
        obj,
        associations_configured=reported and associations_configured(obj),
        kibana_health=None if health is None else str(health),
        fleet=FleetAnswer.NOT_ASKED if reachable else FleetAnswer.UNANSWERED,
        fleet_error=(
            f"Kibana {namespace}/{name}'s Fleet API is at an in-cluster address "
            "and in-cluster networking is off"
        ),
    )


def _association_gate(obj: Mapping[str, Any]) -> FleetGate | None:
    """ECK's ``IsConfiguredIfSet``: an application with an association its controller has not
    configured (not yet, or not any more: its target left scope or is gone) gets no workload
    write, made or changed, and ECK's Warning; None when every association is configured.

    So the workload is written once, configured, and a target that leaves scope leaves the
    running application as it was instead of rolling it without its backend.
    """
    missing = unconfigured_association(obj)
    if missing is None:
        return None
    return FleetGate(
        build_workload=False,
        reason=EVENT_ASSOCIATION_ERROR,
        message=f"Association backend for {missing} is not configured",
        action=EVENT_ACTION_ASSOCIATION_CONFIGURATION,
    )


async def _wait_without_workload(
    context: ControllerContext,
    request: ReconcileInput,
    obj: Mapping[str, Any],
    gate: FleetGate,
    *,
    written: int,
) -> ReconcileResult:
    """An application waiting for its associations or for Kibana's Fleet: ECK's Event, and only
    ``observedGeneration`` in the status (no health: nothing was measured)."""
    ref = request.ref
    if gate.reason is not None and gate.message is not None:
        await context.events.warning(
            InvolvedObject.of(
                {
                    "apiVersion": ref.resource.api_version,
                    "kind": ref.resource.kind,
                    "metadata": obj["metadata"],
                }
            ),
            reason=gate.reason,
            message=gate.message,
            action=gate.action,
        )
    generation = view(obj).generation
    current = obj.get("status") or {}
    if generation is not None and current.get("observedGeneration") != generation:
        await context.scoped.patch_status(
            ref.resource,
            {"status": {"observedGeneration": generation}},
            namespace=ref.namespace,
            name=ref.name,
        )
    return ReconcileResult(
        phase=Phase.RECONCILING,
        message=f"{gate.message or 'waiting for the associations'}, {written} objects written",
        requeue_after_seconds=NOT_GREEN_REQUEUE_SECONDS,
        observed_generation=generation,
        referenced=tuple(app_references(obj)),
    )


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
        gate = _association_gate(obj) or await _fleet_gate(context, obj)
        children = await build_off_loop(
            f"{kind.kind} {ref.namespace}/{ref.name}",
            lambda: desired_children(
                kind.kind, obj, existing=existing, now=now, with_workload=gate.build_workload
            ),
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
        if not gate.build_workload:
            return await _wait_without_workload(context, request, obj, gate, written=written)
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
