"""The ElasticsearchAutoscaler controller's activities: reconcile and finalize.

A reconcile reads the autoscaler and the Elasticsearch it names (same namespace), validates the
policies with the pure rules of ``stackflow.stack.elasticsearch.autoscaling`` (an invalid spec
is the engine's invalid-spec path), then, as ECK, deletes every autoscaling policy of the cluster
and puts the declared ones (``PUT _autoscaling/policy/<name>``: roles and deciders) and reads
``GET _autoscaling/capacity``. Each policy's node-set resources are computed from the answer
within its bounds and written into the cluster's ``spec.nodeSets`` (count, the ``elasticsearch``
container's resources, the data claim's storage) only when they differ: the required memory and
cpu are the requests, the limits those over the policy's ``requestsToLimitsRatio``. Each
``status.policies[]`` entry keeps its ``lastModificationTime`` until its resources change. The autoscaler's status
(``observedGeneration``, the ``Active``/``Healthy``/``Limited``/``Online`` conditions,
``policies``) is written last, and the autoscaler is looked at again after ``pollingPeriod``.

A cluster the operator cannot ask (no internal user yet, not reachable, or not dialled outside
the cluster) is left as it is: the status says ``Online`` false and the poll goes on.

Unlicensed, the reconcile does not run: the license gate records the row's own notice (ECK's
Warning ``InvalidLicense`` and ``Active`` false, see ``stackflow.controllers.autoscaler``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from activities.binding import ControllerActivities
from activities.context import ControllerContext
from activities.elasticsearch import operator_endpoint
from activities.errors import InvalidSpecError
from stackflow.api.kinds import kind_info
from stackflow.config import parse_duration
from stackflow.controllers.autoscaler import (
    AUTOSCALER_CONTROLLER,
    autoscaled_cluster,
)
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.objects import view
from stackflow.stack.apps.status import merge_conditions
from stackflow.stack.elasticsearch.autoscaling import (
    DEFAULT_POLLING_SECONDS,
    HEALTHY,
    LIMITED,
    PolicyLimits,
    PolicyResult,
    compute_policy,
    conditions,
    node_sets_by_policy,
    parse_policy_limits,
    policy_status,
    scaled_node_sets,
    validate_policies,
)

__all__ = [
    "ELASTICSEARCH",
    "IMPLEMENTATIONS",
    "finalize",
    "polling_seconds",
    "reconcile",
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
    context: ControllerContext, es: Mapping[str, Any], policies: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any] | None, str]:
    """Put the policies into the cluster and read its capacity: the answer, or None and why."""
    namespace, name = view(es).namespace, view(es).name
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        return None, f"Elasticsearch {namespace}/{name} has no internal user yet"
    api = context.elasticsearch(endpoint)
    try:
        # As ECK: the cluster's policies are the declared ones, nothing else.
        await api.delete_autoscaling_policies()
        for policy in policies:
            await api.put_autoscaling_policy(str(policy["name"]), _policy_body(policy))
        return await api.autoscaling_capacity(), ""
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        logger.info("autoscaling API of %s/%s not reachable: %s", namespace, name, error)
        return None, str(error)
    finally:
        close = getattr(api, "close", None)
        if close is not None:
            await close()


async def _scale(
    context: ControllerContext,
    es: Mapping[str, Any],
    results: Sequence[PolicyResult],
    assignments: Mapping[str, Sequence[str]],
) -> bool:
    """Write the policies' resources into the cluster's node sets; whether it was written.

    The whole list goes in one merge patch carrying the resourceVersion it was computed from:
    a node set changed meanwhile is a conflict (retried by the activity), never overwritten.
    """
    node_sets = (es.get("spec") or {}).get("nodeSets") or []
    scaled = scaled_node_sets(node_sets, results, assignments)
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


async def reconcile(context: ControllerContext, request: ReconcileInput) -> ReconcileResult:
    """Scale the autoscaler's cluster from its autoscaling capacity and report it."""
    ref = request.ref
    try:
        obj = await context.scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return ReconcileResult(phase=Phase.RECONCILING, message=f"{ref.kind} not found")
    problems = spec_problems(obj)
    if problems:
        raise InvalidSpecError("; ".join(problems))
    spec = obj.get("spec") or {}
    declared: list[Mapping[str, Any]] = list(spec.get("policies") or [])
    limits: list[PolicyLimits] = [parse_policy_limits(policy) for policy in declared]
    polling = polling_seconds(obj) or DEFAULT_POLLING_SECONDS
    es_name = str(spec["elasticsearchRef"]["name"])
    references = tuple(autoscaled_cluster(obj))
    policies: list[dict[str, Any]] | None = None
    scaled = False
    try:
        es = await context.scoped.get(ELASTICSEARCH, namespace=ref.namespace, name=es_name)
    except errors.NotFound:
        es = None
    if es is None:
        message = f"Elasticsearch {ref.namespace}/{es_name} not found"
        wanted = conditions([], online=False, spec_errors=[message])
    else:
        capacity, why = await _capacity(context, es, declared)
        if capacity is None:
            # Nothing is decided without the cluster's answer: its node sets stay as they are.
            message = f"autoscaling capacity not read: {why}"
            wanted = conditions([], online=False)
        else:
            node_sets = (es.get("spec") or {}).get("nodeSets") or []
            assignments = node_sets_by_policy(node_sets, limits)
            results = [compute_policy(policy, capacity) for policy in limits]
            scaled = await _scale(context, es, results, assignments)
            previous = {
                str(entry.get("name")): entry
                for entry in (obj.get("status") or {}).get("policies") or ()
                if isinstance(entry, Mapping)
            }
            now = context.clock()
            policies = [
                policy_status(r, assignments[r.policy], now=now, previous=previous.get(r.policy))
                for r in results
            ]
            wanted = conditions(results, online=True, policies=policies)
            message = "node sets scaled" if scaled else "node sets as required"
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


async def finalize(context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
    """A deleted autoscaler: nothing to release (as ECK, the cluster keeps its last resources
    and its autoscaling policies)."""
    return FinalizeResult(deleted=())


IMPLEMENTATIONS: Mapping[str, ControllerActivities] = {
    AUTOSCALER_CONTROLLER.name: ControllerActivities(reconcile=reconcile, finalize=finalize),
}
