"""Run one step that changes a running Elasticsearch cluster: one activity per step.

The resource workflow runs the steps a reconcile decided (``ReconcileResult.cluster_steps``) one
by one, so its history shows each (a node excluded, a flush, a Pod deleted) under its summary. A
step may run twice (a worker killed after the call, before the result was recorded): each is
written so that running it again changes nothing more — settings are set to a value, a Pod is
deleted only if it is still the Pod the step was decided for (its UID as a precondition).

What a step leaves in the cluster for the operation's next steps (an allocation exclude or enable
setting, voting exclusions, a node shutdown) is recorded as a compensation when it is set and
forgotten when a later step undoes it (``left_in_cluster``). If the cluster's namespace leaves
scope mid-operation, or the cluster is deleted, the workflow runs ``undo_cluster_step`` for each
still held, last-acquired first: the cluster is not left excluding nodes the operator no longer
looks after. That release is the one call the operator makes to a cluster out of scope: its
credentials are read unscoped for it alone.
"""

from __future__ import annotations

import logging

from activities.context import ControllerContext
from activities.endpoints import endpoint_for, operator_endpoint
from stackflow.elastic import ElasticsearchApi, ElasticsearchError, ElasticsearchUnavailable
from stackflow.elastic.cluster_view import ENABLE_SETTING, EXCLUDE_NAME_SETTING
from stackflow.kube import errors
from stackflow.models.cluster_steps import (
    NONE_EXCLUDED,
    AddVotingExclusions,
    AnyStep,
    ClearVotingExclusions,
    DeleteNodeShutdown,
    DeletePod,
    DeleteStatefulSet,
    DisableReplicaAllocation,
    EnableAllocation,
    ExcludeFromAllocation,
    Flush,
    PutNodeShutdown,
    RemoveTransientAllocationSettings,
    ScaleStatefulSet,
    describe_step,
)
from stackflow.models.engine import (
    ACT_UNDO_CLUSTER_STEP,
    ClusterStepInput,
    ClusterStepResult,
    CompensateInput,
    CompensateResult,
    CompensationStep,
    ResourceRef,
)
from stackflow.models.kinds import PODS, SECRETS, SERVICES, STATEFULSETS, Kind
from stackflow.stack.elasticsearch import names

__all__ = [
    "ALLOCATION_ENABLE",
    "ALLOCATION_EXCLUDE",
    "VOTING_EXCLUSIONS",
    "left_in_cluster",
    "run_cluster_step",
    "undo_cluster_step",
]

logger = logging.getLogger("activities.cluster_steps")


#: Compensation keys (and ``data["undo"]``) of what a step leaves in the cluster.
ALLOCATION_EXCLUDE = "allocation-exclude"
ALLOCATION_ENABLE = "allocation-enable"
VOTING_EXCLUSIONS = "voting-exclusions"
_NODE_SHUTDOWN = "node-shutdown"


def _undo(what: str, key: str = "", **data: str) -> CompensationStep:
    return CompensationStep(
        activity=ACT_UNDO_CLUSTER_STEP, key=key or what, data={"undo": what, **data}
    )


def left_in_cluster(step: AnyStep) -> tuple[tuple[CompensationStep, ...], tuple[str, ...]]:
    """What ``step`` leaves in the cluster (compensations to record) and which recorded ones it
    undoes itself (their keys), once it has run."""
    match step:
        case DisableReplicaAllocation():
            return (_undo(ALLOCATION_ENABLE),), ()
        case EnableAllocation():
            return (), (ALLOCATION_ENABLE,)
        case ExcludeFromAllocation(value=value) if value and value != NONE_EXCLUDED:
            return (_undo(ALLOCATION_EXCLUDE, value=value),), ()
        case ExcludeFromAllocation():
            return (), (ALLOCATION_EXCLUDE,)
        case RemoveTransientAllocationSettings():
            return (), (ALLOCATION_EXCLUDE, ALLOCATION_ENABLE)
        case AddVotingExclusions(nodes=nodes):
            return (_undo(VOTING_EXCLUSIONS, nodes=",".join(nodes)),), ()
        case ClearVotingExclusions():
            return (), (VOTING_EXCLUSIONS,)
        case PutNodeShutdown(node_id=node_id):
            key = f"{_NODE_SHUTDOWN}/{node_id}"
            return (_undo(_NODE_SHUTDOWN, key, node_id=node_id),), ()
        case DeleteNodeShutdown(node_id=node_id):
            return (), (f"{_NODE_SHUTDOWN}/{node_id}",)
    return (), ()


class ClusterNotReachableError(Exception):
    """The step must call Elasticsearch and the operator has no way to reach the cluster yet."""


async def _elasticsearch_step(api: ElasticsearchApi, step: AnyStep) -> None:
    match step:
        case DisableReplicaAllocation():
            await api.put_transient_settings({ENABLE_SETTING: "primaries"})
        case EnableAllocation():
            await api.put_transient_settings({ENABLE_SETTING: "all"})
        case Flush():
            await api.flush()
        case PutNodeShutdown(node_id=node_id, type=kind, reason=reason, allocation_delay=delay):
            await api.put_node_shutdown(node_id, type=kind, reason=reason, allocation_delay=delay)
        case DeleteNodeShutdown(node_id=node_id):
            await api.delete_node_shutdown(node_id)
        case ExcludeFromAllocation(value=value):
            await api.put_transient_settings({EXCLUDE_NAME_SETTING: value})
        case RemoveTransientAllocationSettings():
            await api.put_transient_settings({EXCLUDE_NAME_SETTING: None, ENABLE_SETTING: None})
        case AddVotingExclusions(nodes=nodes):
            await api.add_voting_exclusions(nodes)
        case ClearVotingExclusions():
            await api.clear_voting_exclusions()
        case _:
            raise AssertionError(f"not an Elasticsearch step: {step!r}")  # pragma: no cover


