"""Cross-cluster API keys (8.10+, ``apiKey`` set): held in the server, named
``eck-<clientNs>-<client>-<alias>``, their encoded values in the client's
``<client>-es-remote-api-keys`` Secret; keys nobody expects are invalidated."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from activities.context import ControllerContext
from activities.remoteclusters.clusters import endpoint_for
from activities.remoteclusters.outcome import Outcome
from activities.remoteclusters.secrets import delete_secret, owner_reference_of, write_secret
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.models.kinds import SECRETS
from stackflow.stack.elasticsearch.remote_clusters import (
    API_KEY_NAME_PREFIX,
    METADATA_NAME,
    METADATA_NAMESPACE,
    ClusterKey,
    ExistingKey,
    StoredKey,
    api_keys_secret_contents,
    api_keys_secret_labels,
    cluster_key,
    expected_api_keys,
    plan_api_keys,
    read_stored_keys,
    remote_api_keys_secret_name,
    remote_cluster_refs,
    supports_api_keys,
)

__all__ = ["drop_unreachable_keys", "stored_keys", "sync_keys", "write_stored_keys"]

logger = logging.getLogger(__name__)


async def stored_keys(
    context: ControllerContext, client: ClusterKey
) -> tuple[dict[str, Any] | None, dict[str, StoredKey]]:
    secret = await context.scoped.get_or_none(
        SECRETS, namespace=client[0], name=remote_api_keys_secret_name(client[1])
    )
    return secret, read_stored_keys(secret)


async def write_stored_keys(
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
            await delete_secret(context, namespace, secret_name)
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
            "ownerReferences": [owner_reference_of(client)],
        },
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }
    await write_secret(context, current, desired)


async def sync_keys(
    context: ControllerContext,
    server: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    outcome: Outcome,
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
    endpoint, why = await endpoint_for(context, server)
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
                    secrets[client] = await stored_keys(context, client)
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
            await write_stored_keys(context, by_key[client], current, updated)
    if plan.create or plan.update or plan.invalidate:
        outcome.note(
            f"API keys in {server_key[0]}/{server_key[1]}: {len(plan.create)} created, "
            f"{len(plan.update)} updated, {len(plan.invalidate)} invalidated"
        )


async def drop_unreachable_keys(
    context: ControllerContext,
    es: Mapping[str, Any],
    visible: Iterable[ClusterKey],
) -> None:
    """Drop from the client's Secret the keys of servers it no longer reaches through the
    operator (gone, out of scope, or no longer declared with ``apiKey``)."""
    client = cluster_key(es)
    current, entries = await stored_keys(context, client)
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
        await write_stored_keys(context, es, current, kept)
