"""The client side: ``cluster.remote.<alias>.seeds`` written through ``PUT _cluster/settings``
(persistent), aliases removed from the spec set to null, the managed-remote-clusters annotation
kept in step."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from activities.remoteclusters.clusters import endpoint_for
from activities.remoteclusters.outcome import Outcome
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.models.objects import view
from stackflow.stack.elasticsearch.remote_clusters import (
    cluster_key,
    managed_aliases_annotation_patch,
    read_managed_aliases,
    remote_cluster_refs,
    remote_cluster_settings,
)

__all__ = ["sync_settings"]

logger = logging.getLogger(__name__)


async def sync_settings(
    context: ControllerContext, es: Mapping[str, Any], outcome: Outcome
) -> None:
    """Write the client's remote cluster seeds (and nulls for removed aliases), then record the
    aliases it manages in the annotation; nothing when there is nothing to say."""
    refs = remote_cluster_refs(es)
    managed = read_managed_aliases(view(es).annotations)
    version = str((es.get("spec") or {}).get("version", ""))
    settings = remote_cluster_settings(refs, managed, version)
    if not settings:
        return
    endpoint, why = await endpoint_for(context, es)
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
