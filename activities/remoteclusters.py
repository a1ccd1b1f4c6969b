"""The remote-cluster controller's activities: reconcile, finalize and its flip mapper.

A reconcile of one cluster handles every relationship it is party to, so that either side's
reconcile converges a pair (ECK's ``remotecluster`` controller and the remote-cluster part of its
Elasticsearch controller, in one place):

* as a client: ``cluster.remote.<alias>.seeds`` written through ``PUT _cluster/settings``
  (persistent), aliases removed from the spec set to null, the managed-remote-clusters
  annotation kept in step;
* with each related peer (a cluster it declares, or one declaring it) that is visible: the
  transport CA exchanged both ways (``<local>-<peerNs>-<peer>-es-remote-ca`` in each namespace,
  owned by the cluster holding it). The Elasticsearch controller concatenates a cluster's copies
  into ``<es>-es-remote-ca``, mounted as extra transport trust;
* cross-cluster API keys (8.10+, ``apiKey`` set) in the server, named
  ``eck-<clientNs>-<client>-<alias>``, the encoded key stored in the client's
  ``<client>-es-remote-api-keys`` Secret; keys nobody expects are invalidated.

Scope (DESIGN principle 4, ECK's ``FilterClient``): every read goes through the scoped client, so
a peer whose namespace left scope is not found and the relationship counts as gone. What the
operator made for it is revoked: its remote CA copies are deleted in both namespaces, the one in
the out-of-scope namespace by its name, without reading it (ECK's deletes pass through its
filter too; trust must not outlive the operator's oversight), and the client's stored key for
that server is dropped. Nothing is created or updated in an out-of-scope namespace, and an
out-of-scope cluster's Elasticsearch is never dialled (its credentials are not read): a key held
by an out-of-scope server is invalidated when it comes back (its encoded value is gone from the
client's Secret, so a new key replaces it).

With ``enforce-rbac-on-refs`` a pair is kept only while each cluster's ServiceAccount may get the
other cluster (ECK checks both ways); a refused pair counts as gone, as a peer out of scope does.

Enterprise only: with a relationship and no license, a cluster declaring remotes gets ECK's
Warning (``AssociationError``, action ``LicenseCheck``), nothing is applied, and the workflow waits
in phase ``WaitingForLicense``, which a license arrival wakes at once. A cluster without any
relationship is never checked.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.associations import EVENT_ASSOCIATION_ERROR
from activities.binding import ControllerActivities
from activities.context import ControllerContext, ElasticsearchEndpoint
from activities.elasticsearch import operator_endpoint
from activities.kinds import involved_reference
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.controllers.remoteclusters import REMOTE_CLUSTER_CONTROLLER
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors
from stackflow.kube.events import InvolvedObject
from stackflow.licensing.model import EVENT_ACTION_LICENSE_CHECK
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.access import (
    RBAC_RECHECK_SECONDS,
    InvalidServiceAccountError,
    service_account_of,
)
from stackflow.stack.elasticsearch import names as es_names
from stackflow.stack.elasticsearch.remote_clusters import (
    API_KEY_NAME_PREFIX,
    METADATA_NAME,
    METADATA_NAMESPACE,
    REMOTE_CA_SECRET_KEY,
    REMOTE_CA_TYPE,
    REMOTE_CLUSTER_NAME_LABEL,
    REMOTE_CLUSTER_NAMESPACE_LABEL,
    ClusterKey,
    ExistingKey,
    StoredKey,
    api_keys_secret_contents,
    api_keys_secret_labels,
    cluster_key,
    enterprise_disabled_event,
    expected_api_keys,
    flip_clusters,
    has_relationship,
    managed_aliases_annotation_patch,
    plan_api_keys,
    read_managed_aliases,
    read_stored_keys,
    related_clusters,
    remote_api_keys_secret_name,
    remote_ca_copy_labels,
    remote_ca_copy_name,
    remote_ca_copy_peers,
    remote_cluster_refs,
    remote_cluster_settings,
    supports_api_keys,
)
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, TYPE_LABEL
from stackflow.stack.objects import controller_owner_reference, decode_secret_data

__all__ = ["IMPLEMENTATIONS", "RETRY_SECONDS", "finalize", "flip_mapper", "reconcile"]

logger = logging.getLogger(__name__)

#: How soon a cluster that could not be asked (or a peer without a CA yet) is looked at again.
RETRY_SECONDS = 15.0
REASON_CA_NOT_FOUND = "ClusterCaCertNotFound"
#: ECK's action of the Warning when a pair's ServiceAccounts may not get each other's cluster.
ACTION_REMOTE_CLUSTER_ASSOCIATION = "RemoteClusterAssociation"


@dataclass
class _Outcome:
    """What one reconcile did, for its message, and whether it must look again soon."""

    notes: list[str] = field(default_factory=list)
    retry: bool = False

    def note(self, text: str, *, retry: bool = False) -> None:
        self.notes.append(text)
        self.retry = self.retry or retry


def _owner(es: Mapping[str, Any]) -> dict[str, Any]:
    return controller_owner_reference(
        {
            "apiVersion": es.get("apiVersion") or ELASTICSEARCH.api_version,
            "kind": es.get("kind") or ELASTICSEARCH.kind,
            "metadata": es["metadata"],
        }
    )


async def _visible_clusters(context: ControllerContext) -> list[dict[str, Any]]:
    """Every cluster in a managed namespace that is not being deleted (the scoped list)."""
    listed = await context.scoped.list(ELASTICSEARCH)
    return [es for es in listed["items"] if not view(es).deletion_timestamp]


async def _delete_secret(context: ControllerContext, namespace: str, name: str) -> bool:
    """Delete a Secret by name (no read first: it may sit in a namespace out of scope)."""
    try:
        await context.scoped.delete(SECRETS, namespace=namespace, name=name)
    except errors.NotFound:
        return False
    return True


async def _write_secret(
    context: ControllerContext, current: Mapping[str, Any] | None, desired: dict[str, Any]
) -> bool:
    """Create or replace a Secret built whole here; no write when it is unchanged."""
    meta = view(desired)
    if current is None:
        await context.scoped.create(SECRETS, desired, namespace=meta.namespace)
        return True
    kept = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            **{k: v for k, v in current["metadata"].items() if k in ("resourceVersion", "uid")},
            **desired["metadata"],
        },
        "type": desired.get("type", "Opaque"),
        "data": desired.get("data") or {},
    }
    comparable = {
        "labels": dict(view(current).labels),
        "annotations": dict(view(current).annotations),
        "data": dict(current.get("data") or {}),
        "owners": list(current["metadata"].get("ownerReferences") or []),
    }
    wanted = {
        "labels": dict(desired["metadata"].get("labels") or {}),
        "annotations": dict(desired["metadata"].get("annotations") or {}),
        "data": dict(desired.get("data") or {}),
        "owners": list(desired["metadata"].get("ownerReferences") or []),
    }
    if comparable == wanted:
        return False
    await context.scoped.replace(SECRETS, kept, namespace=meta.namespace, name=meta.name)
    return True


async def _endpoint_for(
    context: ControllerContext, es: Mapping[str, Any]
) -> tuple[ElasticsearchEndpoint | None, str]:
    """How to reach ``es``'s HTTP API (its internal user, its HTTP CA), or None and why not."""
    namespace, name = cluster_key(es)
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        return None, f"{namespace}/{name} has no internal user yet"
    return endpoint, ""


