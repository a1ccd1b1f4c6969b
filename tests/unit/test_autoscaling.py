"""Table tests of the ElasticsearchAutoscaler rules (stackflow.stack.policies.autoscaling),
as ECK computes them: per-node sizes, node counts, the spread over node sets, limits, states,
conditions, events and the node sets written."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from stackflow.stack.policies.autoscaling.node_sets import ml_node_settings, scaled_node_sets
from stackflow.stack.policies.autoscaling.quantities import format_quantity
from stackflow.stack.policies.autoscaling.results import (
    CurrentResources,
    NodeSetResources,
    PolicyResult,
    with_limits,
)
from stackflow.stack.policies.autoscaling.sizing import (
    compute_policy,
    distribute_fairly,
    offline_policy,
    overlapping_states,
)
from stackflow.stack.policies.autoscaling.spec import (
    AutoscalingSpecError,
    VolumeClaimError,
    node_set_roles,
    node_sets_by_policy,
    parse_policy_limits,
    policy_for_roles,
)
from stackflow.stack.policies.autoscaling.status import (
    ACTIVE,
    HEALTHY,
    LIMITED,
    ONLINE,
    conditions,
    imported_status_entry,
    inactive_conditions,
    policy_status,
    scaling_events,
    unhealthy_conditions,
)
from stackflow.stack.policies.autoscaling.unlicensed import (
    INVALID_LICENSE_EVENT_REASON,
    UNLICENSED_RETRY_SECONDS,
    unlicensed_conditions,
    unlicensed_event,
)
from stackflow.stack.policies.autoscaling.validation import unused_policies, validate_policies

GI = 2**30


def _policy(
    name: str = "data", roles: tuple[str, ...] = ("data",), **resources: Any
) -> dict[str, Any]:
    base: dict[str, Any] = {"nodeCount": {"min": 1, "max": 5}}
    base.update(resources)
    return {"name": name, "roles": list(roles), "resources": base}


def _limits(**resources: Any) -> Any:
    return parse_policy_limits(_policy(**resources))


def _response(
    node: dict[str, Any] | None = None,
    total: dict[str, Any] | None = None,
    *,
    current: dict[str, Any] | None = None,
    nodes: int = 0,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"required_capacity": {"node": node or {}, "total": total or {}}}
    entry["current_capacity"] = current or {
        "node": {"storage": 0, "memory": 0},
        "total": {"storage": 0, "memory": 0},
    }
    entry["current_nodes"] = [{"name": f"n{i}"} for i in range(nodes)]
    return {"policies": {"data": entry}}


def _previous(count: int, **requests: str) -> dict[str, Any]:
    return {
        "name": "data",
        "nodeSets": [{"name": "data", "nodeCount": count}],
        "resources": {"requests": requests},
        "lastModificationTime": "2026-01-01T00:00:00Z",
    }


MEMORY = {"memory": {"min": "2Gi", "max": "8Gi"}}
STORAGE = {"storage": {"min": "10Gi", "max": "100Gi"}}
BOTH = {**MEMORY, **STORAGE}


def _r(
    count: int, memory: int | None = None, storage: int | None = None, cpu: Any = None
) -> NodeSetResources:
    """Requests in GiB (cpu in cores) with limits equal to them (ratio 1)."""
    return NodeSetResources(
        node_count=count,
        memory=None if memory is None else Decimal(memory * GI),
        storage=None if storage is None else Decimal(storage * GI),
        cpu=None if cpu is None else Decimal(str(cpu)),
        memory_limit=None if memory is None else Decimal(memory * GI),
        cpu_limit=None if cpu is None else Decimal(str(cpu)),
    )


@pytest.mark.parametrize(
    ("resources", "response", "previous", "expected", "states"),
    [
        pytest.param(
            MEMORY,
            _response({"memory": 3 * GI}, {"memory": 9 * GI}),
            None,
            _r(2, memory=8),
            {},
            id="memory: the total over the minimum count (9Gi) capped at 8Gi, so 2 nodes",
        ),
        pytest.param(
            MEMORY,
            _response({"memory": 1}, {"memory": 5 * GI}),
            None,
            _r(1, memory=5),
            {},
            id="memory: at least the total over the minimum node count",
        ),
        pytest.param(
            MEMORY,
            _response({"memory": 10 * GI}, {"memory": 50 * GI}),
            None,
            _r(5, memory=8),
            {
                "VerticalScalingLimitReached": (
                    f"memory required per node, {10 * GI}, is greater than the maximum allowed: "
                    f"{8 * GI}",
                ),
                "HorizontalScalingLimitReached": (
                    f"Can't provide total required memory {50 * GI}, max number of nodes is 5, "
                    "requires 7 nodes",
                ),
            },
            id="memory: both limits reached",
        ),
        pytest.param(
            STORAGE,
            _response({"storage": 5 * GI}, {"storage": 30 * GI}),
            None,
            _r(1, storage=32),
            {},
            id="storage: 95% usable, 30Gi total on one node rounded up to 32Gi",
        ),
        pytest.param(
            STORAGE,
            _response(
                {"storage": 5 * GI},
                {"storage": 30 * GI},
                current={"node": {"storage": 40 * GI}, "total": {"storage": 120 * GI}},
                nodes=3,
            ),
            _previous(3, storage="40Gi"),
            _r(3, storage=40),
            {},
            id="storage: no need beyond what is there, nothing shrinks",
        ),
        pytest.param(
            STORAGE,
            _response(
                {"storage": GI},
                {"storage": GI},
                current={"node": {"storage": 50 * GI}, "total": {"storage": 50 * GI}},
                nodes=1,
            ),
            _previous(1, storage="40Gi"),
            _r(1, storage=40),
            {
                "UnexpectedNodeStorageCapacity": (
                    "Vertical Pod autoscaling is not supported: current node storage capacity "
                    f"{50 * GI} is greater than the claimed capacity {40 * GI}",
                )
            },
            id="storage: a node bigger than its claim",
        ),
        pytest.param(
            {**BOTH, "cpu": {"min": 1, "max": 4}},
            _response({"storage": 55 * GI}, {"storage": 55 * GI}),
            None,
            _r(1, memory=6, storage=58, cpu=3),
            {},
            id="memory follows storage, cpu follows memory, each rounded up",
        ),
        pytest.param(
            {"cpu": {"min": "500m", "max": 4}, **MEMORY},
            _response({"memory": 2 * GI, "processors": 1.5}, {"memory": 2 * GI, "processors": 3}),
            None,
            NodeSetResources(
                node_count=1,
                memory=Decimal(2 * GI),
                cpu=Decimal("3"),
                memory_limit=Decimal(2 * GI),
                cpu_limit=Decimal(3),
            ),
            {},
            id="cpu: the node need or the total over the minimum count, no rounding",
        ),
        pytest.param(
            BOTH,
            {"policies": {}},
            None,
            _r(1, memory=2, storage=10),
            {"EmptyResponse": ("No required capacity from Elasticsearch",)},
            id="not in the response: the minimums, EmptyResponse",
        ),
        pytest.param(
            BOTH,
            _response(),
            _previous(4, memory="4Gi", storage="20Gi"),
            _r(4, memory=4, storage=20),
            {"EmptyResponse": ("No required capacity from Elasticsearch",)},
            id="nothing required: the status' resources, EmptyResponse",
        ),
        pytest.param(
            STORAGE,
            _response({"memory": GI}, {"memory": GI}),
            None,
            None,
            {"MemoryRequired": ("Min and max memory must be specified",)},
            id="memory asked without a memory range: the node sets are left alone",
        ),
        pytest.param(
            MEMORY,
            _response({"memory": 2 * GI}, {"memory": 2 * GI}, nodes=2),
            _previous(4, memory="2Gi"),
            _r(4, memory=2),
            {},
            id="no scale-down while Elasticsearch sees fewer nodes than the status",
        ),
        pytest.param(
            MEMORY,
            _response({"memory": 2 * GI}, {"memory": 2 * GI}, nodes=4),
            _previous(4, memory="2Gi"),
            _r(1, memory=2),
            {},
            id="scale-down once every node is seen",
        ),
    ],
)
def test_compute_policy(
    resources: dict[str, Any],
    response: dict[str, Any],
    previous: dict[str, Any] | None,
    expected: NodeSetResources | None,
    states: dict[str, tuple[str, ...]],
) -> None:
    result = compute_policy(_limits(**resources), response, ["data"], previous)
    assert result.resources == expected
    assert dict(result.states) == states
    if expected is not None:
        assert result.node_sets == (("data", expected.node_count),)


def test_the_storage_sized_tier_of_eck() -> None:
    """A hot tier of 3 to 10 nodes whose storage need outgrows its 4Gi nodes: 10 nodes, memory
    and cpu at their maximum since storage is; an ml tier asking for no memory stays minimal."""
    tier = parse_policy_limits(
        _policy(
            "di",
            ("data", "ingest"),
            nodeCount={"min": 3, "max": 10},
            cpu={"min": 2, "max": 6},
            memory={"min": "2Gi", "max": "8Gi"},
            storage={"min": "1Gi", "max": "4Gi"},
        )
    )
    ml = parse_policy_limits(
        _policy(
            "ml",
            ("ml",),
            nodeCount={"min": 1, "max": 9},
            cpu={"min": 2, "max": 2},
            memory={"min": "2Gi", "max": "6Gi"},
            storage={"min": "1Gi", "max": "2Gi"},
        )
    )
    response = {
        "policies": {
            "di": {
                "required_capacity": {
                    "node": {"storage": 3722575856},
                    "total": {"storage": 37106614256},
                },
                "current_capacity": {
                    "node": {"storage": 4193976320, "memory": 8 * GI},
                    "total": {"storage": 33384038400, "memory": 64 * GI},
                },
                "current_nodes": [{"name": str(i)} for i in range(8)],
            },
            "ml": {
                "required_capacity": {"node": {"memory": 0}, "total": {"memory": 0}},
                "current_capacity": {
                    "node": {"storage": 0, "memory": 2 * GI},
                    "total": {"storage": 0, "memory": 2 * GI},
                },
                "current_nodes": [{"name": "ml-0"}],
            },
        }
    }
    di_before = {
        "name": "di",
        "nodeSets": [{"name": "di", "nodeCount": 9}],
        "resources": {"requests": {"cpu": "6", "memory": "8Gi", "storage": "4Gi"}},
    }
    ml_before = {
        "name": "ml",
        "nodeSets": [{"name": "ml", "nodeCount": 1}],
        "resources": {"requests": {"cpu": "2", "memory": "2Gi", "storage": "1Gi"}},
    }
    di = compute_policy(tier, response, ["di"], di_before)
    assert di.node_sets == (("di", 10),)
    assert di.resources == NodeSetResources(
        10, Decimal(8 * GI), Decimal(4 * GI), Decimal(6), Decimal(8 * GI), Decimal(6)
    )
    assert not di.states
    other = compute_policy(ml, response, ["ml"], ml_before)
    assert other.resources == NodeSetResources(
        1, Decimal(2 * GI), Decimal(GI), Decimal(2), Decimal(2 * GI), Decimal(2)
    )


def test_no_node_set() -> None:
    result = compute_policy(_limits(**MEMORY), _response(), [])
    assert result.resources is None
    assert dict(result.states) == {"NoNodeSet": ("no nodeSets for tier data",)}


@pytest.mark.parametrize(
    ("previous", "expected"),
    [
        (None, _r(1, memory=2, storage=10)),
        # the status' resources within the ranges, storage never below it
        (_previous(7, memory="16Gi", storage="50Gi"), _r(5, memory=8, storage=50)),
        (_previous(2), _r(2, memory=2, storage=10)),
    ],
)
def test_offline_policy(previous: dict[str, Any] | None, expected: NodeSetResources) -> None:
    result = offline_policy(_limits(**BOTH), ["data"], CurrentResources.of(previous))
    assert result.resources == expected
    assert result.node_sets == (("data", expected.node_count),)


@pytest.mark.parametrize(
    ("memory_ratio", "cpu_ratio", "memory_limit", "cpu_limit"),
    [
        pytest.param(None, None, 4 * GI, Decimal(2), id="default 1: limits equal requests"),
        pytest.param("2", "4", 8 * GI, Decimal(8), id="limits are the requests times the ratio"),
        pytest.param("0", "0", None, None, id="a ratio of 0 sets no limit"),
    ],
)
def test_with_limits(
    memory_ratio: str | None, cpu_ratio: str | None, memory_limit: int | None, cpu_limit: Any
) -> None:
    memory: dict[str, Any] = {"min": "1Gi", "max": "8Gi"}
    cpu: dict[str, Any] = {"min": 1, "max": 8}
    if memory_ratio is not None:
        memory["requestsToLimitsRatio"] = memory_ratio
    if cpu_ratio is not None:
        cpu["requestsToLimitsRatio"] = cpu_ratio
    limits = _limits(memory=memory, cpu=cpu)
    result = with_limits(NodeSetResources(1, memory=Decimal(4 * GI), cpu=Decimal(2)), limits)
    assert result.memory_limit == (None if memory_limit is None else Decimal(memory_limit))
    assert result.cpu_limit == cpu_limit


def test_a_fractional_cpu_limit_is_whole_cores() -> None:
    limits = _limits(cpu={"min": "500m", "max": 4})
    result = with_limits(NodeSetResources(1, cpu=Decimal("1.5")), limits)
    assert result.cpu_limit == Decimal(2)


@pytest.mark.parametrize(
    ("names", "count", "expected"),
    [
        (["b", "a"], 5, (("b", 2), ("a", 3))),
        (["a", "b"], 4, (("a", 2), ("b", 2))),
        (["a", "b", "c"], 1, (("b", 0), ("c", 0), ("a", 1))),
        ([], 3, ()),
    ],
)
def test_distribute_fairly(names: list[str], count: int, expected: Any) -> None:
    assert distribute_fairly(names, count) == expected


def test_overlapping_policies() -> None:
    policies = [
        parse_policy_limits(_policy("hot", ("data_hot", "ingest", "remote_cluster_client"))),
        parse_policy_limits(_policy("warm", ("data_warm", "ingest", "remote_cluster_client"))),
        parse_policy_limits(_policy("ml", ("ml",))),
    ]
    message = "role ingest is declared in autoscaling policies hot,warm"
    assert overlapping_states(policies) == {
        "hot": {"OverlappingPolicies": (message,)},
        "warm": {"OverlappingPolicies": (message,)},
    }


def _by_type(conds: list[dict[str, str]]) -> dict[str, tuple[str, str]]:
    return {cond["type"]: (cond["status"], cond["message"]) for cond in conds}


ISSUES = (
    "Issues reported for the following policies: [{}]. Check operator logs, Kubernetes "
    "events, and policies status for more details"
)
OK = PolicyResult("data", _r(1))
CAPPED = PolicyResult("data", _r(5), states={"HorizontalScalingLimitReached": ("x",)})
EMPTY = PolicyResult("ml", _r(1), states={"EmptyResponse": ("none",)})


@pytest.mark.parametrize(
    ("results", "online", "expected"),
    [
        (
            [OK],
            True,
            {
                LIMITED: ("False", ""),
                HEALTHY: ("True", ""),
                ACTIVE: ("True", ""),
                ONLINE: ("True", "Elasticsearch is available"),
            },
        ),
        (
            [CAPPED, EMPTY],
            True,
            {
                LIMITED: ("True", "Limit reached for policies data"),
                HEALTHY: ("False", ISSUES.format("ml")),
                ACTIVE: ("True", ""),
                ONLINE: ("True", "Elasticsearch is available"),
            },
        ),
        (
            [OK],
            False,
            {
                LIMITED: ("False", ""),
                HEALTHY: (
                    "False",
                    "An error prevented resource calculation from the Elasticsearch "
                    "autoscaling API.",
                ),
                ACTIVE: ("True", ""),
                ONLINE: ("False", "boom"),
            },
        ),
    ],
)
def test_conditions(
    results: list[PolicyResult], online: bool, expected: dict[str, tuple[str, str]]
) -> None:
    message = "Elasticsearch is available" if online else "boom"
    conds = conditions(results, online=online, online_message=message)
    assert [cond["type"] for cond in conds] == [LIMITED, HEALTHY, ACTIVE, ONLINE]
    assert _by_type(conds) == expected


def test_a_long_online_message_is_cut() -> None:
    conds = conditions([], online=False, online_message="x" * 300)
    assert _by_type(conds)[ONLINE] == ("False", "x" * 256 + "[...]")


def test_inactive_and_unhealthy() -> None:
    assert _by_type(inactive_conditions("Elasticsearch resource ns/es not found")) == {
        ACTIVE: ("False", "Elasticsearch resource ns/es not found"),
        HEALTHY: ("Unknown", "Autoscaler is inactive"),
        ONLINE: ("False", "Autoscaler is inactive"),
        LIMITED: ("Unknown", ""),
    }
    assert _by_type(unhealthy_conditions("bad"))[HEALTHY] == ("False", "bad")


def test_unlicensed() -> None:
    assert _by_type(unlicensed_conditions())[ACTIVE] == (
        "False",
        "Autoscaling is an enterprise feature. Enterprise features are disabled",
    )
    event = unlicensed_event()
    assert event["type"] == "Warning"
    assert event["reason"] == INVALID_LICENSE_EVENT_REASON == "InvalidLicense"
    assert UNLICENSED_RETRY_SECONDS == 60
    assert event["message"] == (
        "Autoscaling is an enterprise feature. Enterprise features are disabled"
    )


def test_scaling_events() -> None:
    result = PolicyResult(
        "data",
        _r(5),
        states={
            "VerticalScalingLimitReached": ("a", "b"),
            "EmptyResponse": ("not an event",),
        },
    )
    assert scaling_events([result], online=True) == [
        {
            "type": "Warning",
            "reason": "VerticalScalingLimitReached",
            "action": "AutoscalingOnlineReconciliation",
            "message": "a. b",
        }
    ]
    assert scaling_events([result], online=False)[0]["action"] == (
        "AutoscalingOfflineReconciliation"
    )


@pytest.mark.parametrize(
    ("amount", "cpu", "expected"),
    [
        (Decimal(4 * GI), False, "4Gi"),
        (Decimal(2 * 10**9), False, "2G"),
        (Decimal(GI // 2), False, "536870912"),
        (Decimal("1500.2"), False, "1501"),
        (Decimal(2), True, "2"),
        (Decimal("0.5"), True, "500m"),
    ],
)
def test_format_quantity(amount: Decimal, cpu: bool, expected: str) -> None:
    assert format_quantity(amount, cpu=cpu) == expected


@pytest.mark.parametrize("ratio", ["0.5", "0.99"])
def test_a_ratio_below_one_is_refused(ratio: str) -> None:
    policy = _policy(memory={"min": "2Gi", "max": "4Gi", "requestsToLimitsRatio": ratio})
    assert validate_policies([policy]) == [
        "policy data: resources.memory.requestsToLimitsRatio: need a ratio of at least 1 "
        f"(the limit is the request times the ratio) or 0 (no limit), got {ratio!r}"
    ]


P0 = "spec.policies[0]"
P1 = "spec.policies[1]"


@pytest.mark.parametrize(
    ("policies", "problems"),
    [
        ([_policy()], []),
        (
            [_policy(), _policy("other")],
            [f'{P1}.name: Invalid value: "data": roles set is duplicated'],
        ),
        (
            [_policy(roles=())],
            [f"{P0}.roles: Required value: roles field is mandatory and must not be empty"],
        ),
        ([_policy("")], [f"{P0}.name: Required value: name is mandatory"]),
        (
            [_policy(), _policy(roles=("ml",))],
            [f'{P1}.name: Invalid value: "data": policy is duplicated'],
        ),
        (
            [_policy("a", ("ml",)), _policy("b", ("ml", "remote_cluster_client"))],
            [
                f'{P1}.name: Invalid value: "ml,remote_cluster_client": ML nodes must be in a '
                "dedicated NodeSet"
            ],
        ),
        (
            [_policy("a", ("ml", "data"))],
            [
                f'{P0}.name: Invalid value: "ml,data": ML nodes must be in a dedicated '
                "autoscaling policy"
            ],
        ),
        (
            [_policy(nodeCount={"min": 3, "max": 1})],
            [
                f"{P0}.resources.nodeCount.max: Invalid value: 1: max node count must be an "
                "integer greater or equal than the min node count"
            ],
        ),
        (
            [_policy(nodeCount={"min": 0, "max": 0})],
            [f"{P0}.resources.nodeCount.max: Invalid value: 0: max count must be greater than 0"],
        ),
        (
            [_policy(nodeCount={"min": 1.5, "max": 2})],
            ["policy data: resources.nodeCount: min and max must be whole numbers"],
        ),
        (
            [_policy(memory={"min": "1Gi", "max": "4Gi"})],
            [f"{P0}.memory.min: Required value: min quantity must be greater than 2G"],
        ),
        (
            [_policy(storage={"min": 0, "max": "4Gi"})],
            [f"{P0}.storage.min: Required value: min quantity must be greater than 0"],
        ),
        (
            [_policy(cpu={"min": 2, "max": 1})],
            [
                f'{P0}.cpu.max: Invalid value: "1": max quantity must be greater or equal than '
                "min quantity"
            ],
        ),
        (
            [_policy(memory={"min": "x", "max": "4Gi"})],
            ["policy data: resources.memory: min and max must both be quantities"],
        ),
        (
            [_policy(cpu={"min": 1, "max": 2, "requestsToLimitsRatio": 2})],
            [],
        ),
        (
            [_policy(memory={"min": "2Gi", "max": "4Gi", "requestsToLimitsRatio": 0})],
            [],
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


_RESULT = PolicyResult(
    "data",
    NodeSetResources(
        node_count=3,
        memory=Decimal(4 * GI),
        storage=Decimal(10 * GI),
        cpu=Decimal(2),
        memory_limit=Decimal(4 * GI),
        cpu_limit=Decimal(2),
    ),
    node_sets=(("data", 3),),
)
_SCALED = {
    "name": "data",
    "count": 3,
    "config": {"node.roles": ["data"]},
    "resources": {
        "requests": {"cpu": "2", "memory": "4Gi"},
        "limits": {"cpu": "2", "memory": "4Gi"},
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
                "resources": {
                    "requests": {"memory": "4096Mi", "cpu": "2000m"},
                    "limits": {"memory": "4294967296", "cpu": 2},
                },
            },
            None,
            id="same amounts spelled otherwise: nothing to write",
        ),
        pytest.param({**_SCALED, "count": 2}, _SCALED, id="count only"),
        pytest.param(
            {
                **_SCALED,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "elasticsearch",
                                "resources": {
                                    "requests": {"memory": "1Gi", "ephemeral-storage": "1Gi"},
                                    "limits": {"cpu": "1"},
                                },
                            }
                        ]
                    }
                },
            },
            {
                **_SCALED,
                "podTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "elasticsearch",
                                "resources": {"requests": {"ephemeral-storage": "1Gi"}},
                            }
                        ]
                    }
                },
            },
            id="cpu and memory leave the pod template's container",
        ),
    ],
)
def test_scaled_node_sets(node_set: dict[str, Any], expected: dict[str, Any] | None) -> None:
    scaled = scaled_node_sets([node_set], [_RESULT])
    assert scaled == (None if expected is None else [expected])


def test_scaled_node_sets_spreads_and_leaves_others_alone() -> None:
    result = PolicyResult("data", NodeSetResources(node_count=3), node_sets=(("b", 1), ("a", 2)))
    skipped = PolicyResult("ml", None, states={"MemoryRequired": ("x",)})
    node_sets = [
        _node_set("a", ["data"]),
        _node_set("b", ["data"]),
        _node_set("ml", ["ml"], count=7),
    ]
    scaled = scaled_node_sets(node_sets, [result, skipped])
    assert scaled is not None
    assert [(n["name"], n["count"]) for n in scaled] == [("a", 2), ("b", 1), ("ml", 7)]


def test_several_claims_cannot_be_sized() -> None:
    claims = [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
    with pytest.raises(VolumeClaimError):
        scaled_node_sets([_node_set("data", ["data"], volumeClaimTemplates=claims)], [_RESULT])


NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_policy_status() -> None:
    entry = policy_status(_RESULT, now=NOW)
    assert entry == {
        "name": "data",
        "nodeSets": [{"name": "data", "nodeCount": 3}],
        "resources": {
            "limits": {"cpu": "2", "memory": "4Gi"},
            "requests": {"cpu": "2", "memory": "4Gi", "storage": "10Gi"},
        },
        "state": [],
        "lastModificationTime": "2026-05-01T12:00:00Z",
    }
    # Unchanged resources keep their time; a change stamps now.
    earlier = {**entry, "lastModificationTime": "2026-01-01T00:00:00Z"}
    assert policy_status(_RESULT, now=NOW, previous=earlier)["lastModificationTime"] == (
        "2026-01-01T00:00:00Z"
    )
    changed = {**earlier, "nodeSets": [{"name": "data", "nodeCount": 2}]}
    assert policy_status(_RESULT, now=NOW, previous=changed)["lastModificationTime"] == (
        "2026-05-01T12:00:00Z"
    )
    no_node_set = PolicyResult("ml", None, states={"NoNodeSet": ("no nodeSets for tier ml",)})
    assert policy_status(no_node_set, now=NOW)["state"] == [
        {"type": "NoNodeSet", "messages": ["no nodeSets for tier ml"]}
    ]


def test_storage_nodes_are_added_for_the_total() -> None:
    """10Gi to 20Gi nodes, 1 to 5 of them, 50Gi needed in total and 15Gi on one node: nodes of
    the largest size (the total over one node, capped), then as many as the total needs."""
    limits = _limits(storage={"min": "10Gi", "max": "20Gi"})
    result = compute_policy(limits, _response({"storage": 15 * GI}, {"storage": 50 * GI}), ["data"])
    assert result.resources == _r(3, storage=20)
    assert not result.states


def test_ml_node_settings() -> None:
    ml = parse_policy_limits(
        _policy("ml", ("ml",), nodeCount={"min": 0, "max": 3}, memory={"min": "1Gi", "max": "8Gi"})
    )
    ml_small = parse_policy_limits(
        _policy(
            "ml2",
            ("ml", "data"),
            nodeCount={"min": 0, "max": 2},
            memory={"min": "1Gi", "max": "2Gi"},
        )
    )
    data = parse_policy_limits(_policy(**MEMORY))
    assert ml_node_settings([ml, ml_small, data]) == {
        "xpack.ml.max_ml_node_size": f"{8 * GI}b",
        "xpack.ml.max_lazy_ml_nodes": 5,
        "xpack.ml.use_auto_machine_memory_percent": True,
    }
    assert ml_node_settings([data])["xpack.ml.max_ml_node_size"] == "0b"


def _stateful_set(replicas: int, storage: str | None, memory: str | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "elasticsearch"}
    if memory is not None:
        container["resources"] = {"requests": {"memory": memory}, "limits": {"memory": memory}}
    claims = (
        [] if storage is None else [{"spec": {"resources": {"requests": {"storage": storage}}}}]
    )
    return {
        "spec": {
            "replicas": replicas,
            "volumeClaimTemplates": claims,
            "template": {"spec": {"containers": [container]}},
        }
    }


def test_imported_status_entry() -> None:
    limits = _limits(**BOTH)
    entry = imported_status_entry(
        limits,
        [
            ("a", _stateful_set(2, "20Gi", "4Gi")),
            ("b", _stateful_set(1, "30Gi", "2Gi")),
            ("c", None),
        ],
    )
    assert entry == {
        "name": "data",
        "nodeSets": [{"name": "a", "nodeCount": 2}, {"name": "b", "nodeCount": 1}],
        "resources": {
            "requests": {"memory": "4Gi", "storage": "30Gi"},
            "limits": {"memory": "4Gi"},
        },
    }
    # What the policy does not size is not imported; nothing at all without StatefulSets.
    memory_only = imported_status_entry(_limits(**MEMORY), [("a", _stateful_set(2, "20Gi", None))])
    assert memory_only == {
        "name": "data",
        "nodeSets": [{"name": "a", "nodeCount": 2}],
        "resources": {},
    }
    assert imported_status_entry(limits, [("a", None)]) is None
    two_claims = _stateful_set(1, "1Gi", None)
    two_claims["spec"]["volumeClaimTemplates"] *= 2
    with pytest.raises(VolumeClaimError):
        imported_status_entry(limits, [("a", two_claims)])


def test_unused_policies() -> None:
    policies = [_policy(), _policy("ml", ("ml",))]
    assert unused_policies(policies, {"data": ["hot"], "ml": []}) == [
        f'{P1}.roles: Invalid value: []string{{"ml"}}: roles must be used in at least one nodeSet'
    ]
    assert unused_policies(policies, {"data": ["hot"], "ml": ["ml"]}) == []
