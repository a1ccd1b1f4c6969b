"""``AutoOpsActivities``: the AutoOpsAgentPolicy reconcile, which selects the clusters a policy
serves and records an agent per cluster as a compensation, its finalizer and its flip mapper."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from activities.autoops.agent import ClusterFailedError, serve_cluster
from activities.autoops.config import ref_secret_data, validate_policy
from activities.autoops.release import agent_compensation, release_cluster, release_objects
from activities.autoops.status import is_paused, is_unmanaged, paused_conditions, write_status
from activities.autoops.written import written_objects
from activities.binding import Compensation, Family, FamilyActivities, Primary
from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from activities.unknown_fields import warn_unknown_fields
from stackflow.controllers.autoops import (
    AUTOOPS_POLICY,
    AUTOOPS_POLICY_CONTROLLER,
    ELASTICSEARCH,
    RELEASE_CLUSTER_ACTIVITY,
)
from stackflow.kube.events import EVENT_ACTION_ACCESS_CHECK, EVENT_ASSOCIATION_ERROR, InvolvedObject
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    ObjectKey,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import NAMESPACES, SECRETS
from stackflow.models.objects import view
from stackflow.scope.selector import SelectorError
from stackflow.stack.access import InvalidServiceAccountError
from stackflow.stack.policies.autoops import (
    AutoOpsPolicy,
    Cluster,
    access_denied_reason,
    parse_policy,
    policy_status,
    select_clusters,
)

__all__ = ["FAMILIES", "NOT_READY_REQUEUE_SECONDS", "READY_RECHECK_SECONDS", "AutoOpsActivities"]

#: How soon a policy whose clusters or agents are not all ready is looked at again.
NOT_READY_REQUEUE_SECONDS = 10.0
#: How often a ready policy looks again: a new cluster, a label that now matches or a served
#: cluster's change is not named on the policy, so no watch wakes it for them.
READY_RECHECK_SECONDS = 120.0


def _now(context: ControllerContext) -> str:
    return context.clock().strftime("%Y-%m-%dT%H:%M:%SZ")


async def _access_denied(
    context: ControllerContext,
    policy: Mapping[str, Any],
    parsed: AutoOpsPolicy,
    matched: Sequence[Mapping[str, Any]],
) -> dict[str, str]:
    """The matched clusters the policy's ServiceAccount may not get (enforce-rbac-on-refs), with
    the reason each is skipped; ECK's Warning on the policy for each refusal."""
    meta = view(policy)
    denied: dict[str, str] = {}
    for es in matched:
        es_meta = view(es)
        key = f"{es_meta.namespace}/{es_meta.name}"
        try:
            allowed = await context.access.allowed(
                service_account=parsed.service_account_name,
                source_namespace=meta.namespace,
                target=ELASTICSEARCH,
                target_namespace=es_meta.namespace,
                target_name=es_meta.name,
            )
        except InvalidServiceAccountError as error:
            denied[key] = f"Failed trying to perform RBAC check: spec.{error}"
            continue
        if allowed:
            continue
        denied[key] = access_denied_reason(parsed)
        await context.events.warning(
            InvolvedObject.of(policy),
            reason=EVENT_ASSOCIATION_ERROR,
            message=(
                "AutoOps policy not allowed to access Elasticsearch cluster: "
                f"{meta.namespace}/{meta.name} to {key}"
            ),
            action=EVENT_ACTION_ACCESS_CHECK,
        )
    return denied


