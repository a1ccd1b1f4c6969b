"""The node specs of one cluster: StatefulSets written within the change budget, and the steps
that change the running cluster, decided from what Kubernetes and Elasticsearch answer now.

The reconcile calls :func:`reconcile_node_specs` with the StatefulSets the builder wants. It reads
the cluster (health, nodes, shard copies, allocation settings, voting exclusions, node shutdowns),
writes the StatefulSets as :func:`~stackflow.stack.elasticsearch.orchestration.node_specs.statefulset_targets`
says, and, when none was written, returns the steps of
:func:`~stackflow.stack.elasticsearch.orchestration.node_specs.plan_changes` for the workflow to
run one by one (``activities.cluster_steps``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from activities.apply import ApplyOutcome, apply_object
from activities.context import ControllerContext
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.elastic.factory import ElasticsearchEndpoint
from stackflow.models.kinds import STATEFULSETS, Kind
from stackflow.models.objects import view
from stackflow.stack.elasticsearch.orchestration import (
    ClusterView,
    PodState,
    change_budget_from_spec,
    disabled_predicates,
    expectations_met,
    expected_statefulsets,
    pod_state_from_manifest,
    statefulset_state_from_manifest,
)
from stackflow.stack.elasticsearch.orchestration.node_specs import (
    ChangesPlan,
    NodeSpecsSnapshot,
    StatefulSetTargets,
    plan_changes,
    statefulset_targets,
)
from stackflow.stack.elasticsearch.orchestration.steps import DeletePod, Step
from stackflow.stack.elasticsearch.suspend import pods_to_delete_for_suspend
from stackflow.stack.labels import ES_CLUSTER_UUID_ANNOTATION

__all__ = ["NodeSpecsOutcome", "observe_cluster", "read_cluster", "reconcile_node_specs"]

logger = logging.getLogger("activities.elasticsearch_nodes")

#: The deletion message of a Pod named by ``eck.k8s.elastic.co/suspend`` (it restarts suspended).
SUSPEND_DELETE_MESSAGE = "Deleting pod to suspend it"
#: What the cluster state answers as the UUID of a cluster that has not formed yet.
UNFORMED_CLUSTER_UUID = "_na_"


@dataclass(frozen=True)
class NodeSpecsOutcome:
    """What the pass wrote and decided."""

    written: int
    targets: StatefulSetTargets
    changes: ChangesPlan
    cluster: ClusterView | None
    steps: tuple[Step, ...]
    #: Orchestration held back (the annotation, or volumes being recreated): nothing decided.
    paused: bool = False

    @property
    def in_progress(self) -> bool:
        """Whether the node specs are still being changed (look again soon)."""
        return bool(
            self.written or self.steps or self.targets.requeue_reasons or self.changes.in_progress
        )

    @property
    def requeue_reasons(self) -> tuple[str, ...]:
        """Why the pass looks again, ECK's reasons, each once."""
        return tuple(dict.fromkeys((*self.targets.requeue_reasons, *self.changes.requeue_reasons)))


async def read_cluster(
    context: ControllerContext, endpoint: ElasticsearchEndpoint, *, with_uuid: bool = True
) -> tuple[ClusterView | None, str | None]:
    """What Elasticsearch answers for the decisions, and (``with_uuid``) the cluster's UUID once
    it has formed; once it is recorded, it is not asked again.

    None when any call fails: a partial view could let a decision move data it cannot see.
    """
    async with context.elasticsearch_session(endpoint) as api:
        try:
            view_ = ClusterView(
                health=await api.orchestration_health(),
                nodes=await api.nodes(),
                shards=await api.shards(),
                allocation=await api.allocation_settings(),
                voting_exclusions=await api.voting_exclusions(),
                shutdowns=await api.node_shutdowns(),
            )
            uuid = await api.cluster_uuid() if with_uuid else None
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            logger.info(
                "cluster %s/%s not readable for orchestration: %s",
                endpoint.namespace,
                endpoint.name,
                error,
            )
            return None, None
    return view_, (uuid if uuid and uuid != UNFORMED_CLUSTER_UUID else None)


async def observe_cluster(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    resource: Kind,
    endpoint: ElasticsearchEndpoint | None,
) -> tuple[ClusterView | None, Mapping[str, Any]]:
    """What Elasticsearch answers (None when it does not), and ``es`` as it is after recording
    the cluster's UUID once it has formed (ECK's zen2 bootstrap is over: the masters' config drops
    ``cluster.initial_master_nodes``, without a restart since the setting is outside the hash)."""
    if endpoint is None:
        return None, es
    meta = view(es)
    recorded = ES_CLUSTER_UUID_ANNOTATION in meta.annotations
    cluster, uuid = await read_cluster(context, endpoint, with_uuid=not recorded)
    if uuid is None or recorded:
        return cluster, es
    patched = await context.scoped.merge_patch(
        resource,
        {"metadata": {"annotations": {ES_CLUSTER_UUID_ANNOTATION: uuid}}},
        namespace=meta.namespace,
        name=meta.name,
    )
    return cluster, patched


