"""``stackflow.elastic.cluster_view``: Elasticsearch's answers in, the orchestration's values out.

The payloads marked *real* are what a node answered: 8.17.0 (a full distribution) as quoted in the
brief of this module, 8.18.0 and 9.1.0 (the minimal distribution the project runs) as measured.
"""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.elastic.cluster_view import (
    ENABLE_SETTING,
    EXCLUDE_NAME_SETTING,
    allocation_from,
    health_from,
    nodes_from,
    shards_from,
    shutdown_answer_is_nodes_info,
    shutdown_api_missing,
    shutdowns_from,
    voting_exclusions_from,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterHealth,
    ClusterNode,
    NodeShutdown,
    Shard,
)

DEFAULT_ROLES = frozenset(
    {
        "data",
        "data_cold",
        "data_content",
        "data_frozen",
        "data_hot",
        "data_warm",
        "ingest",
        "master",
        "ml",
        "remote_cluster_client",
        "transform",
    }
)

#: Real, 9.1.0: one node, an index of two shards with a replica each (the replicas unassigned).
REAL_YELLOW_HEALTH = {
    "cluster_name": "probe",
    "status": "yellow",
    "timed_out": False,
    "number_of_nodes": 1,
    "number_of_data_nodes": 1,
    "active_primary_shards": 2,
    "active_shards": 2,
    "relocating_shards": 0,
    "initializing_shards": 0,
    "unassigned_shards": 2,
    "unassigned_primary_shards": 0,
    "delayed_unassigned_shards": 0,
    "number_of_pending_tasks": 0,
    "number_of_in_flight_fetch": 0,
    "task_max_waiting_in_queue_millis": 0,
    "active_shards_percent_as_number": 50.0,
}
#: Real, 8.17.0.
REAL_NODES = {
    "nodes": {
        "AK4YptjAR7SCBQOCXbwiRg": {
            "name": "vm",
            "version": "8.17.0",
            "roles": sorted(DEFAULT_ROLES),
        }
    }
}
#: Real, 8.18.0: an index of two shards with one replica and one of a single shard, one node.
REAL_SHARDS = [
    {"index": "i1", "shard": "0", "prirep": "p", "state": "STARTED", "node": "probe-0"},
    {"index": "i1", "shard": "0", "prirep": "r", "state": "UNASSIGNED", "node": None},
    {"index": "i1", "shard": "1", "prirep": "p", "state": "STARTED", "node": "probe-0"},
    {"index": "i1", "shard": "1", "prirep": "r", "state": "UNASSIGNED", "node": None},
    {"index": "i0", "shard": "0", "prirep": "p", "state": "STARTED", "node": "probe-0"},
]
#: Real, 8.18.0 and 9.1.0: ``GET _nodes/shutdown`` without the shutdown module.
REAL_NODES_INFO_FOR_SHUTDOWN = {
    "_nodes": {"total": 0, "successful": 0, "failed": 0},
    "cluster_name": "probe",
    "nodes": {},
}
#: Real, 8.18.0 and 9.1.0: ``PUT _nodes/<id>/shutdown`` without the shutdown module.
REAL_PUT_SHUTDOWN_405 = (
    '{"error":"Incorrect HTTP method for uri [/_nodes/abc/shutdown] and method [PUT], '
    'allowed: [GET]","status":405}'
)
#: Elasticsearch's documented example (``GET _nodes/<id>/shutdown``).
DOCUMENTED_RESTART = {
    "nodes": [
        {
            "node_id": "USpTGYaBSIKbgSUJR2Z9lg",
            "type": "RESTART",
            "reason": "Demonstrating how the node shutdown API works",
            "shutdown_startedmillis": 1624406108685,
            "allocation_delay": "10m",
            "status": "COMPLETE",
            "shard_migration": {
                "status": "COMPLETE",
                "shard_migrations_remaining": 0,
                "explanation": "no shard relocation is necessary for a node restart",
            },
            "persistent_tasks": {"status": "COMPLETE"},
            "plugins": {"status": "COMPLETE"},
        }
    ]
}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            REAL_YELLOW_HEALTH,
            ClusterHealth(status="yellow", unassigned_shards=2),
            id="real: yellow, two replicas unassigned",
        ),
        pytest.param(
            {
                "status": "green",
                "relocating_shards": 1,
                "initializing_shards": 2,
                "unassigned_shards": 3,
                "number_of_in_flight_fetch": 4,
                "timed_out": True,
            },
            ClusterHealth(
                status="green",
                relocating_shards=1,
                initializing_shards=2,
                unassigned_shards=3,
                in_flight_fetch=4,
                timed_out=True,
            ),
            id="every counter read",
        ),
        pytest.param({}, ClusterHealth(status="unknown"), id="empty: unknown, zeros"),
        pytest.param(
            {"status": "red", "unassigned_shards": "5"},
            ClusterHealth(status="red", unassigned_shards=5),
            id="a counter as a string",
        ),
    ],
)
def test_health_from(payload: dict[str, Any], expected: ClusterHealth) -> None:
    assert health_from(payload) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            REAL_NODES,
            (ClusterNode("vm", "AK4YptjAR7SCBQOCXbwiRg", DEFAULT_ROLES, "8.17.0"),),
            id="real: one node with the default roles",
        ),
        pytest.param(
            {
                "nodes": {
                    "id-b": {"name": "es-b", "version": "8.18.0", "roles": ["data"]},
                    "id-a": {"name": "es-a", "version": "8.17.0", "roles": ["master"]},
                }
            },
            (
                ClusterNode("es-a", "id-a", frozenset({"master"}), "8.17.0"),
                ClusterNode("es-b", "id-b", frozenset({"data"}), "8.18.0"),
            ),
            id="sorted by name",
        ),
        pytest.param(
            {"nodes": {"id": {"name": "coordinating", "version": "8.17.0", "roles": []}}},
            (ClusterNode("coordinating", "id", frozenset(), "8.17.0"),),
            id="no roles: a coordinating node",
        ),
        pytest.param(
            {"nodes": {"id": {}, "not-a-node": "text"}},
            (ClusterNode("", "id", frozenset(), ""),),
            id="missing fields empty, a non-object skipped",
        ),
        pytest.param({}, (), id="filter_path matched nothing: {}"),
        pytest.param({"nodes": None}, (), id="nodes null"),
    ],
)
def test_nodes_from(payload: dict[str, Any], expected: tuple[ClusterNode, ...]) -> None:
    assert nodes_from(payload) == expected


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param(
            REAL_SHARDS,
            (
                Shard("i1", "0", True, "STARTED", "probe-0"),
                Shard("i1", "0", False, "UNASSIGNED", ""),
                Shard("i1", "1", True, "STARTED", "probe-0"),
                Shard("i1", "1", False, "UNASSIGNED", ""),
                Shard("i0", "0", True, "STARTED", "probe-0"),
            ),
            id="real: unassigned replicas have node null",
        ),
        pytest.param(
            [{"index": "i", "shard": "0", "prirep": "r", "state": "RELOCATING", "node": "a -> b"}],
            (Shard("i", "0", False, "RELOCATING", "a -> b"),),
            id="a relocating copy as _cat prints it",
        ),
        pytest.param([], (), id="no index"),
        pytest.param({"value": []}, (), id="not a list"),
        pytest.param(None, (), id="nothing"),
        pytest.param(["text", {"index": "i"}], (Shard("i", "", False, "", ""),), id="odd rows"),
    ],
)
def test_shards_from(rows: Any, expected: tuple[Shard, ...]) -> None:
    assert shards_from(rows) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            {"persistent": {}, "transient": {ENABLE_SETTING: "primaries"}},
            AllocationSettings(enable="primaries"),
            id="real: enable=primaries",
        ),
        pytest.param(
            {
                "persistent": {},
                "transient": {ENABLE_SETTING: "primaries", EXCLUDE_NAME_SETTING: "probe-0,other"},
            },
            AllocationSettings(enable="primaries", exclude_name="probe-0,other"),
            id="real: both, the exclusion a comma list",
        ),
        pytest.param({"persistent": {}, "transient": {}}, AllocationSettings(), id="real: none"),
        pytest.param(
            {"persistent": {ENABLE_SETTING: "none", EXCLUDE_NAME_SETTING: "a"}, "transient": {}},
            AllocationSettings(),
            id="persistent settings are not read",
        ),
        pytest.param(
            {"transient": {"cluster": {"routing": {"allocation": {"enable": "none"}}}}},
            AllocationSettings(),
            id="nested (not flat_settings): not read",
        ),
        pytest.param({}, AllocationSettings(), id="empty"),
        pytest.param({"transient": None}, AllocationSettings(), id="transient null"),
    ],
)
def test_allocation_from(payload: dict[str, Any], expected: AllocationSettings) -> None:
    assert allocation_from(payload) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            {"metadata": {"cluster_coordination": {"voting_config_exclusions": []}}},
            (),
            id="real: none",
        ),
        pytest.param(
            {
                "metadata": {
                    "cluster_coordination": {
                        "voting_config_exclusions": [
                            {"node_id": "_absent_", "node_name": "nope"},
                            {"node_id": "fYZBz4YwSrS5Np1SQPZzNw", "node_name": "probe-0"},
                        ]
                    }
                }
            },
            ("nope", "probe-0"),
            id="real: an unknown name (_absent_) and a node",
        ),
        pytest.param({}, (), id="filter_path matched nothing"),
        pytest.param(
            {"metadata": {"cluster_coordination": {"voting_config_exclusions": [{}, "x"]}}},
            ("",),
            id="an entry without a name, a non-object skipped",
        ),
    ],
)
def test_voting_exclusions_from(payload: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert voting_exclusions_from(payload) == expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            DOCUMENTED_RESTART,
            (
                NodeShutdown(
                    "USpTGYaBSIKbgSUJR2Z9lg",
                    "RESTART",
                    "COMPLETE",
                    "no shard relocation is necessary for a node restart",
                ),
            ),
            id="documented: a restart, complete",
        ),
        pytest.param(
            {
                "nodes": [
                    {
                        "node_id": "n1",
                        "type": "REMOVE",
                        "status": "STALLED",
                        "shard_migration": {
                            "status": "STALLED",
                            "shard_migrations_remaining": 1,
                            "explanation": "shard [0] [primary] of index [i] cannot move",
                        },
                    },
                    {
                        "node_id": "n2",
                        "type": "REMOVE",
                        "status": "IN_PROGRESS",
                        "shard_migration": {"status": "IN_PROGRESS", "started_shards": 2},
                    },
                ]
            },
            (
                NodeShutdown(
                    "n1", "REMOVE", "STALLED", "shard [0] [primary] of index [i] cannot move"
                ),
                NodeShutdown("n2", "REMOVE", "IN_PROGRESS", ""),
            ),
            id="removals: stalled with its explanation, in progress without one",
        ),
        pytest.param({"nodes": []}, (), id="no shutdown"),
        pytest.param({}, (), id="empty"),
        pytest.param(
            {"nodes": [{"shard_migration": None}, 3]}, (NodeShutdown("", "", ""),), id="odd"
        ),
    ],
)
def test_shutdowns_from(payload: dict[str, Any], expected: tuple[NodeShutdown, ...]) -> None:
    assert shutdowns_from(payload) == expected


