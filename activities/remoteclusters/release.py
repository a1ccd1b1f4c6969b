"""Releasing what a cluster holds with one peer, the saga's compensation (``release_peer``).

A reconcile records ``peer_compensation(peer)`` for every related, visible peer it exchanges trust
(and keys) with, and reports as ``release_now`` every other cluster it still holds an exchange or
a key with: a peer gone, out of scope, no longer related, or one the ServiceAccounts may not pair
it with. The workflow runs ``release_peer`` for each, a step of its history; and for every recorded
peer when the cluster itself leaves scope, or before its finalizer.

The release deletes both CA copies by name (one may sit in a namespace out of scope: it is never
read, and trust must not outlive the operator's oversight), invalidates the cross-cluster keys
either side holds for the other where that side is visible (an out-of-scope cluster's
Elasticsearch is never dialled: a key it holds goes when it comes back), and drops the peer's keys
from the cluster's own API keys Secret while the cluster is in scope.
"""

from __future__ import annotations

from activities.context import ControllerContext
from activities.remoteclusters.clusters import visible_clusters
from activities.remoteclusters.keys import drop_unreachable_keys, sync_keys
from activities.remoteclusters.outcome import Outcome
from activities.remoteclusters.trust import revoke_trust
from stackflow.controllers.remoteclusters import RELEASE_PEER_ACTIVITY
from stackflow.models.engine import CompensateInput, CompensateResult, CompensationStep
from stackflow.stack.elasticsearch.remote_clusters import ClusterKey, cluster_key

__all__ = ["peer_compensation", "release_peer"]


def peer_compensation(peer: ClusterKey) -> CompensationStep:
    """The saga step that releases what a cluster holds with ``peer``."""
    namespace, name = peer
    return CompensationStep(
        activity=RELEASE_PEER_ACTIVITY,
        key=f"peer/{namespace}/{name}",
        data={"namespace": namespace, "name": name},
    )


async def release_peer(context: ControllerContext, request: CompensateInput) -> CompensateResult:
    """The compensation of one peer: trust revoked both ways, keys between the two invalidated
    and dropped where the operator may reach them."""
    local: ClusterKey = (request.ref.namespace, request.ref.name)
    peer: ClusterKey = (
        str(request.step.data.get("namespace", "")),
        str(request.step.data.get("name", "")),
    )
    revoked = await revoke_trust(context, local, peer)
    visible = {cluster_key(es): es for es in await visible_clusters(context)}
    outcome = Outcome()
    # No key is expected between the two any more, whichever side holds it: each visible side is
    # asked as if the other did not exist. One not reachable keeps them for its next reconcile.
    for server, client in ((local, peer), (peer, local)):
        if server in visible:
            others = [es for key, es in visible.items() if key != client]
            await sync_keys(context, visible[server], others, outcome, only_client=client)
    if local in visible:
        reachable = {key: es for key, es in visible.items() if key != peer}
        await drop_unreachable_keys(context, visible[local], reachable)
    changed_keys = any(note.startswith("API keys in") for note in outcome.notes)
    return CompensateResult(released=revoked > 0 or changed_keys)
