"""The ElasticsearchAutoscaler controller's activities: reconcile and finalize.

A reconcile reads the autoscaler and the Elasticsearch it names (same namespace), validates the
policies with the pure rules of ``stackflow.stack.policies.autoscaling`` (an invalid spec
is the engine's invalid-spec path), then, as ECK, deletes every autoscaling policy of the cluster
and puts the declared ones (``PUT _autoscaling/policy/<name>``: roles and deciders) and reads
``GET _autoscaling/capacity``. Each policy's node-set resources are computed from the answer as
ECK computes them (``compute_policy``) and written into the cluster's ``spec.nodeSets`` (count,
the node set's ``resources``, the data claim's storage; cpu and memory leave the pod template's
``elasticsearch`` container) only when they differ. Each ``status.policies[]`` entry keeps its
``lastModificationTime`` until its resources change. The autoscaler's status
(``observedGeneration``, ECK's ``Limited``/``Healthy``/``Active``/``Online`` conditions,
``policies``) is written last, ECK's Warning events (a scaling limit, a missing range,
unexpected storage) go on the Elasticsearch resource, and the autoscaler is looked at again after
``pollingPeriod``.

A cluster the operator cannot ask (no internal user yet, not reachable, or not dialled outside
the cluster) gets ECK's offline resources: those of the status, kept within the ranges, or the
minimums; the status says ``Online`` false and the poll goes on.

Unlicensed, the reconcile does not run: the license gate records the row's own notice (ECK's
Warning ``InvalidLicense`` and ``Active`` false, see ``stackflow.controllers.autoscaler``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from activities.endpoints import operator_endpoint
from activities.errors import InvalidSpecError
from stackflow.api.kinds import kind_info
from stackflow.config import parse_duration
from stackflow.controllers.autoscaler import (
    AUTOSCALER_CONTROLLER,
    autoscaled_cluster,
)
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube.events import InvolvedObject
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import STATEFULSETS
from stackflow.models.objects import view
from stackflow.stack.apps.status import merge_conditions
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.policies.autoscaling.node_sets import ml_node_settings, scaled_node_sets
from stackflow.stack.policies.autoscaling.results import (
    STATE_NO_NODE_SET,
    CurrentResources,
    PolicyResult,
)
from stackflow.stack.policies.autoscaling.sizing import (
    compute_policy,
    offline_policy,
    overlapping_states,
)
from stackflow.stack.policies.autoscaling.spec import (
    DEFAULT_POLLING_SECONDS,
    PolicyLimits,
    VolumeClaimError,
    node_sets_by_policy,
    parse_policy_limits,
)
from stackflow.stack.policies.autoscaling.status import (
    HEALTHY,
    LIMITED,
    OFFLINE_MESSAGE,
    ONLINE_MESSAGE,
    conditions,
    imported_status_entry,
    inactive_conditions,
    policy_status,
    scaling_events,
    unhealthy_conditions,
)
from stackflow.stack.policies.autoscaling.validation import unused_policies, validate_policies

__all__ = [
    "ELASTICSEARCH",
    "FAMILIES",
    "AutoscalerActivities",
    "polling_seconds",
    "spec_problems",
]

logger = logging.getLogger(__name__)

ELASTICSEARCH = kind_info("Elasticsearch").resource


def spec_problems(autoscaler: Mapping[str, Any]) -> list[str]:
    """Every problem of the autoscaler's spec, one clear message each (pure; empty: valid)."""
    spec = autoscaler.get("spec") or {}
    problems: list[str] = []
    ref = spec.get("elasticsearchRef") or {}
    if not (isinstance(ref, Mapping) and ref.get("name")):
        problems.append("spec.elasticsearchRef.name is required")
    policies = spec.get("policies") or []
    if not isinstance(policies, list) or not all(isinstance(p, Mapping) for p in policies):
        return [*problems, "spec.policies must be a list of policies"]
    problems.extend(validate_policies(policies))
    period = spec.get("pollingPeriod")
    if period is not None and polling_seconds(autoscaler) is None:
        problems.append(f"spec.pollingPeriod: {period!r} is not a duration such as 30s or 1m")
    return problems


