"""Read the answers of the calls that change a running cluster into the orchestration's snapshot.

Pure parsing, value in and value out: the client asks, these functions turn Elasticsearch's JSON
into :mod:`stackflow.stack.elasticsearch.orchestration.snapshot` values, so the decisions never
see a payload and the parsing is tested with tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterHealth,
    ClusterNode,
    NodeShutdown,
    Shard,
)

__all__ = [
    "ENABLE_SETTING",
    "EXCLUDE_NAME_SETTING",
    "allocation_from",
    "health_from",
    "nodes_from",
    "shards_from",
    "shutdown_answer_is_nodes_info",
    "shutdown_api_missing",
    "shutdowns_from",
    "voting_exclusions_from",
]

ENABLE_SETTING = "cluster.routing.allocation.enable"
EXCLUDE_NAME_SETTING = "cluster.routing.allocation.exclude._name"


def health_from(payload: Mapping[str, Any]) -> ClusterHealth:
    """``GET _cluster/health``: the status and the shard counters the predicates read."""
    return ClusterHealth(
        status=str(payload.get("status", "unknown")),
        relocating_shards=int(payload.get("relocating_shards", 0)),
        initializing_shards=int(payload.get("initializing_shards", 0)),
        unassigned_shards=int(payload.get("unassigned_shards", 0)),
        in_flight_fetch=int(payload.get("number_of_in_flight_fetch", 0)),
        timed_out=bool(payload.get("timed_out", False)),
    )


def nodes_from(payload: Mapping[str, Any]) -> tuple[ClusterNode, ...]:
    """``GET _nodes``: every node's name, id, roles and version, by name."""
    nodes = payload.get("nodes") or {}
    found = [
        ClusterNode(
            name=str(node.get("name", "")),
            id=str(node_id),
            roles=frozenset(str(role) for role in node.get("roles") or ()),
            version=str(node.get("version", "")),
        )
        for node_id, node in nodes.items()
        if isinstance(node, Mapping)
    ]
    return tuple(sorted(found, key=lambda node: node.name))


def shards_from(rows: Any) -> tuple[Shard, ...]:
    """``GET _cat/shards?format=json``: one copy per row (``node`` empty when unassigned)."""
    if not isinstance(rows, list):
        return ()
    return tuple(
        Shard(
            index=str(row.get("index", "")),
            shard=str(row.get("shard", "")),
            primary=str(row.get("prirep", "")) == "p",
            state=str(row.get("state", "")),
            node=str(row.get("node") or ""),
        )
        for row in rows
        if isinstance(row, Mapping)
    )


def allocation_from(payload: Mapping[str, Any]) -> AllocationSettings:
    """``GET _cluster/settings?flat_settings=true``: the transient allocation settings."""
    transient = payload.get("transient") or {}
    return AllocationSettings(
        enable=str(transient.get(ENABLE_SETTING) or ""),
        exclude_name=str(transient.get(EXCLUDE_NAME_SETTING) or ""),
    )


def voting_exclusions_from(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """``GET _cluster/state/metadata``: the names of the nodes excluded from voting."""
    metadata = payload.get("metadata") or {}
    coordination = metadata.get("cluster_coordination") or {}
    exclusions = coordination.get("voting_config_exclusions") or ()
    return tuple(
        str(exclusion.get("node_name", ""))
        for exclusion in exclusions
        if isinstance(exclusion, Mapping)
    )


def shutdowns_from(payload: Mapping[str, Any]) -> tuple[NodeShutdown, ...]:
    """``GET _nodes/shutdown``: one record per node being shut down."""
    records = payload.get("nodes") or ()
    return tuple(
        NodeShutdown(
            node_id=str(record.get("node_id", "")),
            type=str(record.get("type", "")),
            status=str(record.get("status", "")),
            explanation=str((record.get("shard_migration") or {}).get("explanation", "")),
        )
        for record in records
        if isinstance(record, Mapping)
    )


def shutdown_api_missing(status: int, body: str) -> bool:
    """Whether an error answer to ``GET _nodes/shutdown`` means the cluster has no such API.

    A build without the shutdown module treats ``shutdown`` as a node id filter of the nodes info
    API, or has no handler at all: both are a 400 (or 404/405) naming the path, never a 2xx.
    """
    return status in (400, 404, 405) and (
        "no handler found" in body or "unrecognized" in body or "shutdown" in body
    )


def shutdown_answer_is_nodes_info(payload: Mapping[str, Any]) -> bool:
    """Whether a 200 answer to ``GET _nodes/shutdown`` came from the nodes info API instead.

    Without the shutdown module, ``shutdown`` is read as a node filter of ``GET _nodes/<ids>``,
    which answers a (here empty) mapping of nodes; the shutdown API answers a list of records.
    """
    return "_nodes" in payload or isinstance(payload.get("nodes"), Mapping)
