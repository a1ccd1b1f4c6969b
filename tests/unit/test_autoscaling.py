"""Table tests of the ElasticsearchAutoscaler rules (stackflow.stack.elasticsearch.autoscaling)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from stackflow.stack.elasticsearch.autoscaling import (
    ACTIVE,
    HEALTHY,
    INVALID_LICENSE_EVENT_REASON,
    LIMITED,
    ONLINE,
    UNLICENSED_RETRY_SECONDS,
    AutoscalingSpecError,
    NodeSetResources,
    PolicyResult,
    compute_policy,
    conditions,
    distribute,
    format_quantity,
    node_set_roles,
    node_sets_by_policy,
    parse_policy_limits,
    policy_for_roles,
    policy_status,
    scaled_node_sets,
    unlicensed_conditions,
    unlicensed_event,
    validate_policies,
)

GI = Decimal(2**30)


def _policy(**resources: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"nodeCount": {"min": 1, "max": 5}}
    base.update(resources)
    return {"name": "data", "roles": ["data"], "resources": base}


def _response(
    node: dict[str, Any] | None = None, total: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"policies": {"data": {"required_capacity": {"node": node or {}, "total": total or {}}}}}


MEMORY = {"memory": {"min": "2Gi", "max": "8Gi"}}
STORAGE = {"storage": {"min": "10Gi", "max": "100Gi"}}
BOTH = {**MEMORY, **STORAGE}


@pytest.mark.parametrize(
    ("resources", "response", "expected", "limited", "in_response"),
    [
        # 1. nothing required: the minimums
        (BOTH, _response(), NodeSetResources(1, 2 * GI, 10 * GI), False, True),
        # 2. total storage 35Gi over 10Gi nodes: 4 nodes
        (
            BOTH,
            _response({"storage": 5 * 2**30}, {"storage": 35 * 2**30}),
            NodeSetResources(4, 2 * GI, 10 * GI),
            False,
            True,
        ),
        # 3. per-node storage 20Gi raises the node size; 35Gi total → 2 nodes
        (
            BOTH,
            _response({"storage": 20 * 2**30}, {"storage": 35 * 2**30}),
            NodeSetResources(2, 2 * GI, 20 * GI),
            False,
            True,
        ),
        # 4. node count maximum hit
        (
            BOTH,
            _response({}, {"storage": 1000 * 2**30}),
            NodeSetResources(5, 2 * GI, 10 * GI),
            True,
            True,
        ),
        # 5. per-node memory maximum hit, count follows from the capped size
        (
            MEMORY,
            _response({"memory": 16 * 2**30}, {"memory": 16 * 2**30}),
            NodeSetResources(2, 8 * GI, None),
            True,
            True,
        ),
        # 6. memory decides the count when it needs more nodes than storage
        (
            BOTH,
            _response({"memory": 4 * 2**30}, {"memory": 12 * 2**30, "storage": 10 * 2**30}),
            NodeSetResources(3, 4 * GI, 10 * GI),
            False,
            True,
        ),
        # 7. exact multiple: no rounding up
        (
            STORAGE,
            _response({}, {"storage": 30 * 2**30}),
            NodeSetResources(3, None, 10 * GI),
            False,
            True,
        ),
        # 8. policy missing from the response: minimums, not in response
        (BOTH, {"policies": {}}, NodeSetResources(1, 2 * GI, 10 * GI), False, False),
        # 9. empty response body
        (BOTH, {}, NodeSetResources(1, 2 * GI, 10 * GI), False, False),
        # 10. nodeCount minimum above what is required
        (
            {**BOTH, "nodeCount": {"min": 3, "max": 5}},
            _response({}, {"storage": 10 * 2**30}),
            NodeSetResources(3, 2 * GI, 10 * GI),
            False,
            True,
        ),
        # 11. zero and negative amounts count as nothing required
        (
            BOTH,
            _response({"memory": 0, "storage": -5}, {"memory": 0, "storage": 0}),
            NodeSetResources(1, 2 * GI, 10 * GI),
            False,
            True,
        ),
        # 12. no memory/storage bounds: only the node count, at its minimum
        ({}, _response({"storage": 10}, {"storage": 100}), NodeSetResources(1), False, True),
        # 13. both maxima hit at once
        (
            BOTH,
            _response({"memory": 64 * 2**30, "storage": 500 * 2**30}, {"storage": 5000 * 2**30}),
            NodeSetResources(5, 8 * GI, 100 * GI),
            True,
            True,
        ),
        # 14. cpu is not in the response: its minimum
        (
            {"cpu": {"min": "500m", "max": 4}},
            _response(),
            NodeSetResources(1, cpu=Decimal("0.5")),
            False,
            True,
        ),
        # requestsToLimitsRatio: the required amounts stay the requests, the ratios ride along
        (
            {
                "memory": {"min": "2Gi", "max": "8Gi", "requestsToLimitsRatio": "0.5"},
                "cpu": {"min": 1, "max": 4, "requestsToLimitsRatio": 0.25},
            },
            _response(node={"memory": "4Gi"}, total={"memory": "4Gi"}),
            NodeSetResources(
                1,
                memory=4 * GI,
                cpu=Decimal(1),
                memory_ratio=Decimal("0.5"),
                cpu_ratio=Decimal("0.25"),
            ),
            False,
            True,
        ),
    ],
)
def test_compute_policy(
    resources: dict[str, Any],
    response: dict[str, Any],
    expected: NodeSetResources,
    limited: bool,
    in_response: bool,
) -> None:
    result = compute_policy(parse_policy_limits(_policy(**resources)), response)
    assert result.resources == expected
    assert result.limited is limited
    assert result.in_response is in_response
    assert bool(result.messages) is (limited or not in_response)


@pytest.mark.parametrize(
    ("policies", "problems"),
    [
        ([_policy()], []),
        (
            [_policy(), {**_policy(), "name": "other"}],
            ["spec.policies[1] (other): roles ['data'] are already those of policy 'data'"],
        ),
        ([{**_policy(), "roles": []}], ["spec.policies[0] (data): roles must not be empty"]),
        ([{**_policy(), "name": ""}], ["spec.policies[0]: name is required"]),
        (
            [_policy(), {**_policy(), "roles": ["ml"]}],
            ["spec.policies[1]: policy name 'data' is used twice"],
        ),
        (
            [{"name": "p", "roles": ["ml"], "resources": {}}],
            ["policy p: resources.nodeCount is required"],
        ),
        (
            [{"name": "p", "roles": ["ml"], "resources": {"nodeCount": {"min": 3, "max": 1}}}],
            ["policy p: resources.nodeCount: need 0 <= min <= max, got 3 and 1"],
        ),
        (
            [{"name": "p", "roles": ["ml"], "resources": {"nodeCount": {"min": 1.5, "max": 2}}}],
            ["policy p: resources.nodeCount: min and max must be whole numbers"],
        ),
        (
            [
                {
                    "name": "p",
                    "roles": ["ml"],
                    "resources": {
                        "nodeCount": {"min": 1, "max": 2},
                        "memory": {"min": "x", "max": "1Gi"},
                    },
                }
            ],
            ["policy p: resources.memory: min and max must both be quantities"],
        ),
        (
            [
                {
                    "name": "p",
                    "roles": ["ml"],
                    "resources": {
                        "nodeCount": {"min": 1, "max": 2},
                        "cpu": {"min": 1, "max": 2, "requestsToLimitsRatio": 2},
                    },
                }
            ],
            ["policy p: resources.cpu.requestsToLimitsRatio: need 0 < ratio <= 1, got 2"],
        ),
        (
            [
                {
                    "name": "p",
                    "roles": ["ml"],
                    "resources": {
                        "nodeCount": {"min": 1, "max": 2},
                        "memory": {"min": "1Gi", "max": "2Gi", "requestsToLimitsRatio": 0},
                    },
                }
            ],
            ["policy p: resources.memory.requestsToLimitsRatio: need 0 < ratio <= 1, got 0"],
        ),
    ],
)
def test_validate_policies(policies: list[dict[str, Any]], problems: list[str]) -> None:
    assert validate_policies(policies) == problems


def test_policy_for_roles() -> None:
    data = parse_policy_limits(_policy())
    ml = parse_policy_limits(
        {"name": "ml", "roles": ["ml"], "resources": {"nodeCount": {"min": 0, "max": 1}}}
    )
    assert policy_for_roles(["data"], [data, ml]) is data
    with pytest.raises(AutoscalingSpecError, match="no autoscaling policy"):
        policy_for_roles(["data", "ml"], [data, ml])
    with pytest.raises(AutoscalingSpecError, match="without roles"):
        policy_for_roles([], [data])
    with pytest.raises(AutoscalingSpecError, match="several"):
        policy_for_roles(["ml"], [ml, ml])


def _by_type(conds: list[dict[str, str]]) -> dict[str, str]:
    return {cond["type"]: cond["status"] for cond in conds}


OK = PolicyResult("data", NodeSetResources(1), in_response=True)
CAPPED = PolicyResult(
    "data", NodeSetResources(5), in_response=True, limited=True, messages=("capped",)
)
MISSING = PolicyResult("data", NodeSetResources(1), in_response=False, messages=("missing",))
NO_NODE_SET = {"name": "data", "state": [{"type": "NoNodeSet", "messages": ["none"]}]}
HORIZONTAL = {"name": "data", "state": [{"type": "HorizontalScalingLimitReached"}]}


@pytest.mark.parametrize(
    ("results", "online", "spec_errors", "policies", "expected"),
    [
        ([OK], True, (), (), {ACTIVE: "True", HEALTHY: "True", LIMITED: "False", ONLINE: "True"}),
        # A state of error severity (NoNodeSet) makes Healthy false; a limit reached does not.
        (
            [OK],
            True,
            (),
            (NO_NODE_SET,),
            {ACTIVE: "True", HEALTHY: "False", LIMITED: "False", ONLINE: "True"},
        ),
        (
            [OK],
            True,
            (),
            (HORIZONTAL,),
            {ACTIVE: "True", HEALTHY: "True", LIMITED: "False", ONLINE: "True"},
        ),
        (
            [CAPPED],
            True,
            (),
            (),
            {ACTIVE: "True", HEALTHY: "True", LIMITED: "True", ONLINE: "True"},
        ),
        (
            [MISSING],
            True,
            (),
            (),
            {ACTIVE: "True", HEALTHY: "False", LIMITED: "False", ONLINE: "True"},
        ),
        (
            [OK],
            False,
            (),
            (),
            {ACTIVE: "True", HEALTHY: "False", LIMITED: "False", ONLINE: "False"},
        ),
        (
            [],
            True,
            ("bad",),
            (),
            {ACTIVE: "True", HEALTHY: "False", LIMITED: "False", ONLINE: "True"},
        ),
    ],
)
def test_conditions(
    results: list[PolicyResult],
    online: bool,
    spec_errors: tuple[str, ...],
    policies: tuple[dict[str, Any], ...],
    expected: dict[str, str],
) -> None:
    conds = conditions(results, online=online, spec_errors=spec_errors, policies=policies)
    assert _by_type(conds) == expected
    health = next(cond for cond in conds if cond["type"] == HEALTHY)
    assert ("issues reported" in health["message"]) is (policies == (NO_NODE_SET,))
    limited = next(cond for cond in conds if cond["type"] == LIMITED)
    assert ("capped" in limited["message"]) is (expected[LIMITED] == "True")


def test_unlicensed() -> None:
    assert _by_type(unlicensed_conditions()) == {ACTIVE: "False"}
    assert "inactive" in unlicensed_conditions()[0]["message"]
    event = unlicensed_event()
    assert event["type"] == "Warning"
    assert event["reason"] == INVALID_LICENSE_EVENT_REASON == "InvalidLicense"
    assert UNLICENSED_RETRY_SECONDS == 60
    assert event["message"] == (
        "Autoscaling is an enterprise feature. Enterprise features are disabled"
    )


@pytest.mark.parametrize(
    ("amount", "cpu", "expected"),
    [
        (4 * GI, False, "4Gi"),
        (GI / 2, False, "512Mi"),
        (Decimal(1000), False, "1000"),
        (Decimal("1500.2"), False, "1501"),
        (Decimal(2), True, "2"),
        (Decimal("0.5"), True, "500m"),
    ],
)
def test_format_quantity(amount: Decimal, cpu: bool, expected: str) -> None:
    assert format_quantity(amount, cpu=cpu) == expected


@pytest.mark.parametrize(
    ("count", "slots", "expected"),
    [(5, 2, [3, 2]), (4, 2, [2, 2]), (1, 3, [1, 0, 0]), (3, 0, [])],
)
def test_distribute(count: int, slots: int, expected: list[int]) -> None:
    assert distribute(count, slots) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"node.roles": ["data", "ingest"]}, frozenset({"data", "ingest"})),
        ({"node": {"roles": ["ml"]}}, frozenset({"ml"})),
        ({"node.roles": []}, frozenset()),
        ({}, None),
        (None, None),
    ],
)
def test_node_set_roles(config: Any, expected: frozenset[str] | None) -> None:
    assert node_set_roles({"name": "x", "config": config}) == expected


def _node_set(name: str, roles: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "count": 1, "config": {"node.roles": roles}, **extra}


def test_node_sets_by_policy_matches_exact_roles_only() -> None:
    limits = [
        parse_policy_limits(_policy()),
        parse_policy_limits({**_policy(), "name": "ml", "roles": ["ml"]}),
    ]
    node_sets = [
        _node_set("hot-b", ["data"]),
        _node_set("hot-a", ["data"]),
        _node_set("mixed", ["data", "ml"]),
    ]

    assert node_sets_by_policy(node_sets, limits) == {"data": ["hot-a", "hot-b"], "ml": []}


_RESOURCES = NodeSetResources(node_count=3, memory=4 * GI, storage=10 * GI, cpu=Decimal(2))
_SCALED = {
    "name": "data",
    "count": 3,
    "config": {"node.roles": ["data"]},
    "podTemplate": {
        "spec": {
            "containers": [
                {
                    "name": "elasticsearch",
                    "resources": {
                        "requests": {"memory": "4Gi", "cpu": "2"},
                        "limits": {"memory": "4Gi", "cpu": "2"},
                    },
                }
            ]
        }
    },
    "volumeClaimTemplates": [
        {
            "metadata": {"name": "elasticsearch-data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "10Gi"}},
            },
        }
    ],
}


@pytest.mark.parametrize(
    ("node_set", "expected"),
    [
        pytest.param(_node_set("data", ["data"]), _SCALED, id="bare node set gets everything"),
        pytest.param(_SCALED, None, id="already scaled: nothing to write"),
        pytest.param(
            {
                **_SCALED,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "elasticsearch",
                                "resources": {
                                    "requests": {"memory": "4096Mi", "cpu": "2000m"},
                                    "limits": {"memory": "4294967296", "cpu": 2},
                                },
                            }
                        ]
                    }
                },
            },
            None,
            id="same amounts spelled otherwise: nothing to write",
        ),
        pytest.param({**_SCALED, "count": 2}, _SCALED, id="count only"),
    ],
)
def test_scaled_node_sets(node_set: dict[str, Any], expected: dict[str, Any] | None) -> None:
    result = PolicyResult(policy="data", resources=_RESOURCES, in_response=True)

    scaled = scaled_node_sets([node_set], [result], {"data": ["data"]})

    assert scaled == (None if expected is None else [expected])


@pytest.mark.parametrize(
    ("memory_ratio", "cpu_ratio", "limits"),
    [
        pytest.param(Decimal(1), Decimal(1), {"memory": "4Gi", "cpu": "2"}, id="default: equal"),
        pytest.param(Decimal("0.5"), Decimal(1), {"memory": "8Gi", "cpu": "2"}, id="memory 0.5"),
        pytest.param(Decimal(1), Decimal("0.8"), {"memory": "4Gi", "cpu": "2500m"}, id="cpu 0.8"),
    ],
)
def test_scaled_node_sets_limits_are_requests_over_the_ratio(
    memory_ratio: Decimal, cpu_ratio: Decimal, limits: dict[str, str]
) -> None:
    resources = NodeSetResources(
        node_count=3,
        memory=4 * GI,
        storage=10 * GI,
        cpu=Decimal(2),
        memory_ratio=memory_ratio,
        cpu_ratio=cpu_ratio,
    )
    result = PolicyResult(policy="data", resources=resources, in_response=True)

    scaled = scaled_node_sets([_node_set("data", ["data"])], [result], {"data": ["data"]})

    assert scaled is not None
    container = scaled[0]["podTemplate"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"memory": "4Gi", "cpu": "2"}, "limits": limits}
    assert policy_status(result, ["data"], now=NOW)["resources"] == {
        "requests": {"cpu": "2", "memory": "4Gi", "storage": "10Gi"},
        "limits": {"cpu": limits["cpu"], "memory": limits["memory"]},
    }


def test_scaled_node_sets_spreads_the_count_and_leaves_others_alone() -> None:
    result = PolicyResult(policy="data", resources=NodeSetResources(node_count=5), in_response=True)
    other = _node_set("master", ["master"])

    scaled = scaled_node_sets(
        [_node_set("a", ["data"]), _node_set("b", ["data"]), other],
        [result],
        {"data": ["a", "b"]},
    )

    assert scaled is not None
    assert [(n["name"], n["count"]) for n in scaled] == [("a", 3), ("b", 2), ("master", 1)]
    assert scaled[2] == other


@pytest.mark.parametrize(
    ("result", "node_sets", "states"),
    [
        pytest.param(
            PolicyResult(policy="p", resources=NodeSetResources(node_count=2), in_response=True),
            ["a"],
            [],
            id="healthy",
        ),
        pytest.param(
            PolicyResult(
                policy="p",
                resources=NodeSetResources(node_count=5),
                in_response=True,
                limited=True,
                messages=("node count limited to 5 (required 9) in policy p",),
            ),
            ["a"],
            ["HorizontalScalingLimitReached"],
            id="horizontal limit",
        ),
        pytest.param(
            PolicyResult(
                policy="p",
                resources=NodeSetResources(node_count=1, memory=8 * GI),
                in_response=True,
                limited=True,
                messages=("memory per node limited to 8 (required 9) in policy p",),
            ),
            ["a"],
            ["VerticalScalingLimitReached"],
            id="vertical limit",
        ),
        pytest.param(
            PolicyResult(
                policy="p",
                resources=NodeSetResources(node_count=1),
                in_response=False,
                messages=("policy p is not in the autoscaling capacity response",),
            ),
            [],
            ["NoNodeSet", "EmptyResponse"],
            id="no node set, not in the answer",
        ),
    ],
)
def test_policy_status_states(
    result: PolicyResult, node_sets: list[str], states: list[str]
) -> None:
    entry = policy_status(result, node_sets, now=NOW)

    assert [state["type"] for state in entry.get("state", [])] == states
    counts = distribute(result.resources.node_count, len(node_sets))
    assert entry["nodeSets"] == [
        {"name": name, "nodeCount": count} for name, count in zip(node_sets, counts, strict=True)
    ]


NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
EARLIER = "2025-12-31T00:00:00Z"
_TWO = PolicyResult("p", NodeSetResources(node_count=2, memory=4 * GI), in_response=True)
_SAME = {
    "name": "p",
    "nodeSets": [{"name": "a", "nodeCount": 2}],
    "resources": {"requests": {"memory": "4Gi"}, "limits": {"memory": "4Gi"}},
    "lastModificationTime": EARLIER,
}


@pytest.mark.parametrize(
    ("previous", "expected"),
    [
        pytest.param(None, "2026-01-02T03:04:05Z", id="first status: now"),
        pytest.param(_SAME, EARLIER, id="nothing changed: kept"),
        pytest.param(
            {**_SAME, "nodeSets": [{"name": "a", "nodeCount": 1}]},
            "2026-01-02T03:04:05Z",
            id="node count changed: now",
        ),
        pytest.param(
            {**_SAME, "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}},
            "2026-01-02T03:04:05Z",
            id="memory changed: now",
        ),
        pytest.param(
            {key: value for key, value in _SAME.items() if key != "lastModificationTime"},
            "2026-01-02T03:04:05Z",
            id="same resources without a time: now",
        ),
    ],
)
def test_policy_status_last_modification_time(
    previous: dict[str, Any] | None, expected: str
) -> None:
    entry = policy_status(_TWO, ["a"], now=NOW, previous=previous)

    assert entry["lastModificationTime"] == expected