# --- client side: seeds ----------------------------------------------------------------------------


async def _sync_settings(
    context: ControllerContext, es: Mapping[str, Any], outcome: _Outcome
) -> None:
    """Write the client's remote cluster seeds (and nulls for removed aliases), then record the
    aliases it manages in the annotation; nothing when there is nothing to say."""
    refs = remote_cluster_refs(es)
    managed = read_managed_aliases(view(es).annotations)
    version = str((es.get("spec") or {}).get("version", ""))
    settings = remote_cluster_settings(refs, managed, version)
    if not settings:
        return
    endpoint, why = await _endpoint_for(context, es)
    if endpoint is None:
        outcome.note(f"remote cluster settings not written: {why}", retry=True)
        return
    async with context.elasticsearch_session(endpoint) as api:
        try:
            await api.put_cluster_settings(settings)
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            logger.info("remote cluster settings of %s not written: %s", cluster_key(es), error)
            outcome.note("remote cluster settings not written: cluster not reachable", retry=True)
            return
    patch = managed_aliases_annotation_patch(ref.alias for ref in refs)
    current = view(es).annotations
    if any(current.get(key) != value for key, value in patch.items()):
        namespace, name = cluster_key(es)
        await context.scoped.merge_patch(
            ELASTICSEARCH, {"metadata": {"annotations": patch}}, namespace=namespace, name=name
        )
    outcome.note(f"{len(refs)} remote clusters configured")


