"""The Elasticsearch controller's activities: reconcile and finalize.

Reconcile reads the cluster through the scoped client, validates it (``InvalidSpec`` when the
spec cannot be reconciled), builds every child with the pure builder and applies them idempotently
(no write when nothing changed), then reads the StatefulSets and Pods, asks the cluster for its
health when a node is ready, installs the per-cluster license (``<es>-es-license``) once the
cluster answers (see :mod:`activities.cluster_license_api`), and writes the computed status
through ``/status``. While the cluster is not settled, or a license waits for it, it asks to be
reconciled again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from activities.apply import (
    UNREAD,
    ApplyOutcome,
    Unread,
    apply_objects,
    delete_soft_owned_secrets,
)
from activities.binding import Family, FamilyActivities, Primary
from activities.building import build_off_loop
from activities.cluster_license_api import LicenseOutcome, apply_cluster_license
from activities.context import ControllerContext
from activities.elasticsearch_nodes import (
    NodeSpecsOutcome,
    observe_cluster,
    reconcile_node_specs,
)
from activities.elasticsearch_volumes import collect_claims, reconcile_volumes
from activities.endpoints import endpoint_for
from activities.errors import InvalidSpecError
from activities.kinds import involved_reference, resource_for_kind
from activities.passwords import random_password
from activities.unknown_fields import warn_unknown_fields
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER, es_references
from stackflow.elastic import ElasticsearchApi, ElasticsearchError, ElasticsearchUnavailable
from stackflow.elastic.factory import ElasticsearchEndpoint
from stackflow.kube import errors
from stackflow.kube.events import InvolvedObject
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import (
    CONFIGMAPS,
    PODDISRUPTIONBUDGETS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.builder import desired_children, elasticsearch_annotations
from stackflow.stack.elasticsearch.keystore import (
    SecureSettingsSource,
    aggregate_secure_settings,
    secure_settings_sources,
)
from stackflow.stack.elasticsearch.orchestration import (
    expected_statefulsets,
    in_progress_operations,
    pod_state_from_manifest,
    reconciliation_message,
)
from stackflow.stack.elasticsearch.orchestration.node_specs import PAUSED_REASON
from stackflow.stack.elasticsearch.references import referenced_objects
from stackflow.stack.elasticsearch.remote_clusters import remote_api_keys_secret_name
from stackflow.stack.elasticsearch.status import (
    StatusDecision,
    compute_status,
    format_time,
    is_pod_ready,
    with_orchestration,
)
from stackflow.stack.elasticsearch.suspend import orchestration_paused, suspended_pods
from stackflow.stack.elasticsearch.validation import validate_elasticsearch
from stackflow.stack.labels import (
    ES_CLUSTER_NAME_LABEL,
)
from stackflow.stack.objects import decode_secret_data
from stackflow.stack.policies.stack_config.secrets import file_settings_secret_name

__all__ = [
    "FAMILIES",
    "ElasticsearchActivities",
]

logger = logging.getLogger("activities.elasticsearch")

#: ECK's reason for a secure settings Secret that does not exist (the cluster is still reconciled).
SECURE_SETTINGS_NOT_FOUND_REASON = "Unexpected"
#: How soon to look again while a StatefulSet is recreated for its volumes.
VOLUMES_RETRY_SECONDS = 5.0
#: How soon to try again when a license waits for the cluster to answer.
LICENSE_RETRY_SECONDS = 10.0
_CHILD_RESOURCES: tuple[Kind, ...] = (
    SECRETS,
    CONFIGMAPS,
    SERVICES,
    STATEFULSETS,
    PODS,
    PODDISRUPTIONBUDGETS,
)
#: The children listed from the API server's watch cache (``ResourceClient.list``'s
#: ``from_watch_cache``: no wait for it to catch up with etcd, as ECK's informer reads): those
#: whose every write carries the listed ``resourceVersion`` or is a create (``apply_object``
#: answers a conflict with a fresh read), and that no decision deletes by. Not the Secrets (the
#: build keeps the passwords, keys and certificates it finds there: one missing from a stale
#: listing would be made anew), nor the StatefulSets and Pods: the node-spec decisions and the
#: claims' collection read replicas, revisions and readiness from them, and a stale view could
#: restart or delete what it should not.
_FROM_WATCH_CACHE: frozenset[Kind] = frozenset({CONFIGMAPS, SERVICES, PODDISRUPTIONBUDGETS})


def _cluster_selector(name: str) -> str:
    return equality_selector_string({ES_CLUSTER_NAME_LABEL: name})


async def _existing_objects(
    context: ControllerContext, es: Mapping[str, Any]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The cluster's current children and the objects its spec references, by (kind, name).

    The Secrets listed by the cluster-name label include the association controllers' user and
    service-account-token Secrets (``common.k8s.elastic.co/type: user`` /
    ``service-account-token``): the builder turns them into file realm users and service tokens.
    """
    metadata = es["metadata"]
    namespace, name = str(metadata["namespace"]), str(metadata["name"])
    existing: dict[tuple[str, str], dict[str, Any]] = {}
    listings = await asyncio.gather(
        *(
            context.scoped.list(
                resource,
                namespace=namespace,
                label_selector=_cluster_selector(name),
                from_watch_cache=resource in _FROM_WATCH_CACHE,
            )
            for resource in _CHILD_RESOURCES
        )
    )
    for resource, listed in zip(_CHILD_RESOURCES, listings, strict=True):
        for item in listed["items"]:
            existing[(resource.kind, str(item["metadata"]["name"]))] = item
    for reference in referenced_objects(es):
        resource = SECRETS if reference.kind == "Secret" else CONFIGMAPS
        key = (reference.kind, reference.name)
        if key in existing:
            continue
        try:
            existing[key] = await context.scoped.get(
                resource, namespace=reference.namespace, name=reference.name
            )
        except errors.NotFound:
            continue
    return existing


