"""The Elasticsearch HTTP API port: the ``ElasticsearchApi`` protocol and its aiohttp implementation."""

from __future__ import annotations

from stackflow.elastic.client import (
    AiohttpElasticsearchClient,
    ApiKey,
    ClusterHealth,
    ElasticsearchApi,
    ElasticsearchClient,
    ElasticsearchError,
    ElasticsearchUnavailable,
    FileSettingsState,
    NotDialledElasticsearch,
    OutOfClusterElasticsearch,
)

__all__ = [
    "AiohttpElasticsearchClient",
    "ApiKey",
    "ClusterHealth",
    "ElasticsearchApi",
    "ElasticsearchClient",
    "ElasticsearchError",
    "ElasticsearchUnavailable",
    "FileSettingsState",
    "NotDialledElasticsearch",
    "OutOfClusterElasticsearch",
]
