"""``enforce-rbac-on-refs`` for remote clusters: a pair is kept only while each cluster's
ServiceAccount may get the other cluster (ECK checks both ways)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from activities.context import ControllerContext
from activities.remoteclusters.outcome import Outcome
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.events import EVENT_ASSOCIATION_ERROR, InvolvedObject
from stackflow.stack.access import (
    InvalidServiceAccountError,
    service_account_of,
)
from stackflow.stack.elasticsearch.remote_clusters import (
    ClusterKey,
    cluster_key,
    related_clusters,
)

__all__ = ["ACTION_REMOTE_CLUSTER_ASSOCIATION", "denied_peers"]

logger = logging.getLogger(__name__)


#: ECK's action of the Warning when a pair's ServiceAccounts may not get each other's cluster.
ACTION_REMOTE_CLUSTER_ASSOCIATION = "RemoteClusterAssociation"


async def _may_get(
    context: ControllerContext, source: Mapping[str, Any], target: Mapping[str, Any]
) -> bool:
    """Whether ``source``'s ServiceAccount may get ``target``; if not, ECK's Warning on
    ``source``. A ServiceAccount name no account can have is a no too: the pair stays apart."""
    source_namespace, source_name = cluster_key(source)
    target_namespace, target_name = cluster_key(target)
    try:
        allowed = await context.access.allowed(
            service_account=service_account_of(source),
            source_namespace=source_namespace,
            target=ELASTICSEARCH,
            target_namespace=target_namespace,
            target_name=target_name,
        )
    except InvalidServiceAccountError as error:
        logger.info("remote cluster access of %s not checked: %s", cluster_key(source), error)
        allowed = False
    if not allowed:
        await context.events.warning(
            InvolvedObject.of(
                {
                    "apiVersion": source.get("apiVersion") or ELASTICSEARCH.api_version,
                    "kind": ELASTICSEARCH.kind,
                    "metadata": source["metadata"],
                }
            ),
            reason=EVENT_ASSOCIATION_ERROR,
            message=(
                "Remote cluster association not allowed: "
                f"{source_namespace}/{source_name} to {target_namespace}/{target_name}"
            ),
            action=ACTION_REMOTE_CLUSTER_ASSOCIATION,
        )
    return allowed


async def denied_peers(
    context: ControllerContext,
    es: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    outcome: Outcome,
) -> set[ClusterKey]:
    """The related clusters ``es`` may not be paired with (enforce-rbac-on-refs): both
    ServiceAccounts must be allowed to get the other cluster, as in ECK."""
    if not context.access.enforced:
        return set()
    local = cluster_key(es)
    by_key = {cluster_key(cluster): cluster for cluster in clusters}
    denied: set[ClusterKey] = set()
    for peer in related_clusters(local, clusters):
        other = by_key.get(peer)
        if other is None:
            continue
        if not (await _may_get(context, es, other) and await _may_get(context, other, es)):
            denied.add(peer)
    if denied:
        # Looked at again soon, as a Pending association is: a grant is then seen in minutes,
        # where ECK waits for its 15-minute RBAC requeue.
        outcome.note(
            f"remote cluster association not allowed with {len(denied)} clusters", retry=True
        )
    return denied
