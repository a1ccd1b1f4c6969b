"""The transport CA exchange with each related, visible peer: ``<local>-<peerNs>-<peer>-es-remote-ca``
in each namespace, owned by the cluster holding it (the Elasticsearch controller concatenates a
cluster's copies into ``<es>-es-remote-ca``, mounted as extra transport trust)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from activities.remoteclusters.outcome import Outcome
from activities.remoteclusters.secrets import delete_secret, owner_reference_of, write_secret
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.events import InvolvedObject
from stackflow.models.kinds import SECRETS
from stackflow.scope import equality_selector_string
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.elasticsearch.remote_clusters import (
    REMOTE_CA_SECRET_KEY,
    REMOTE_CA_TYPE,
    REMOTE_CLUSTER_NAME_LABEL,
    REMOTE_CLUSTER_NAMESPACE_LABEL,
    ClusterKey,
    cluster_key,
    remote_ca_copy_labels,
    remote_ca_copy_name,
    remote_ca_copy_peers,
)
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, TYPE_LABEL
from stackflow.stack.objects import decode_secret_data

__all__ = ["REASON_CA_NOT_FOUND", "copies_of", "held_copies", "revoke_trust", "sync_trust"]

REASON_CA_NOT_FOUND = "ClusterCaCertNotFound"


async def _transport_ca(context: ControllerContext, key: ClusterKey) -> str | None:
    namespace, name = key
    secret = await context.scoped.get_or_none(
        SECRETS, namespace=namespace, name=es_names.transport_certs_public_secret_name(name)
    )
    ca = decode_secret_data(secret).get(REMOTE_CA_SECRET_KEY)
    return ca.decode() if ca else None


def _copy_manifest(holder: Mapping[str, Any], peer: ClusterKey, ca: str) -> dict[str, Any]:
    namespace, name = cluster_key(holder)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": remote_ca_copy_name(name, peer),
            "namespace": namespace,
            "labels": remote_ca_copy_labels(name, peer),
            "ownerReferences": [owner_reference_of(holder)],
        },
        "type": "Opaque",
        "data": {REMOTE_CA_SECRET_KEY: base64.b64encode(ca.encode()).decode()},
    }


async def _place_copy(
    context: ControllerContext, holder: Mapping[str, Any], peer: ClusterKey, outcome: Outcome
) -> None:
    """Copy ``peer``'s transport CA next to ``holder`` (both visible, so both in scope)."""
    ca = await _transport_ca(context, peer)
    namespace, name = cluster_key(holder)
    if ca is None:
        outcome.note(f"no transport CA published by {peer[0]}/{peer[1]} yet", retry=True)
        await context.events.warning(
            InvolvedObject.of(
                {
                    "apiVersion": holder.get("apiVersion") or ELASTICSEARCH.api_version,
                    "kind": ELASTICSEARCH.kind,
                    "metadata": holder["metadata"],
                }
            ),
            reason=REASON_CA_NOT_FOUND,
            message=f"Cannot find CA certificate of remote cluster {peer[0]}/{peer[1]}",
        )
        return
    current = await context.scoped.get_or_none(
        SECRETS, namespace=namespace, name=remote_ca_copy_name(name, peer)
    )
    await write_secret(context, current, _copy_manifest(holder, peer, ca))


async def held_copies(context: ControllerContext, local: ClusterKey) -> list[ClusterKey]:
    """The peers whose CA ``local`` holds a copy of (its namespace, by labels)."""
    namespace, name = local
    selector = equality_selector_string({TYPE_LABEL: REMOTE_CA_TYPE, ES_CLUSTER_NAME_LABEL: name})
    listed = await context.scoped.list(SECRETS, namespace=namespace, label_selector=selector)
    peers = []
    for secret in listed["items"]:
        found = remote_ca_copy_peers(secret)
        if found is not None and found[0] == local:
            peers.append(found[1])
    return sorted(set(peers))


async def copies_of(context: ControllerContext, local: ClusterKey) -> list[ClusterKey]:
    """The (in-scope) clusters holding a copy of ``local``'s CA."""
    namespace, name = local
    selector = equality_selector_string(
        {
            TYPE_LABEL: REMOTE_CA_TYPE,
            REMOTE_CLUSTER_NAME_LABEL: name,
            REMOTE_CLUSTER_NAMESPACE_LABEL: namespace,
        }
    )
    listed = await context.scoped.list(SECRETS, label_selector=selector)
    holders = []
    for secret in listed["items"]:
        found = remote_ca_copy_peers(secret)
        if found is not None and found[1] == local:
            holders.append(found[0])
    return sorted(set(holders))


async def revoke_trust(context: ControllerContext, a: ClusterKey, b: ClusterKey) -> int:
    """Delete both copies of a pair's CA exchange, by name; how many existed."""
    here = await delete_secret(context, a[0], remote_ca_copy_name(a[1], b))
    there = await delete_secret(context, b[0], remote_ca_copy_name(b[1], a))
    return int(here) + int(there)


async def sync_trust(
    context: ControllerContext,
    es: Mapping[str, Any],
    peers: Mapping[ClusterKey, Mapping[str, Any]],
    outcome: Outcome,
) -> set[ClusterKey]:
    """Exchange CAs with every visible peer; the other clusters an exchange is held with, whose
    trust is revoked by their compensation (``release_peer``), a step of its own."""
    local = cluster_key(es)
    for peer in sorted(peers):
        await _place_copy(context, es, peer, outcome)
        await _place_copy(context, peers[peer], local, outcome)
    stale = (set(await held_copies(context, local)) | set(await copies_of(context, local))) - set(
        peers
    )
    if peers:
        outcome.note(f"CA exchanged with {len(peers)} clusters")
    if stale:
        outcome.note(f"trust revoked with {len(stale)} clusters")
    return stale