async def _delete(
    context: ControllerContext,
    resource: Kind,
    *,
    namespace: str,
    name: str,
    uid: str = "",
) -> bool:
    """Delete an object; False when it is gone already or (``uid``) was replaced since."""
    try:
        await context.scoped.delete(
            resource, namespace=namespace, name=name, preconditions={"uid": uid} if uid else None
        )
    except (errors.NotFound, errors.Conflict):
        return False
    return True


async def _kubernetes_step(context: ControllerContext, ref: ResourceRef, step: AnyStep) -> bool:
    namespace = ref.namespace
    match step:
        case DeletePod(pod=pod, uid=uid):
            return await _delete(context, PODS, namespace=namespace, name=pod, uid=uid)
        case ScaleStatefulSet(statefulset=statefulset, replicas=replicas):
            # An update with the resourceVersion read (the role grants update, as ECK's): a
            # concurrent change is a Conflict, retried from a fresh read.
            current = await context.scoped.get_or_none(
                STATEFULSETS, namespace=namespace, name=statefulset
            )
            if current is None:
                return False
            if (current.get("spec") or {}).get("replicas") == replicas:
                return False
            updated = {**current, "spec": {**current["spec"], "replicas": replicas}}
            await context.scoped.replace(
                STATEFULSETS, updated, namespace=namespace, name=statefulset
            )
            return True
        case DeleteStatefulSet(statefulset=statefulset):
            node_set = names.node_set_of_statefulset(ref.name, statefulset)
            # ECK deletes the node set's Service, config and transport certificates with it. They
            # go first: a step that fails half-way leaves the StatefulSet, so the next pass
            # decides the whole step again instead of leaving them behind.
            for resource, name in (
                (SERVICES, statefulset),
                (SECRETS, names.config_secret_name(ref.name, node_set)),
                (SECRETS, names.node_transport_certs_secret_name(ref.name, node_set)),
            ):
                await _delete(context, resource, namespace=namespace, name=name)
            return await _delete(context, STATEFULSETS, namespace=namespace, name=statefulset)
    raise AssertionError(f"not a Kubernetes step: {step!r}")  # pragma: no cover


_KUBERNETES_STEPS = (DeletePod, ScaleStatefulSet, DeleteStatefulSet)


async def run_cluster_step(
    context: ControllerContext, request: ClusterStepInput
) -> ClusterStepResult:
    """Run ``request.step`` against the cluster of ``request.ref``."""
    step = request.step
    summary = describe_step(step)
    if isinstance(step, _KUBERNETES_STEPS):
        done = await _kubernetes_step(context, request.ref, step)
        return ClusterStepResult(done=done, message=summary if done else f"{summary}: already done")
    es = await context.scoped.get(
        request.ref.resource, namespace=request.ref.namespace, name=request.ref.name
    )
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        raise ClusterNotReachableError(f"{summary}: the cluster has no internal user yet")
    async with context.elasticsearch_session(endpoint) as api:
        await _elasticsearch_step(api, step)
    logger.info("%s: %s", request.ref.summary, summary)
    acquired, released = left_in_cluster(step)
    return ClusterStepResult(done=True, message=summary, acquired=acquired, released=released)


async def _undo_in_cluster(api: ElasticsearchApi, step: CompensationStep) -> None:
    what = str(step.data.get("undo", ""))
    if what == ALLOCATION_EXCLUDE:
        await api.put_transient_settings({EXCLUDE_NAME_SETTING: None})
    elif what == ALLOCATION_ENABLE:
        await api.put_transient_settings({ENABLE_SETTING: None})
    elif what == VOTING_EXCLUSIONS:
        await api.clear_voting_exclusions()
    elif what == _NODE_SHUTDOWN:
        await api.delete_node_shutdown(str(step.data.get("node_id", "")))
    else:
        raise AssertionError(f"not a cluster step's compensation: {step!r}")  # pragma: no cover


async def undo_cluster_step(
    context: ControllerContext, request: CompensateInput
) -> CompensateResult:
    """Undo what a cluster step left in the cluster (``left_in_cluster``), its namespace in scope
    or not: the cluster and its credentials are read unscoped, for this release alone. A cluster
    that is gone took its settings with it; one that cannot be asked keeps them (logged)."""
    ref, step = request.ref, request.step
    try:
        es = await context.unscoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return CompensateResult(released=False)
    existing: dict[tuple[str, str], dict[str, object]] = {}
    for secret_name in (
        names.internal_users_secret_name(ref.name),
        names.http_certs_internal_secret_name(ref.name),
    ):
        try:
            secret = await context.unscoped.get(SECRETS, namespace=ref.namespace, name=secret_name)
        except errors.NotFound:
            continue
        existing[("Secret", secret_name)] = secret
    endpoint = endpoint_for(es, existing)
    if endpoint is None:
        return CompensateResult(released=False)
    try:
        async with context.elasticsearch_session(endpoint) as api:
            await _undo_in_cluster(api, step)
    except (ElasticsearchUnavailable, ElasticsearchError) as error:
        logger.warning("%s: %s not undone: %s", ref.summary, step.key, error)
        return CompensateResult(released=False)
    logger.info("%s: %s undone", ref.summary, step.key)
    return CompensateResult(released=True)