def _listed(
    existing: Mapping[tuple[str, str], dict[str, Any]], child: Mapping[str, Any], es_name: str
) -> dict[str, Any] | Unread | None:
    """The child as this reconcile listed it (None: not there), when the listing by the
    cluster-name label covers it; else UNREAD (``apply_object`` reads it)."""
    if view(child).labels.get(ES_CLUSTER_NAME_LABEL) != es_name:
        return UNREAD
    return existing.get((str(child["kind"]), str(child["metadata"]["name"])))


async def _secure_settings(
    context: ControllerContext,
    es: Mapping[str, Any],
    existing: Mapping[tuple[str, str], Mapping[str, Any]],
) -> dict[str, bytes] | None:
    """The aggregated keystore content of ``es`` (None when it has no source at all).

    Sources in the cluster's namespace come from ``existing`` when listed there (the remote API
    keys Secret carries the cluster-name label); the others, a policy's in its own namespace
    included, are read through the scoped client. A missing source is skipped with a Warning
    event naming the Secret and the cluster, as ECK: the rest of the cluster is reconciled.
    """
    namespace, name = str(es["metadata"]["namespace"]), str(es["metadata"]["name"])
    sources = secure_settings_sources(
        es,
        file_settings=existing.get(("Secret", file_settings_secret_name(name))),
        remote_api_keys=("Secret", remote_api_keys_secret_name(name)) in existing,
    )
    if not sources:
        return None
    found: dict[tuple[str, str], dict[str, bytes] | None] = {}
    for source in sources:
        if source.key in found:
            continue
        current = (
            existing.get(("Secret", source.secret_name)) if source.namespace == namespace else None
        )
        if current is None:
            current = await context.scoped.get_or_none(
                SECRETS, namespace=source.namespace, name=source.secret_name
            )
        found[source.key] = decode_secret_data(current) if current is not None else None
    aggregate = aggregate_secure_settings(sources, found)
    for source in aggregate.missing:
        await _warn_missing_source(context, es, source)
    return aggregate.data


async def _warn_missing_source(
    context: ControllerContext, es: Mapping[str, Any], source: SecureSettingsSource
) -> None:
    namespace, name = str(es["metadata"]["namespace"]), str(es["metadata"]["name"])
    ref = ELASTICSEARCH_CONTROLLER.ref_of(es)
    await context.events.warning(
        InvolvedObject.of(involved_reference(ref, es)),
        reason=SECURE_SETTINGS_NOT_FOUND_REASON,
        message=(
            f"Secure settings secret not found: {source.namespace}/{source.secret_name} "
            f"(Elasticsearch {namespace}/{name}); its keys are left out of the keystore"
        ),
    )


async def _delete_unused_secure_settings(
    context: ControllerContext,
    es: Mapping[str, Any],
    existing: Mapping[tuple[str, str], Mapping[str, Any]],
) -> bool:
    """Delete ``<es>-es-secure-settings`` once the cluster has no source left (as ECK)."""
    namespace, name = str(es["metadata"]["namespace"]), str(es["metadata"]["name"])
    secret_name = names.secure_settings_secret_name(name)
    if ("Secret", secret_name) not in existing:
        return False
    try:
        await context.scoped.delete(SECRETS, namespace=namespace, name=secret_name)
    except errors.NotFound:
        return False
    return True


async def _cluster_health(api: ElasticsearchApi, endpoint: ElasticsearchEndpoint) -> str | None:
    """The cluster's health, or None when it cannot be asked (the status says "not reachable")."""
    try:
        health = await api.cluster_health()
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        logger.info("cluster %s/%s not reachable: %s", endpoint.namespace, endpoint.name, error)
        return None
    return health.status