# --- the remote CA exchange ----------------------------------------------------------------------


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
            "ownerReferences": [_owner(holder)],
        },
        "type": "Opaque",
        "data": {REMOTE_CA_SECRET_KEY: base64.b64encode(ca.encode()).decode()},
    }


async def _place_copy(
    context: ControllerContext, holder: Mapping[str, Any], peer: ClusterKey, outcome: _Outcome
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
    await _write_secret(context, current, _copy_manifest(holder, peer, ca))


async def _held_copies(context: ControllerContext, local: ClusterKey) -> list[ClusterKey]:
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


async def _copies_of(context: ControllerContext, local: ClusterKey) -> list[ClusterKey]:
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


async def _revoke_trust(context: ControllerContext, a: ClusterKey, b: ClusterKey) -> int:
    """Delete both copies of a pair's CA exchange, by name; how many existed."""
    here = await _delete_secret(context, a[0], remote_ca_copy_name(a[1], b))
    there = await _delete_secret(context, b[0], remote_ca_copy_name(b[1], a))
    return int(here) + int(there)


async def _sync_trust(
    context: ControllerContext,
    es: Mapping[str, Any],
    peers: Mapping[ClusterKey, Mapping[str, Any]],
    outcome: _Outcome,
) -> None:
    """Exchange CAs with every visible peer; revoke the exchange with every other one."""
    local = cluster_key(es)
    for peer in sorted(peers):
        await _place_copy(context, es, peer, outcome)
        await _place_copy(context, peers[peer], local, outcome)
    stale = (set(await _held_copies(context, local)) | set(await _copies_of(context, local))) - set(
        peers
    )
    revoked = 0
    for peer in sorted(stale):
        revoked += await _revoke_trust(context, local, peer)
    if peers:
        outcome.note(f"CA exchanged with {len(peers)} clusters")
    if stale:
        outcome.note(f"trust revoked with {len(stale)} clusters")


# --- cross-cluster API keys --------------------------------------------------------------------------


async def _stored_keys(
    context: ControllerContext, client: ClusterKey
) -> tuple[dict[str, Any] | None, dict[str, StoredKey]]:
    secret = await context.scoped.get_or_none(
        SECRETS, namespace=client[0], name=remote_api_keys_secret_name(client[1])
    )
    return secret, read_stored_keys(secret)


async def _write_stored_keys(
    context: ControllerContext,
    client: Mapping[str, Any],
    current: Mapping[str, Any] | None,
    stored: Mapping[str, StoredKey],
) -> None:
    """Write the client's API keys Secret for ``stored`` (delete it when empty)."""
    namespace, name = cluster_key(client)
    secret_name = remote_api_keys_secret_name(name)
    contents = api_keys_secret_contents(stored)
    if contents is None:
        if current is not None:
            await _delete_secret(context, namespace, secret_name)
        return
    data, annotations = contents
    desired = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name,
            "namespace": namespace,
            "labels": api_keys_secret_labels(name),
            "annotations": annotations,
            "ownerReferences": [_owner(client)],
        },
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }
    await _write_secret(context, current, desired)