@pytest.mark.parametrize(
    ("status", "body", "missing"),
    [
        pytest.param(405, REAL_PUT_SHUTDOWN_405, True, id="real: 405 naming the shutdown path"),
        pytest.param(
            400,
            '{"error":"no handler found for uri [/_nodes/shutdown] and method [GET]"}',
            True,
            id="no handler at all",
        ),
        pytest.param(
            400,
            '{"error":{"reason":"request [/_nodes/x/shutdown] contains unrecognized metric"}}',
            True,
            id="read as an unrecognized metric",
        ),
        pytest.param(404, '{"error":"no handler found"}', True, id="404, no handler"),
        pytest.param(
            404,
            '{"error":{"type":"resource_not_found_exception",'
            '"reason":"node [x] is not currently shutting down"}}',
            False,
            id="the API's own 404 (no record) is not the API missing",
        ),
        pytest.param(400, '{"error":"bad request"}', False, id="another 400"),
        pytest.param(
            401, '{"error":"security_exception shutdown"}', False, id="refused: not missing"
        ),
        pytest.param(500, "shutdown", False, id="a server error"),
    ],
)
def test_shutdown_api_missing(status: int, body: str, missing: bool) -> None:
    assert shutdown_api_missing(status, body) is missing


@pytest.mark.parametrize(
    ("payload", "nodes_info"),
    [
        pytest.param(REAL_NODES_INFO_FOR_SHUTDOWN, True, id="real: the nodes info API"),
        pytest.param({"nodes": {}}, True, id="nodes as a mapping"),
        pytest.param(DOCUMENTED_RESTART, False, id="documented: the shutdown API"),
        pytest.param({"nodes": []}, False, id="the shutdown API, no record"),
        pytest.param({}, False, id="empty"),
    ],
)
def test_shutdown_answer_is_nodes_info(payload: dict[str, Any], nodes_info: bool) -> None:
    assert shutdown_answer_is_nodes_info(payload) is nodes_info