async def _observe_cluster(
    context: ControllerContext,
    *,
    es: Mapping[str, Any],
    endpoint: ElasticsearchEndpoint | None,
    health: str | None = None,
) -> tuple[str | None, LicenseOutcome]:
    """Ask the cluster for its health (unless this pass read it already: ``health``), then
    install its license once it answers.

    ``endpoint`` is None while no node is ready: then the cluster is not asked at all.
    """
    if endpoint is None:
        return None, await apply_cluster_license(context, es=es, api=None)
    async with context.elasticsearch_session(endpoint) as api:
        if health is None:
            health = await _cluster_health(api, endpoint)
        license_outcome = await apply_cluster_license(
            context, es=es, api=api if health is not None else None
        )
    return health, license_outcome


async def _reconcile(
    context: ControllerContext, request: ReconcileInput, es: Primary
) -> ReconcileResult:
    """Bring one cluster's children and status in line with its spec."""
    ref = request.ref
    problems = validate_elasticsearch(es)
    if problems:
        raise InvalidSpecError("; ".join(f"{field}: {message}" for field, message in problems))
    await warn_unknown_fields(context, ref, es)
    existing = await _existing_objects(context, es)
    current_statefulsets = [obj for (kind, _), obj in existing.items() if kind == "StatefulSet"]
    current_pods = [obj for (kind, _), obj in existing.items() if kind == "Pod"]
    any_ready = any(is_pod_ready(pod) for pod in current_pods)
    cluster, observed_es = await observe_cluster(
        context,
        es,
        resource=ref.resource,
        endpoint=endpoint_for(es, existing) if any_ready else None,
    )
    es = dict(observed_es)
    annotations = elasticsearch_annotations(es)
    if annotations:
        # Before the build: the masters' config reads the bootstrap list from the annotation.
        es = dict(
            await context.scoped.merge_patch(
                ref.resource,
                {"metadata": {"annotations": annotations}},
                namespace=ref.namespace,
                name=ref.name,
            )
        )
    secure_settings = await _secure_settings(context, es, existing)
    now = context.clock()
    children = await build_off_loop(
        f"Elasticsearch {ref.namespace}/{ref.name}",
        lambda: desired_children(
            es,
            existing=existing,
            now=now,
            random_password=random_password,
            secure_settings=secure_settings,
        ),
    )
    written = 0
    if secure_settings is None and await _delete_unused_secure_settings(context, es, existing):
        written += 1
    others = [child for child in children if child["kind"] != "StatefulSet"]
    applied_children = await apply_objects(
        context.scoped,
        [(resource_for_kind(child), child, _listed(existing, child, ref.name)) for child in others],
    )
    for child, applied in zip(others, applied_children, strict=True):
        if applied.outcome is not ApplyOutcome.UNCHANGED:
            written += 1
        existing[(str(child["kind"]), str(child["metadata"]["name"]))] = applied.obj
    desired_statefulsets = [child for child in children if child["kind"] == "StatefulSet"]
    volumes = await reconcile_volumes(
        context,
        es,
        resource=ref.resource,
        desired_statefulsets=desired_statefulsets,
        statefulsets=current_statefulsets,
    )
    written += volumes.written
    if volumes.problems:
        raise InvalidSpecError(
            "; ".join(f"{field}: {message}" for field, message in volumes.problems)
        )
    nodes = await reconcile_node_specs(
        context,
        es,
        resource=ref.resource,
        desired_statefulsets=[
            sts for sts in desired_statefulsets if view(sts).name not in volumes.skip_statefulsets
        ],
        statefulsets=current_statefulsets,
        pods=current_pods,
        cluster=cluster,
        # A StatefulSet recreated for its volumes holds the node specs, as in ECK.
        paused=orchestration_paused(view(es).annotations) or volumes.requeue,
        suspended=suspended_pods(view(es).annotations),
    )
    written += nodes.written
    requeue_for_volumes = volumes.requeue
    if volumes.collects:
        # After the StatefulSets, as ECK: their write does not wait for the claims' listing.
        claims = await collect_claims(
            context,
            es,
            desired_statefulsets=desired_statefulsets,
            statefulsets=current_statefulsets,
        )
        written += claims.written
        requeue_for_volumes = claims.requeue
    await _record_downscale_events(context, es, nodes)
    selector = _cluster_selector(ref.name)
    statefulsets, pods = await asyncio.gather(
        context.scoped.list(STATEFULSETS, namespace=ref.namespace, label_selector=selector),
        context.scoped.list(PODS, namespace=ref.namespace, label_selector=selector),
    )
    ready = any(is_pod_ready(pod) for pod in pods["items"])
    health, license_outcome = await _observe_cluster(
        context,
        es=es,
        endpoint=endpoint_for(es, existing) if ready else None,
        # The node specs pass read it moments ago: one health call per reconcile, not two.
        health=cluster.health.status if cluster is not None else None,
    )
    decision = _with_node_specs(
        es,
        compute_status(
            es,
            statefulsets=statefulsets["items"],
            pods=pods["items"],
            health=health,
            now=context.clock(),
            desired_statefulsets=desired_statefulsets,
        ),
        nodes,
        pods=pods["items"],
        now=context.clock(),
    )
    current_status = es.get("status") or {}
    if {**current_status, **decision.status} != current_status:
        await context.scoped.patch_status(
            ref.resource, {"status": decision.status}, namespace=ref.namespace, name=ref.name
        )
    requeue_after = decision.requeue_after_seconds
    if requeue_for_volumes:
        requeue_after = min(requeue_after or VOLUMES_RETRY_SECONDS, VOLUMES_RETRY_SECONDS)
    if license_outcome.retry:
        requeue_after = min(requeue_after or LICENSE_RETRY_SECONDS, LICENSE_RETRY_SECONDS)
    settled = requeue_after is None
    phase_text = decision.status.get("phase", "")
    license_text = f", {license_outcome.message}" if license_outcome.message else ""
    return ReconcileResult(
        phase=Phase.READY if settled else Phase.RECONCILING,
        message=(
            f"{phase_text}, health {decision.status.get('health')}, "
            f"{decision.status.get('availableNodes', 0)} nodes available, {written} objects written"
            f"{license_text}"
        ),
        requeue_after_seconds=requeue_after,
        observed_generation=view(es).generation,
        referenced=tuple(es_references(es)),
        cluster_steps=nodes.steps,
    )