async def _sync_keys(
    context: ControllerContext,
    server: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    outcome: _Outcome,
    *,
    only_client: ClusterKey | None = None,
) -> None:
    """Make ``server`` hold exactly the keys its (visible) clients expect, and each client's
    Secret hold their encoded values. ``only_client`` limits the work to one client's keys."""
    server_key = cluster_key(server)
    if not supports_api_keys(str((server.get("spec") or {}).get("version", ""))):
        return
    expected = [
        key
        for key in expected_api_keys(server, clusters)
        if only_client is None or key.client == only_client
    ]
    endpoint, why = await _endpoint_for(context, server)
    if endpoint is None:
        # Only a key someone waits for makes it worth looking again soon.
        outcome.note(f"API keys not reconciled: {why}", retry=bool(expected))
        return
    async with context.elasticsearch_session(endpoint) as api:
        try:
            existing = [
                ExistingKey(
                    id=str(key.get("id", "")),
                    name=str(key.get("name", "")),
                    metadata=dict(key.get("metadata") or {}),
                )
                for key in await api.active_api_keys(f"{API_KEY_NAME_PREFIX}*")
            ]
            if only_client is not None:
                existing = [
                    key
                    for key in existing
                    if (key.metadata.get(METADATA_NAMESPACE), key.metadata.get(METADATA_NAME))
                    == only_client
                ]
            by_key = {cluster_key(es): es for es in clusters}
            clients = sorted(
                {key.client for key in expected}
                | {
                    (
                        str(key.metadata.get(METADATA_NAMESPACE)),
                        str(key.metadata.get(METADATA_NAME)),
                    )
                    for key in existing
                    if key.managed
                }
            )
            secrets: dict[ClusterKey, tuple[dict[str, Any] | None, dict[str, StoredKey]]] = {}
            for client in clients:
                if client in by_key:
                    secrets[client] = await _stored_keys(context, client)
            stored_ids = {
                (client, alias): entry.id
                for client, (_, entries) in secrets.items()
                for alias, entry in entries.items()
                if (entry.namespace, entry.name) == server_key
            }
            plan = plan_api_keys(expected, existing, stored_ids)
            if plan.invalidate:
                await api.invalidate_api_key(ids=plan.invalidate)
            for key_id, want in plan.update:
                await api.update_cross_cluster_api_key(
                    key_id, access=want.access, metadata=want.metadata()
                )
            created = {}
            for want in plan.create:
                made = await api.create_cross_cluster_api_key(
                    name=want.name, access=want.access, metadata=want.metadata()
                )
                created[(want.client, want.alias)] = StoredKey(
                    namespace=server_key[0], name=server_key[1], id=made.id, encoded=made.encoded
                )
        except (ElasticsearchUnavailable, ElasticsearchError) as error:
            logger.info("API keys of %s not reconciled: %s", server_key, error)
            outcome.note("API keys not reconciled: cluster not reachable", retry=bool(expected))
            return
    wanted_aliases = {(key.client, key.alias) for key in expected}
    for client, (current, entries) in secrets.items():
        updated = {
            alias: entry
            for alias, entry in entries.items()
            if (entry.namespace, entry.name) != server_key or (client, alias) in wanted_aliases
        }
        for (owner, alias), entry in created.items():
            if owner == client:
                updated[alias] = entry
        if updated != entries:
            await _write_stored_keys(context, by_key[client], current, updated)
    if plan.create or plan.update or plan.invalidate:
        outcome.note(
            f"API keys in {server_key[0]}/{server_key[1]}: {len(plan.create)} created, "
            f"{len(plan.update)} updated, {len(plan.invalidate)} invalidated"
        )


async def _drop_unreachable_keys(
    context: ControllerContext,
    es: Mapping[str, Any],
    visible: Iterable[ClusterKey],
) -> None:
    """Drop from the client's Secret the keys of servers it no longer reaches through the
    operator (gone, out of scope, or no longer declared with ``apiKey``)."""
    client = cluster_key(es)
    current, entries = await _stored_keys(context, client)
    if current is None:
        return
    present = set(visible)
    declared = {(ref.alias, ref.key) for ref in remote_cluster_refs(es) if ref.uses_api_key}
    kept = {
        alias: entry
        for alias, entry in entries.items()
        if (entry.namespace, entry.name) in present
        and (alias, (entry.namespace, entry.name)) in declared
    }
    if kept != entries:
        await _write_stored_keys(context, es, current, kept)


# --- the activities -----------------------------------------------------------------------------


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


