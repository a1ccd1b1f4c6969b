"""The Elasticsearch HTTP API port: the ``ElasticsearchApi`` protocol and its aiohttp implementation.

``factory`` chooses, from the configuration, where and how each cluster is dialled.
"""

from __future__ import annotations

from stackflow.elastic.client import (
    AiohttpElasticsearchClient,
    ApiKey,
    ClusterHealth,
    ElasticsearchApi,
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
    "ElasticsearchError",
    "ElasticsearchUnavailable",
    "FileSettingsState",
    "NotDialledElasticsearch",
    "OutOfClusterElasticsearch",
]