async def _record_downscale_events(
    context: ControllerContext, es: Mapping[str, Any], nodes: NodeSpecsOutcome
) -> None:
    """ECK's events of a downscale that waits (``Delayed`` while data moves, ``Stalled``);
    repeats are aggregated into one Event's count."""
    downscale = nodes.changes.downscale
    if downscale is None or not downscale.events:
        return
    involved = InvolvedObject.of(involved_reference(ELASTICSEARCH_CONTROLLER.ref_of(es), es))
    for event in dict.fromkeys(downscale.events):
        if event.type == "Warning":
            await context.events.warning(involved, reason=event.reason, message=event.message)
        else:
            await context.events.normal(involved, reason=event.reason, message=event.message)


def _with_node_specs(
    es: Mapping[str, Any],
    decision: StatusDecision,
    nodes: NodeSpecsOutcome,
    *,
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
) -> StatusDecision:
    """The status with what the node specs pass reports (operations, why a node waits)."""
    spec: Mapping[str, Any] = es.get("spec") or {}
    changes = nodes.changes
    upscale = nodes.targets.upscale
    previous: Mapping[str, Any] = (es.get("status") or {}).get("inProgressOperations") or {}
    operations = in_progress_operations(
        previous=previous,
        now=format_time(now),
        upgrade=changes.upgrade,
        upscale=upscale,
        downscale=changes.downscale,
    )
    pod_states = [pod_state_from_manifest(pod) for pod in pods]
    message = reconciliation_message(
        expected=expected_statefulsets(view(es).name, spec.get("nodeSets") or ()),
        pods=pod_states,
        upgrade=changes.upgrade,
        upscale=upscale,
        downscale=changes.downscale,
        cluster=nodes.cluster,
    )
    reasons = [reason for reason in nodes.requeue_reasons if reason and reason not in message]
    if changes.error:
        reasons.append(changes.error)
    if nodes.paused:
        reasons.append(PAUSED_REASON)
    return with_orchestration(
        decision,
        operations=operations,
        message="; ".join((message, *reasons)),
        phase=changes.downscale.phase if changes.downscale is not None else None,
        in_progress=nodes.in_progress,
        now=now,
        previous_conditions=(es.get("status") or {}).get("conditions") or (),
    )


class ElasticsearchActivities(FamilyActivities):
    """The Elasticsearch controller's activities, bound to the process's ``ControllerContext``."""

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Bring one cluster's children and status in line with its spec."""
        return await _reconcile(self.context, request, primary)

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """Delete the soft-owned Secrets of a deleted cluster (they carry no ownerReference).

        Listed unscoped: the cluster is gone (the scope check read it unscoped), and its
        soft-owned Secrets are the operator's own, deleted whatever the namespace's scope (as ECK).
        """
        deleted = await delete_soft_owned_secrets(self.context.unscoped, request.ref)
        return FinalizeResult(deleted=deleted)


FAMILIES: Mapping[str, Family] = {ELASTICSEARCH_CONTROLLER.name: ElasticsearchActivities}
