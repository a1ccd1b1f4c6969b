"""The remote-cluster controller (ECK's ``remotecluster-controller``), a second row over Elasticsearch.

Every Elasticsearch is reconciled as a potential party to remote-cluster relationships: as a
client (``spec.remoteClusters`` → ``cluster.remote.<alias>.seeds``), and as a server whose
clients are found by scanning the other clusters' specs (the transport CA exchange both ways,
cross-cluster API keys). It shares its primary kind with the Elasticsearch and license
controllers; its workflows are ``remotecluster/<ns>/<name>``, apart from theirs.

Not gated by the table: a cluster without any relationship must get neither a license wait nor a
Warning. The reconcile checks the enterprise license itself, only when a relationship exists, and
then waits in phase ``WaitingForLicense``, which a license arrival wakes (the watchers signal every
workflow in that phase). It is woken by the per-peer remote CA copies (both the cluster holding
one and the peer it trusts), by the clusters its spec declares (the reference index), and by
namespace flips (``flip_clusters``: the flipped namespace's clusters, the remotes they declare,
and the clusters elsewhere that declare one of them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.controllers.table import ChildWatch, Controller, FlipStrategy, Gate
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import SECRETS
from stackflow.stack.elasticsearch.remote_clusters import (
    REMOTE_CA_SELECTOR,
    remote_ca_copy_peers,
    remote_cluster_refs,
)

__all__ = [
    "RELEASE_PEER_ACTIVITY",
    "REMOTE_CLUSTER_CONTROLLER",
    "declared_remotes",
    "remote_ca_owners",
]


def remote_ca_owners(child: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """The clusters a remote CA copy concerns: the one holding it and the peer it trusts.

    Either one's reconcile restores (or removes) the copy, so a change wakes both.
    """
    peers = remote_ca_copy_peers(child)
    if peers is None:
        return ()
    local, remote = peers
    return (
        (NamespacedName(*local), NamespacedName(*remote))
        if local != remote
        else (NamespacedName(*local),)
    )


def declared_remotes(es: Mapping[str, Any]) -> list[ObjectKey]:
    """The clusters ``spec.remoteClusters`` names (namespace defaulted): a change to one of them
    (created, its version, deleted) wakes the client."""
    seen: dict[tuple[str, str], ObjectKey] = {}
    for ref in remote_cluster_refs(es):
        seen.setdefault(
            ref.key, ObjectKey.of(ELASTICSEARCH, namespace=ref.namespace, name=ref.name)
        )
    return list(seen.values())


#: The compensation that releases what a cluster holds with one peer: the CA exchange (both copies)
#: and the cross-cluster API keys between the two. Recorded per related, visible peer.
RELEASE_PEER_ACTIVITY = "remotecluster.release_peer"

REMOTE_CLUSTER_CONTROLLER = Controller(
    name="remotecluster",
    primary=ELASTICSEARCH,
    gate=Gate.NONE,
    children=(
        ChildWatch(kind=SECRETS, owners=remote_ca_owners, label_selector=REMOTE_CA_SELECTOR),
    ),
    references=declared_remotes,
    reference_kinds=(ELASTICSEARCH,),
    flip=FlipStrategy.CONTROLLER,
    # It writes cluster settings and API keys through the clusters' HTTP APIs: not local.
    local_step=False,
    compensations=(RELEASE_PEER_ACTIVITY,),
    # Remote CAs and API keys follow a flip a second later: nothing a user waits on.
    fast_flip=False,
)