async def _denied_peers(
    context: ControllerContext,
    es: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    outcome: _Outcome,
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


async def reconcile(context: ControllerContext, request: ReconcileInput) -> ReconcileResult:
    """Bring one cluster's remote-cluster relationships in line with the specs."""
    ref = request.ref
    try:
        es = await context.scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
    except errors.NotFound:
        return ReconcileResult(phase=Phase.RECONCILING, message="Elasticsearch not found")
    local = cluster_key(es)
    clusters = await _visible_clusters(context)
    held = await _held_copies(context, local)
    _, stored = await _stored_keys(context, local)
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
    outcome = _Outcome()
    await _sync_settings(context, es, outcome)
    # A pair the ServiceAccounts may not see each other in (enforce-rbac-on-refs) counts as
    # gone from here on: trust revoked, keys invalidated and dropped (the seeds stay, as in ECK).
    denied = await _denied_peers(context, es, clusters, outcome)
    visible = {cluster_key(cluster): cluster for cluster in clusters}
    clusters = [cluster for cluster in clusters if cluster_key(cluster) not in denied]
    by_key = {cluster_key(cluster): cluster for cluster in clusters}
    peers = {peer: by_key[peer] for peer in related_clusters(local, clusters) if peer in by_key}
    await _sync_trust(context, es, peers, outcome)
    await _sync_keys(context, es, clusters, outcome)
    # As a client: the servers it declares with ``apiKey`` and those it still holds a key of
    # (related or not any more), when visible.
    servers = {r.key for r in remote_cluster_refs(es) if r.uses_api_key} | key_servers
    for server in sorted(servers & set(by_key) - {local}):
        await _sync_keys(context, by_key[server], clusters, outcome, only_client=local)
    # A server it may not be paired with keeps none of its keys: asked as if it declared none.
    others = [cluster for cluster in clusters if cluster_key(cluster) != local]
    for server in sorted(servers & denied):
        await _sync_keys(context, visible[server], others, outcome, only_client=local)
    await _drop_unreachable_keys(context, es, by_key)
    # No watch sees a Role or RoleBinding change: with enforce-rbac-on-refs, look again later.
    recheck = RBAC_RECHECK_SECONDS if context.access.enforced else None
    return ReconcileResult(
        phase=Phase.RECONCILING if outcome.retry else Phase.READY,
        message="; ".join(outcome.notes) or "remote clusters in line",
        requeue_after_seconds=RETRY_SECONDS if outcome.retry else recheck,
        observed_generation=view(es).generation,
    )


async def finalize(context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
    """A deleted cluster: revoke its trust everywhere it was exchanged (in scope), invalidate the
    keys it held for clients or clients held in its peers, drop its keys from clients' Secrets.

    Its own copies and API keys Secret go with it (ownerReferences).
    """
    ref = request.ref
    local = (ref.namespace, ref.name)
    deleted: list[str] = []
    holders = await _copies_of(context, local)
    for holder in holders:
        if await _delete_secret(context, holder[0], remote_ca_copy_name(holder[1], local)):
            deleted.append(f"Secret {holder[0]}/{remote_ca_copy_name(holder[1], local)}")
    clusters = await _visible_clusters(context)
    visible = {cluster_key(es): es for es in clusters}
    outcome = _Outcome()
    for peer in sorted(set(holders) | set(related_clusters(local, clusters))):
        cluster = visible.get(peer)
        if cluster is None:
            continue
        # The keys it held in a server it was a client of are expected by nobody now, and a
        # client of it keeps no key of a server that is gone.
        await _sync_keys(context, cluster, clusters, outcome, only_client=local)
        await _drop_unreachable_keys(context, cluster, visible)
    return FinalizeResult(deleted=tuple(deleted))


async def flip_mapper(
    context: ControllerContext, namespace: str, direction: FlipDirectionName
) -> list[Mapping[str, Any]]:
    """The clusters a flip of ``namespace`` concerns (``flip_clusters``), listed unscoped: the
    namespace may just have left scope, and a declared remote may live anywhere."""
    clusters = (await context.unscoped.list(ELASTICSEARCH))["items"]
    wanted = set(flip_clusters(namespace, clusters))
    found = [es for es in clusters if cluster_key(es) in wanted]
    # A declared remote that does not exist is in ``wanted`` too: nothing to reconcile there.
    return found


IMPLEMENTATIONS: Mapping[str, ControllerActivities] = {
    REMOTE_CLUSTER_CONTROLLER.name: ControllerActivities(
        reconcile=reconcile, finalize=finalize, flip_targets=flip_mapper
    ),
}