def _with_pod_uids(
    steps: Sequence[Step], pods: Mapping[str, Mapping[str, Any]]
) -> tuple[Step, ...]:
    """Each Pod deletion carries the UID of the Pod it was decided for (a precondition)."""
    filled: list[Step] = []
    for step in steps:
        if isinstance(step, DeletePod) and step.pod in pods:
            step = dataclasses.replace(step, uid=view(pods[step.pod]).uid)
        filled.append(step)
    return tuple(filled)


def _target_statefulset(
    desired: Mapping[str, Any], current: Mapping[str, Any] | None, targets: StatefulSetTargets
) -> dict[str, Any]:
    """The StatefulSet to write: the new one, or the current one with only its replicas changed."""
    name = view(desired).name
    base = desired if name in targets.new_template or current is None else current
    # New maps along the path it changes only (the rest is shared with ``base``, never changed).
    written = dict(base)
    written.pop("status", None)
    written["spec"] = {
        **(written.get("spec") or {}),
        "replicas": targets.replicas.get(name, int((desired.get("spec") or {}).get("replicas", 0))),
    }
    return written


async def reconcile_node_specs(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    resource: Kind,
    desired_statefulsets: Sequence[Mapping[str, Any]],
    statefulsets: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    cluster: ClusterView | None,
    paused: bool = False,
    suspended: frozenset[str] = frozenset(),
) -> NodeSpecsOutcome:
    """Write the StatefulSets within the budget, then decide the steps for the running cluster.

    ``cluster`` is what :func:`observe_cluster` read (None: Elasticsearch did not answer).
    ``paused`` (``eck.k8s.elastic.co/pause-orchestration``, or a StatefulSet being recreated for
    its volumes) writes no StatefulSet and decides no step. ``suspended`` Pods
    (``eck.k8s.elastic.co/suspend``) running Elasticsearch are deleted first, to come back
    holding in their suspend init container.
    """
    by_name = {view(p).name: p for p in pods}
    suspend_steps = _with_pod_uids(
        [
            DeletePod(name, SUSPEND_DELETE_MESSAGE)
            for name in pods_to_delete_for_suspend(pods, suspended)
        ],
        by_name,
    )
    if paused:
        return NodeSpecsOutcome(
            0,
            StatefulSetTargets(write=False, replicas={}, new_template=frozenset()),
            ChangesPlan(),
            cluster,
            suspend_steps,
            paused=True,
        )
    meta = view(es)
    spec: Mapping[str, Any] = es.get("spec") or {}
    statefulset_states = tuple(statefulset_state_from_manifest(s) for s in statefulsets)
    pod_states: tuple[PodState, ...] = tuple(pod_state_from_manifest(p) for p in pods)
    snapshot = NodeSpecsSnapshot(
        spec_version=str(spec.get("version", "")),
        status_version=str((es.get("status") or {}).get("version", "")),
        budget=change_budget_from_spec(spec),
        expected=expected_statefulsets(meta.name, spec.get("nodeSets") or ()),
        statefulsets=statefulset_states,
        pods=pod_states,
        cluster=cluster,
        expectations=expectations_met(
            statefulset_states,
            pod_states,
            awaited_deletions=[pod.name for pod in pod_states if pod.terminating],
        ),
        disabled_predicates=disabled_predicates(meta.annotations),
        shutdown_reason=meta.resource_version or "",
    )
    targets = statefulset_targets(snapshot)
    written = 0
    if targets.write:
        current = {view(s).name: s for s in statefulsets}
        for desired in desired_statefulsets:
            # The StatefulSet as this reconcile listed it (None: none yet): no read before the write.
            listed = current.get(view(desired).name)
            target = _target_statefulset(desired, listed, targets)
            applied = await apply_object(context.scoped, STATEFULSETS, target, current=listed)
            if applied.outcome is not ApplyOutcome.UNCHANGED:
                written += 1
    if written:
        # The StatefulSet controller must see the write before its revisions can be trusted.
        return NodeSpecsOutcome(written, targets, ChangesPlan(), cluster, suspend_steps)
    changes = plan_changes(snapshot)
    # A suspended Pod the changes also delete is deleted once.
    steps = suspend_steps + tuple(
        step
        for step in _with_pod_uids(changes.steps, by_name)
        if not (isinstance(step, DeletePod) and step.pod in suspended)
    )
    return NodeSpecsOutcome(written, targets, changes, cluster, steps)