def polling_seconds(autoscaler: Mapping[str, Any]) -> float | None:
    """``spec.pollingPeriod`` in seconds (ECK's default when unset), None when unreadable."""
    period = (autoscaler.get("spec") or {}).get("pollingPeriod")
    if period is None:
        return DEFAULT_POLLING_SECONDS
    try:
        seconds = parse_duration(str(period)).total_seconds()
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _policy_body(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``PUT _autoscaling/policy/<name>``: its roles and deciders, as ECK sends."""
    return {
        "roles": sorted(str(role) for role in policy.get("roles") or ()),
        "deciders": dict(policy.get("deciders") or {}),
    }


async def _capacity(
    context: ControllerContext,
    es: Mapping[str, Any],
    policies: Sequence[Mapping[str, Any]],
    limits: Sequence[PolicyLimits],
) -> tuple[dict[str, Any] | None, str]:
    """Put ECK's ML settings and the policies into the cluster and read its capacity: the
    answer, or None and why."""
    namespace, name = view(es).namespace, view(es).name
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        # ECK's word when the cluster cannot be asked at all.
        return None, OFFLINE_MESSAGE
    async with context.elasticsearch_session(endpoint) as api:
        try:
            await api.put_cluster_settings(ml_node_settings(limits))
            # As ECK: the cluster's policies are the declared ones, nothing else.
            await api.delete_autoscaling_policies()
            for policy in policies:
                await api.put_autoscaling_policy(str(policy["name"]), _policy_body(policy))
            return await api.autoscaling_capacity(), ""
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            logger.info("autoscaling API of %s/%s not reachable: %s", namespace, name, error)
            return None, str(error)


async def _scale(
    context: ControllerContext, es: Mapping[str, Any], results: Sequence[PolicyResult]
) -> bool:
    """Write the policies' resources into the cluster's node sets; whether it was written.

    The whole list goes in one merge patch carrying the resourceVersion it was computed from:
    a node set changed meanwhile is a conflict (retried by the activity), never overwritten.
    """
    node_sets = (es.get("spec") or {}).get("nodeSets") or []
    scaled = scaled_node_sets(node_sets, results)
    if scaled is None:
        return False
    patch: dict[str, Any] = {"spec": {"nodeSets": scaled}}
    resource_version = view(es).resource_version
    if resource_version:
        patch["metadata"] = {"resourceVersion": resource_version}
    await context.scoped.merge_patch(
        ELASTICSEARCH, patch, namespace=view(es).namespace, name=view(es).name
    )
    return True


def _status(
    obj: Mapping[str, Any],
    wanted_conditions: Sequence[Mapping[str, Any]],
    policies: list[dict[str, Any]] | None,
    *,
    context: ControllerContext,
) -> dict[str, Any] | None:
    """The status merge patch (our conditions merged by type, the others kept), None if so."""
    status = obj.get("status") or {}
    current: Sequence[Mapping[str, Any]] = status.get("conditions") or []
    types = {str(condition["type"]) for condition in wanted_conditions}
    merged = merge_conditions(current, wanted_conditions, now=context.clock()) + [
        dict(condition) for condition in current if str(condition.get("type")) not in types
    ]
    desired: dict[str, Any] = {"conditions": merged}
    generation = view(obj).generation
    if generation is not None:
        desired["observedGeneration"] = generation
    if policies is not None:
        desired["policies"] = policies
    if all(status.get(key) == value for key, value in desired.items()):
        return None
    return desired


async def _write_unhealthy(
    context: ControllerContext, obj: Mapping[str, Any], message: str
) -> None:
    """ECK's unhealthy conditions, ``message`` on ``Healthy``."""
    patch = _status(obj, unhealthy_conditions(message), None, context=context)
    if patch is not None:
        meta = view(obj)
        await context.scoped.patch_status(
            kind_info("ElasticsearchAutoscaler").resource,
            {"status": patch},
            namespace=meta.namespace,
            name=meta.name,
        )


async def _imported(
    context: ControllerContext,
    es: Mapping[str, Any],
    limits: Sequence[PolicyLimits],
    assignments: Mapping[str, Sequence[str]],
    previous: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """ECK's import, for each policy the status does not know yet, of the resources its node
    sets' StatefulSets run with (``imported_status_entry``)."""
    meta = view(es)
    imported: dict[str, dict[str, Any]] = {}
    for policy in limits:
        if policy.name in previous or not assignments[policy.name]:
            continue
        stateful_sets: list[tuple[str, Mapping[str, Any] | None]] = []
        for name in assignments[policy.name]:
            found = await context.scoped.get_or_none(
                STATEFULSETS,
                namespace=meta.namespace,
                name=es_names.statefulset_name(meta.name, name),
            )
            stateful_sets.append((name, found))
        entry = imported_status_entry(policy, stateful_sets)
        if entry is not None:
            imported[policy.name] = entry
    return imported


async def _record_events(
    context: ControllerContext, es: Mapping[str, Any], events: Sequence[Mapping[str, str]]
) -> None:
    """ECK's Warning events of the reconcile, on the Elasticsearch resource."""
    if not events:
        return
    involved = InvolvedObject.of(
        {
            "apiVersion": ELASTICSEARCH.api_version,
            "kind": "Elasticsearch",
            "metadata": es["metadata"],
        }
    )
    for event in events:
        await context.events.warning(
            involved, reason=event["reason"], message=event["message"], action=event["action"]
        )


class AutoscalerActivities(FamilyActivities):
    """The Elasticsearch autoscaler controller's activities, bound to the process's
    ``ControllerContext``."""

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Scale the autoscaler's cluster from its autoscaling capacity and report it."""
        context, obj = self.context, primary
        ref = request.ref
        problems = spec_problems(obj)
        if problems:
            # As ECK: the reason on Healthy, then the invalid-spec path.
            await _write_unhealthy(context, obj, "; ".join(problems))
            raise InvalidSpecError("; ".join(problems))
        spec = obj.get("spec") or {}
        declared: list[Mapping[str, Any]] = list(spec.get("policies") or [])
        limits: list[PolicyLimits] = [parse_policy_limits(policy) for policy in declared]
        polling = polling_seconds(obj) or DEFAULT_POLLING_SECONDS
        es_name = str(spec["elasticsearchRef"]["name"])
        references = tuple(autoscaled_cluster(obj))
        policies: list[dict[str, Any]] | None = None
        scaled = False
        es = await context.scoped.get_or_none(ELASTICSEARCH, namespace=ref.namespace, name=es_name)
        if es is None:
            message = f"Elasticsearch resource {ref.namespace}/{es_name} not found"
            wanted = inactive_conditions(message)
        else:
            node_sets = (es.get("spec") or {}).get("nodeSets") or []
            assignments = node_sets_by_policy(node_sets, limits)
            unused = unused_policies(declared, assignments)
            if unused:
                # As ECK's validation against the cluster: unhealthy, nothing asked or written.
                await _write_unhealthy(context, obj, "; ".join(unused))
                raise InvalidSpecError("; ".join(unused))
            capacity, why = await _capacity(context, es, declared, limits)
            previous: dict[str, Mapping[str, Any]] = {
                str(entry.get("name")): entry
                for entry in (obj.get("status") or {}).get("policies") or ()
                if isinstance(entry, Mapping)
            }
            try:
                previous.update(await _imported(context, es, limits, assignments, previous))
            except VolumeClaimError as error:
                # As ECK: nothing is computed from resources it cannot read back.
                message = f"error while importing resources from the status subresource: {error}"
                await _write_unhealthy(context, obj, message)
                return ReconcileResult(
                    phase=Phase.RECONCILING,
                    message=message,
                    requeue_after_seconds=polling,
                    observed_generation=view(obj).generation,
                    referenced=references,
                )
            overlaps = overlapping_states(limits)
            online = capacity is not None
            online_message = ONLINE_MESSAGE if online else why
            results: list[PolicyResult]
            if capacity is not None:
                results = [
                    compute_policy(
                        policy,
                        capacity,
                        assignments[policy.name],
                        previous.get(policy.name),
                        overlaps.get(policy.name),
                    )
                    for policy in limits
                ]
            else:
                results = [
                    offline_policy(
                        policy,
                        assignments[policy.name],
                        CurrentResources.of(previous.get(policy.name)),
                        overlaps.get(policy.name),
                    )
                    if assignments[policy.name]
                    else compute_policy(policy, {}, (), None, overlaps.get(policy.name))
                    for policy in limits
                ]
            missing = [
                f"no nodeSets for tier {result.policy}"
                for result in results
                if STATE_NO_NODE_SET in result.states
            ]
            if missing:
                # ECK writes nothing when a policy has no node set, and reports it on Online.
                # ECK's aggregated error: one message alone, several in brackets.
                joined = ", ".join(missing)
                online, online_message = False, joined if len(missing) == 1 else f"[{joined}]"
            else:
                try:
                    scaled = await _scale(context, es, results)
                except VolumeClaimError as error:
                    online, online_message = False, str(error)
            await _record_events(context, es, scaling_events(results, online=capacity is not None))
            now = context.clock()
            policies = [
                policy_status(result, now=now, previous=previous.get(result.policy))
                for result in results
                if result.resources is not None or result.states
            ]
            wanted = conditions(results, online=online, online_message=online_message)
            message = (
                ("node sets scaled" if scaled else "node sets as required")
                if online
                else f"autoscaling capacity not read: {online_message}"
            )
        patch = _status(obj, wanted, policies, context=context)
        if patch is not None:
            await context.scoped.patch_status(
                ref.resource, {"status": patch}, namespace=ref.namespace, name=ref.name
            )
        healthy = any(c["type"] == HEALTHY and c["status"] == "True" for c in wanted)
        limited = [c["message"] for c in wanted if c["type"] == LIMITED and c["status"] == "True"]
        return ReconcileResult(
            phase=Phase.READY if healthy else Phase.RECONCILING,
            message="; ".join([message, *limited]),
            requeue_after_seconds=polling,
            observed_generation=view(obj).generation,
            referenced=references,
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """A deleted autoscaler: nothing to release (as ECK, the cluster keeps its last resources
        and its autoscaling policies)."""
        return FinalizeResult(deleted=())


FAMILIES: Mapping[str, Family] = {AUTOSCALER_CONTROLLER.name: AutoscalerActivities}
