"""The clusters a remote-cluster reconcile sees (the scoped list) and how to reach one's HTTP API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from activities.context import ControllerContext
from activities.endpoints import operator_endpoint
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.elastic.factory import ElasticsearchEndpoint
from stackflow.models.objects import view
from stackflow.stack.elasticsearch.remote_clusters import cluster_key

__all__ = ["endpoint_for", "visible_clusters"]


async def visible_clusters(context: ControllerContext) -> list[dict[str, Any]]:
    """Every cluster in a managed namespace that is not being deleted (the scoped list)."""
    listed = await context.scoped.list(ELASTICSEARCH)
    return [es for es in listed["items"] if not view(es).deletion_timestamp]


async def endpoint_for(
    context: ControllerContext, es: Mapping[str, Any]
) -> tuple[ElasticsearchEndpoint | None, str]:
    """How to reach ``es``'s HTTP API (its internal user, its HTTP CA), or None and why not."""
    namespace, name = cluster_key(es)
    endpoint = await operator_endpoint(context, es)
    if endpoint is None:
        return None, f"{namespace}/{name} has no internal user yet"
    return endpoint, ""
