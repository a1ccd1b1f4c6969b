"""``RemoteClusterActivities``: one cluster's remote-cluster relationships (seeds, the CA exchange,
cross-cluster API keys), each related peer recorded as a compensation, its finalizer and its flip
mapper."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.binding import Compensation, Family, FamilyActivities, Primary
from activities.context import ControllerContext
from activities.kinds import involved_reference
from activities.remoteclusters.access import denied_peers
from activities.remoteclusters.clusters import visible_clusters
from activities.remoteclusters.keys import drop_unreachable_keys, stored_keys, sync_keys
from activities.remoteclusters.outcome import Outcome
from activities.remoteclusters.release import peer_compensation, release_peer
from activities.remoteclusters.secrets import delete_secret
from activities.remoteclusters.seeds import sync_settings
from activities.remoteclusters.trust import copies_of, held_copies, sync_trust
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.controllers.remoteclusters import RELEASE_PEER_ACTIVITY, REMOTE_CLUSTER_CONTROLLER
from stackflow.kube.events import InvolvedObject
from stackflow.licensing.model import EVENT_ACTION_LICENSE_CHECK
from stackflow.models.engine import (
    CompensateInput,
    CompensateResult,
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.objects import view
from stackflow.stack.access import RBAC_RECHECK_SECONDS
from stackflow.stack.elasticsearch.remote_clusters import (
    cluster_key,
    enterprise_disabled_event,
    flip_clusters,
    has_relationship,
    read_managed_aliases,
    related_clusters,
    remote_ca_copy_name,
    remote_cluster_refs,
)

__all__ = ["FAMILIES", "RETRY_SECONDS", "RemoteClusterActivities"]

#: How soon a cluster that could not be asked (or a peer without a CA yet) is looked at again.
RETRY_SECONDS = 15.0


async def _license_wait(context: ControllerContext, es: Mapping[str, Any]) -> ReconcileResult:
    """Unlicensed with a relationship: ECK's Warning on a cluster declaring remotes, nothing
    applied, and the phase a license arrival wakes."""
    event = enterprise_disabled_event(es, enterprise_enabled=False)
    if event is not None:
        ref = REMOTE_CLUSTER_CONTROLLER.ref_of(es)
        await context.events.warning(
            InvolvedObject.of(involved_reference(ref, es)),
            reason=event.reason,
            message=event.message,
            action=EVENT_ACTION_LICENSE_CHECK,
        )
    return ReconcileResult(
        phase=Phase.WAITING_FOR_LICENSE,
        message="remote clusters need an enterprise license; nothing applied",
        observed_generation=view(es).generation,
    )


class RemoteClusterActivities(FamilyActivities):
    """The remote-cluster controller's activities: one cluster's relationships, each peer held as
    a compensation (``release_peer``) until the pair is gone."""

    @property
    def compensations(self) -> Mapping[str, Compensation]:
        """The one per-peer release the table row lists."""
        return {RELEASE_PEER_ACTIVITY: self.release_peer}

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Bring one cluster's remote-cluster relationships in line with the specs."""
        context, es = self.context, primary
        local = cluster_key(es)
        clusters = await visible_clusters(context)
        held = await held_copies(context, local)
        _, stored = await stored_keys(context, local)
        # Servers it still holds a key of: a key must be invalidated even once nothing else is left.
        key_servers = {(entry.namespace, entry.name) for entry in stored.values()}
        managed = read_managed_aliases(view(es).annotations)
        if not has_relationship(
            local, clusters, managed_aliases=managed, held_copies=[*held, *key_servers]
        ):
            return ReconcileResult(
                phase=Phase.READY,
                message="no remote clusters",
                observed_generation=view(es).generation,
            )
        if not (await context.licenses.verdict()).licensed:
            return await _license_wait(context, es)
        outcome = Outcome()
        await sync_settings(context, es, outcome)
        # A pair the ServiceAccounts may not see each other in (enforce-rbac-on-refs) counts as
        # gone from here on: trust revoked, keys invalidated and dropped (the seeds stay, as in ECK).
        denied = await denied_peers(context, es, clusters, outcome)
        visible = {cluster_key(cluster): cluster for cluster in clusters}
        clusters = [cluster for cluster in clusters if cluster_key(cluster) not in denied]
        by_key = {cluster_key(cluster): cluster for cluster in clusters}
        peers = {peer: by_key[peer] for peer in related_clusters(local, clusters) if peer in by_key}
        stale = await sync_trust(context, es, peers, outcome)
        await sync_keys(context, es, clusters, outcome)
        # As a client: the servers it declares with ``apiKey`` and those it still holds a key of
        # (related or not any more), when visible.
        servers = {r.key for r in remote_cluster_refs(es) if r.uses_api_key} | key_servers
        for server in sorted(servers & set(by_key) - {local}):
            await sync_keys(context, by_key[server], clusters, outcome, only_client=local)
        # A server it may not be paired with keeps none of its keys: asked as if it declared none.
        others = [cluster for cluster in clusters if cluster_key(cluster) != local]
        for server in sorted(servers & denied):
            await sync_keys(context, visible[server], others, outcome, only_client=local)
        await drop_unreachable_keys(context, es, by_key)
        # No watch sees a Role or RoleBinding change: with enforce-rbac-on-refs, look again later.
        recheck = RBAC_RECHECK_SECONDS if context.access.enforced else None
        # Each peer is held as a compensation; every other cluster an exchange or a key is still
        # held with is released now, by the workflow, one step each (trust revoked, keys dropped).
        released = (stale | key_servers) - set(peers) - {local}
        return ReconcileResult(
            phase=Phase.RECONCILING if outcome.retry else Phase.READY,
            message="; ".join(outcome.notes) or "remote clusters in line",
            requeue_after_seconds=RETRY_SECONDS if outcome.retry else recheck,
            observed_generation=view(es).generation,
            acquired=tuple(peer_compensation(peer) for peer in sorted(peers)),
            release_now=tuple(peer_compensation(peer) for peer in sorted(released)),
        )

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """A deleted cluster: revoke its trust everywhere it was exchanged (in scope), invalidate
        the keys it held for clients or clients held in its peers, drop its keys from clients'
        Secrets. The workflow ran the recorded compensations first; this also covers a run that
        never recorded them.

        Its own copies and API keys Secret go with it (ownerReferences).
        """
        context = self.context
        ref = request.ref
        local = (ref.namespace, ref.name)
        deleted: list[str] = []
        holders = await copies_of(context, local)
        for holder in holders:
            if await delete_secret(context, holder[0], remote_ca_copy_name(holder[1], local)):
                deleted.append(f"Secret {holder[0]}/{remote_ca_copy_name(holder[1], local)}")
        clusters = await visible_clusters(context)
        visible = {cluster_key(es): es for es in clusters}
        outcome = Outcome()
        for peer in sorted(set(holders) | set(related_clusters(local, clusters))):
            cluster = visible.get(peer)
            if cluster is None:
                continue
            # The keys it held in a server it was a client of are expected by nobody now, and a
            # client of it keeps no key of a server that is gone.
            await sync_keys(context, cluster, clusters, outcome, only_client=local)
            await drop_unreachable_keys(context, cluster, visible)
        return FinalizeResult(deleted=tuple(deleted))

    async def release_peer(self, request: CompensateInput) -> CompensateResult:
        """The compensation of one peer (``peer_compensation``)."""
        return await release_peer(self.context, request)

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """The clusters a flip of ``namespace`` concerns (``flip_clusters``), listed unscoped: the
        namespace may just have left scope, and a declared remote may live anywhere."""
        context = self.context
        clusters = (await context.unscoped.list(ELASTICSEARCH))["items"]
        wanted = set(flip_clusters(namespace, clusters))
        found = [es for es in clusters if cluster_key(es) in wanted]
        # A declared remote that does not exist is in ``wanted`` too: nothing to reconcile there.
        return found


FAMILIES: Mapping[str, Family] = {REMOTE_CLUSTER_CONTROLLER.name: RemoteClusterActivities}