class AutoOpsActivities(FamilyActivities):
    """The AutoOpsAgentPolicy controller's activities: agents for the clusters a policy selects,
    each held as a compensation (``release_cluster``) until the cluster is no longer served."""

    @property
    def compensations(self) -> Mapping[str, Compensation]:
        """The one per-cluster release the table row lists."""
        return {RELEASE_CLUSTER_ACTIVITY: self.release_cluster}

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Bring the policy's agents in line with the clusters it selects, and report them: each
        served cluster is acquired as a compensation, each no longer kept is released now."""
        context, ref, policy = self.context, request.ref, primary
        meta = view(policy)
        current_status = dict(policy.get("status") or {})
        conditions = list(current_status.get("conditions") or [])
        if is_unmanaged(policy):
            # As ECK: not managed, so neither read further nor written, status included.
            return ReconcileResult(
                phase=Phase.READY, message="not managed", observed_generation=meta.generation
            )
        paused = is_paused(policy)
        await validate_policy(context, policy)
        await warn_unknown_fields(context, ref, policy)
        try:
            parsed = parse_policy(policy)
        except SelectorError as error:
            raise InvalidSpecError(str(error)) from error
        listed = await context.scoped.list(ELASTICSEARCH)
        clusters = {
            f"{view(item).namespace}/{view(item).name}": item
            for item in listed["items"]
            if not view(item).deletion_timestamp
        }
        namespace_labels = {
            view(item).name: dict(view(item).labels)
            for item in (await context.scoped.list(NAMESPACES))["items"]
        }
        candidates = [Cluster.of(obj) for obj in clusters.values()]
        matched = select_clusters(parsed, candidates, namespace_labels).matched
        denied = await _access_denied(context, policy, parsed, [clusters[key] for key in matched])
        selection = select_clusters(parsed, candidates, namespace_labels, access_denied=denied)
        written = await written_objects(context.scoped, meta.namespace, meta.name)
        agents_ready: dict[str, bool] = {}
        failures: dict[str, str] = {}
        pending = False
        ref_data = await ref_secret_data(context, policy)
        for key in selection.served:
            try:
                agents_ready[key], changes = await serve_cluster(
                    context, policy, clusters[key], ref_data, paused=paused
                )
                pending = pending or changes
            except ClusterFailedError as error:
                failures[key] = str(error)
        # A matched cluster that is not Ready keeps its agent (an upgrade must not churn its key).
        keep = set(selection.served) | set(selection.not_ready)
        held = sorted(set(selection.served) | (set(written) & keep))
        # The clusters no longer kept are released by the workflow, one compensation step each.
        # Paused (ECK): no clean-up, it would delete Deployments.
        release = sorted(set(written) - keep) if not paused else []
        status = policy_status(
            selection,
            agents_ready=agents_ready,
            errors=failures,
            observed_generation=meta.generation,
        )
        new_conditions, event = paused_conditions(
            conditions, paused=paused, pending=pending, now=_now(context)
        )
        if new_conditions:
            status["conditions"] = new_conditions
        await write_status(context, policy, status)
        if event is not None:
            record = context.events.warning if event["type"] == "Warning" else context.events.normal
            await record(
                InvolvedObject.of(policy),
                reason=event["reason"],
                message=event["message"],
                action=event["action"],
            )
        ready = status["phase"] in ("Ready", "NoMonitoredResources")
        return ReconcileResult(
            phase=Phase.READY if ready else Phase.RECONCILING,
            message=f"{status['phase']}: {status['readyCount']} agents ready",
            requeue_after_seconds=READY_RECHECK_SECONDS if ready else NOT_READY_REQUEUE_SECONDS,
            observed_generation=meta.generation,
            acquired=tuple(agent_compensation(key) for key in held),
            release_now=tuple(agent_compensation(key) for key in release),
            referenced=tuple(
                ObjectKey.of(
                    ELASTICSEARCH, namespace=key.partition("/")[0], name=key.partition("/")[2]
                )
                for key in selection.served
            ),
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """A deleted policy: invalidate its keys and delete its Secrets (the Deployments and
        ConfigMaps go with the policy through their ownerReferences).

        The workflow ran the recorded compensations first; this also releases what a run that
        never recorded them holds. Listed unscoped, as every finalizer lists its owner's labelled
        Secrets: the policy is gone and the Secrets are the operator's own, whatever the scope of
        their namespace now (ECK).
        """
        ref = request.ref
        written = await written_objects(
            self.context.unscoped, ref.namespace, ref.name, kinds=(SECRETS,)
        )
        deleted: list[str] = []
        for key in sorted(written):
            deleted.extend(await release_objects(self.context, written[key]))
        return FinalizeResult(deleted=tuple(deleted))

    async def release_cluster(self, request: CompensateInput) -> CompensateResult:
        """The compensation of one served cluster (``agent_compensation``): its API key
        invalidated, its agent's objects deleted."""
        return await release_cluster(self.context, request)

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """Every policy: each selects clusters cluster-wide, so any flip may add or remove one.
        Listed unscoped, as every flip mapper (the scope check then skips those out of scope)."""
        return list((await self.context.unscoped.list(AUTOOPS_POLICY))["items"])


FAMILIES: Mapping[str, Family] = {AUTOOPS_POLICY_CONTROLLER.name: AutoOpsActivities}
