"""The policy kinds' webhook rules: one table per kind, valid and invalid rows."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.policies.autoscaling.validation import validate_elasticsearch_autoscaler
from stackflow.stack.policies.validation import (
    FieldError,
    validate_autoops_agent_policy,
    validate_stack_config_policy,
)


def policy(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


NOTHING_SET = "One out of Elasticsearch or Kibana settings is mandatory, both must not be empty"
MOUNT = "spec.elasticsearch.secretMounts[{}].mountPath"

# (spec, every expected problem)
STACK_CONFIG_POLICY_ROWS: list[tuple[dict[str, Any], list[FieldError]]] = [
    ({"elasticsearch": {"clusterSettings": {"a": "b"}}}, []),
    ({"elasticsearch": {"indexTemplates": {"componentTemplates": {"t": {}}}}}, []),
    ({"kibana": {"secureSettings": [{"secretName": "s"}]}}, []),
    ({"secureSettings": [{"secretName": "s"}]}, []),
    ({}, [("spec", NOTHING_SET)]),
    ({"weight": 3, "resourceSelector": {"matchLabels": {"a": "b"}}}, [("spec", NOTHING_SET)]),
    # Empty groups configure nothing.
    (
        {"elasticsearch": {"clusterSettings": {}, "indexTemplates": {}}, "kibana": {"config": {}}},
        [("spec", NOTHING_SET)],
    ),
    (
        {
            "elasticsearch": {
                "secretMounts": [
                    {"secretName": "a", "mountPath": "/a"},
                    {"secretName": "b", "mountPath": "/b"},
                ]
            }
        },
        [],
    ),
    (
        {
            "elasticsearch": {
                "secretMounts": [
                    {"secretName": "a", "mountPath": "/a"},
                    {"secretName": "b", "mountPath": "/a"},
                    {"secretName": "c"},
                ]
            }
        },
        [
            (MOUNT.format(1), "mountPath is already used by another secret mount"),
            (MOUNT.format(2), "mountPath is required"),
        ],
    ),
    (
        {
            "kibana": {"config": {"a": "${A}"}},
            "variablesFrom": [
                {"kind": "ConfigMap", "name": "vars"},
                {"kind": "Secret", "name": "creds", "namespace": "other", "optional": True},
            ],
        },
        [],
    ),
    (
        {"kibana": {"config": {"a": 1}}, "variablesFrom": [{"kind": "Pod", "name": "p"}, {}]},
        [
            ("spec.variablesFrom[0].kind", "kind must be ConfigMap or Secret"),
            ("spec.variablesFrom[1].kind", "kind must be ConfigMap or Secret"),
            ("spec.variablesFrom[1].name", "name is required"),
        ],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), STACK_CONFIG_POLICY_ROWS)
def test_stack_config_policy(spec: dict[str, Any], expected: list[FieldError]) -> None:
    assert validate_stack_config_policy(policy(spec)) == expected


REF = {"name": "es"}
NODES = {"nodeCount": {"min": 1, "max": 3}}
P0 = "spec.policies[0]"

# (spec, every expected problem)
AUTOSCALER_ROWS: list[tuple[dict[str, Any], list[FieldError]]] = [
    ({"elasticsearchRef": REF}, []),
    (
        {
            "elasticsearchRef": REF,
            "policies": [
                {"name": "hot", "roles": ["data_hot"], "resources": NODES},
                {
                    "name": "ml",
                    "roles": ["ml"],
                    "resources": {
                        "nodeCount": {"max": 2},
                        "cpu": {"min": "500m", "max": 2, "requestsToLimitsRatio": "1.5"},
                        "memory": {"min": "1Gi", "max": "2Gi"},
                        "storage": {"min": "1Gi", "max": "1Gi"},
                    },
                },
            ],
        },
        [],
    ),
    ({}, [("spec.elasticsearchRef.name", "elasticsearchRef.name is required")]),
    (
        {"elasticsearchRef": REF, "policies": [{"resources": NODES}]},
        [(f"{P0}.name", "name is required"), (f"{P0}.roles", "roles are required")],
    ),
    (
        {"elasticsearchRef": REF, "policies": [{"name": "p", "roles": ["data"]}]},
        [(f"{P0}.resources.nodeCount.max", "max node count is required")],
    ),
    (
        {
            "elasticsearchRef": REF,
            "policies": [
                {"name": "p", "roles": ["data"], "resources": {"nodeCount": {"min": 4, "max": 3}}}
            ],
        },
        [(f"{P0}.resources.nodeCount.max", "max must be greater than or equal to min")],
    ),
    (
        {
            "elasticsearchRef": REF,
            "policies": [
                {
                    "name": "p",
                    "roles": ["data"],
                    "resources": {
                        "nodeCount": {"min": -1, "max": 0},
                        "memory": {"min": "4Gi", "max": "2Gi"},
                        "cpu": {"min": "lots", "requestsToLimitsRatio": "0.5"},
                    },
                }
            ],
        },
        [
            (f"{P0}.resources.nodeCount.min", "min must be a non-negative quantity"),
            (f"{P0}.resources.nodeCount.max", "max must be a positive quantity"),
            (f"{P0}.resources.cpu.min", "min must be a non-negative quantity"),
            (
                f"{P0}.resources.cpu.requestsToLimitsRatio",
                "need a ratio of at least 1 (the limit is the request times the ratio) "
                "or 0 (no limit), got '0.5'",
            ),
            (f"{P0}.resources.memory.max", "max must be greater than or equal to min"),
        ],
    ),
    (
        {
            "elasticsearchRef": REF,
            "policies": [
                {"name": "p", "roles": ["data", "ingest"], "resources": NODES},
                {"name": "p", "roles": ["ingest", "data"], "resources": NODES},
            ],
        },
        [
            ("spec.policies[1].name", "policy name is duplicated"),
            ("spec.policies[1].roles", "roles set is already used by another policy"),
        ],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), AUTOSCALER_ROWS)
def test_elasticsearch_autoscaler(spec: dict[str, Any], expected: list[FieldError]) -> None:
    assert validate_elasticsearch_autoscaler(policy(spec)) == expected


VALID_AUTOOPS = {
    "version": "9.2.4",
    "autoOpsRef": {"secretName": "autoops"},
    "resourceSelector": {"matchLabels": {"autoops": "on"}},
}
TOO_LOW = "unsupported version: version {} is lower than the lowest supported version of {}"
TOO_HIGH = "unsupported version: version {} is higher than the highest supported major version 9"

# (spec, enterprise, every expected problem)
AUTOOPS_ROWS: list[tuple[dict[str, Any], bool, list[FieldError]]] = [
    (VALID_AUTOOPS, False, []),
    (VALID_AUTOOPS, True, []),
    ({**VALID_AUTOOPS, "version": "9.2.1"}, True, []),
    ({**VALID_AUTOOPS, "version": "9.99.0"}, False, []),
    (
        {
            **VALID_AUTOOPS,
            "resourceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
        },
        False,
        [],
    ),
    (
        {**VALID_AUTOOPS, "version": "9.2.1"},
        False,
        [("spec.version", TOO_LOW.format("9.2.1", "9.2.4"))],
    ),
    (
        {**VALID_AUTOOPS, "version": "9.2.0"},
        True,
        [("spec.version", TOO_LOW.format("9.2.0", "9.2.1"))],
    ),
    ({**VALID_AUTOOPS, "version": "10.0.0"}, True, [("spec.version", TOO_HIGH.format("10.0.0"))]),
    (
        {"version": "9.3.0", "resourceSelector": {}},
        True,
        [
            ("spec.autoOpsRef.secretName", "autoOpsRef.secretName is required"),
            ("spec.resourceSelector", "resourceSelector must have matchLabels or matchExpressions"),
        ],
    ),
    (
        {**VALID_AUTOOPS, "config": {"a": 1}, "configRef": {"secretName": "c"}},
        True,
        [("spec.config", "Specify at most one of [config, configRef], not both")],
    ),
    (
        {},
        True,
        [
            ("spec.version", "version is required"),
            ("spec.autoOpsRef.secretName", "autoOpsRef.secretName is required"),
            ("spec.resourceSelector", "resourceSelector must have matchLabels or matchExpressions"),
        ],
    ),
]


@pytest.mark.parametrize(("spec", "enterprise", "expected"), AUTOOPS_ROWS)
def test_autoops_agent_policy(
    spec: dict[str, Any], enterprise: bool, expected: list[FieldError]
) -> None:
    assert validate_autoops_agent_policy(policy(spec), enterprise=enterprise) == expected


def test_autoops_unparseable_version() -> None:
    problems = validate_autoops_agent_policy(
        policy({**VALID_AUTOOPS, "version": "nine"}), enterprise=True
    )
    assert [path for path, _ in problems] == ["spec.version"]
    assert problems[0][1].startswith("Invalid version: ")
