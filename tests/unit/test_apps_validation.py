"""Webhook validation of the stack applications: every message, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.apps import application_warnings, validate_application
from stackflow.stack.apps import validation as v

BEAT = {"type": "filebeat", "daemonSet": {}}
AGENT = {"deployment": {}}
FLEET = {"mode": "fleet", "policyID": "p", "deployment": {}}
FLEET_SERVER = {**FLEET, "fleetServerEnabled": True}


def obj(kind: str, spec: dict[str, Any], name: str = "app") -> dict[str, Any]:
    """Return an object of ``kind`` with version 8.15.0 unless ``spec`` says otherwise."""
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"version": "8.15.0", **spec},
    }


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        ("Kibana", {}),
        ("Kibana", {"elasticsearchRef": {"name": "es", "namespace": "other"}, "count": 0}),
        ("Kibana", {"elasticsearchRef": {"secretName": "external"}}),
        ("ApmServer", {"elasticsearchRef": {"name": "es"}, "kibanaRef": {"name": "kb"}}),
        ("EnterpriseSearch", {"version": "8.17.0"}),
        ("Beat", BEAT),
        ("Beat", {"type": "mybeat", "image": "me/mybeat:1", "deployment": {}}),
        ("Agent", AGENT),
        (
            "Agent",
            {
                **AGENT,
                "elasticsearchRefs": [
                    {"name": "a", "outputName": "default"},
                    {"name": "b", "outputName": "x"},
                ],
            },
        ),
        ("Agent", {**FLEET, "kibanaRef": {"name": "kb"}, "fleetServerRef": {"name": "fs"}}),
        ("Agent", {**FLEET_SERVER, "elasticsearchRefs": [{"name": "es"}], "http": {"tls": {}}}),
        (
            "Logstash",
            {"version": "8.12.0", "elasticsearchRefs": [{"name": "es", "clusterName": "eu"}]},
        ),
        ("ElasticMapsServer", {"configRef": {"secretName": "x"}}),
        ("PackageRegistry", {"version": "9.1.0"}),
    ],
)
def test_valid_objects(kind: str, spec: dict[str, Any]) -> None:
    assert validate_application(kind, obj(kind, spec)) == []


@pytest.mark.parametrize(
    ("kind", "spec", "name", "expected"),
    [
        ("Kibana", {}, "x" * 37, ("metadata.name", v.NAME_TOO_LONG)),
        ("Kibana", {"version": ""}, "kb", ("spec.version", "version is required")),
        (
            "Kibana",
            {"version": "8.x"},
            "kb",
            ("spec.version", "Invalid version: invalid version '8.x': expected major.minor.patch"),
        ),
        (
            "Kibana",
            {"version": "7.16.3"},
            "kb",
            (
                "spec.version",
                "unsupported version: version 7.16.3 is lower than the lowest supported version of 7.17.0",
            ),
        ),
        (
            "EnterpriseSearch",
            {"version": "9.0.0"},
            "ent",
            (
                "spec.version",
                "unsupported version: version 9.0.0 is higher than the highest supported version of 8.99.99",
            ),
        ),
        (
            "Logstash",
            {"version": "8.11.4"},
            "ls",
            (
                "spec.version",
                "unsupported version: version 8.11.4 is lower than the lowest supported version of 8.12.0",
            ),
        ),
        ("Kibana", {"count": -1}, "kb", ("spec.count", "count must be a non-negative integer")),
        (
            "Kibana",
            {"elasticsearchRef": {"name": "es", "secretName": "s"}},
            "kb",
            ("spec.elasticsearchRef", v.NAME_AND_SECRET_NAME),
        ),
        (
            "ApmServer",
            {"kibanaRef": {"secretName": "s", "namespace": "o"}},
            "apm",
            ("spec.kibanaRef", v.SECRET_NAME_WITH_NAMESPACE),
        ),
        (
            "Kibana",
            {"enterpriseSearchRef": {"secretName": "s", "serviceName": "svc"}},
            "kb",
            ("spec.enterpriseSearchRef", v.SECRET_NAME_WITH_NAMESPACE),
        ),
        (
            "Beat",
            {
                **BEAT,
                "monitoring": {
                    "metrics": {"elasticsearchRefs": [{"name": "m", "secretName": "s"}]}
                },
            },
            "b",
            ("spec.monitoring.metrics.elasticsearchRefs[0]", v.NAME_AND_SECRET_NAME),
        ),
        (
            "Kibana",
            {"config": {"a": 1}, "configRef": {"secretName": "c"}},
            "kb",
            ("spec", "Specify at most one of [config, configRef], not both"),
        ),
        ("Beat", {"type": "filebeat"}, "b", ("spec", v.BEAT_WORKLOAD)),
        (
            "Beat",
            {"type": "filebeat", "daemonSet": {}, "deployment": {}},
            "b",
            ("spec", v.BEAT_WORKLOAD),
        ),
        ("Beat", {"daemonSet": {}}, "b", ("spec.type", "type is required")),
        (
            "Beat",
            {"type": "mybeat", "daemonSet": {}},
            "b",
            (
                "spec.image",
                "Image is required if Beat type is not one of [filebeat, metricbeat, heartbeat, auditbeat, journalbeat, packetbeat]",
            ),
        ),
        ("Agent", {}, "a", ("spec", v.AGENT_WORKLOAD)),
        ("Agent", {"daemonSet": {}, "statefulSet": {}}, "a", ("spec", v.AGENT_WORKLOAD)),
        ("Agent", {**FLEET, "config": {"a": 1}}, "a", ("spec.config", v.AGENT_CONFIG_IN_FLEET)),
        (
            "Agent",
            {**FLEET, "configRef": {"secretName": "c"}},
            "a",
            ("spec.configRef", v.AGENT_CONFIG_REF_IN_FLEET),
        ),
        (
            "Agent",
            {**AGENT, "fleetServerEnabled": True},
            "a",
            ("spec.fleetServerEnabled", v.AGENT_FLEET_SERVER_IN_STANDALONE),
        ),
        (
            "Agent",
            {**AGENT, "kibanaRef": {"name": "kb"}},
            "a",
            ("spec.kibanaRef", "don't specify kibanaRef, it can't be set in the standalone mode"),
        ),
        (
            "Agent",
            {**AGENT, "fleetServerRef": {"name": "fs"}},
            "a",
            (
                "spec.fleetServerRef",
                "don't specify fleetServerRef, it can't be set in the standalone mode",
            ),
        ),
        (
            "Agent",
            {**FLEET_SERVER, "fleetServerRef": {"name": "fs"}},
            "a",
            ("spec.fleetServerRef", v.AGENT_FLEET_SERVER_AND_REF),
        ),
        (
            "Agent",
            {**FLEET, "http": {"tls": {}}},
            "a",
            ("spec.http", v.AGENT_HTTP_WITHOUT_FLEET_SERVER),
        ),
        (
            "Agent",
            {**FLEET, "elasticsearchRefs": [{"name": "es"}]},
            "a",
            ("spec.elasticsearchRefs", v.AGENT_ES_REFS_WITHOUT_FLEET_SERVER),
        ),
        (
            "Agent",
            {
                **FLEET_SERVER,
                "elasticsearchRefs": [
                    {"name": "a", "outputName": "a"},
                    {"name": "b", "outputName": "b"},
                ],
            },
            "a",
            ("spec.elasticsearchRefs", v.AGENT_ONE_ES_REF_IN_FLEET),
        ),
        (
            "Agent",
            {
                **AGENT,
                "elasticsearchRefs": [
                    {"name": "a", "outputName": "default"},
                    {"name": "b", "outputName": "default"},
                ],
            },
            "a",
            ("spec.elasticsearchRefs", v.AGENT_ONE_DEFAULT_OUTPUT),
        ),
        (
            "Agent",
            {**AGENT, "elasticsearchRefs": [{"name": "a", "outputName": "default"}, {"name": "b"}]},
            "a",
            ("spec.elasticsearchRefs[1].outputName", v.AGENT_UNNAMED_REFS),
        ),
        (
            "Logstash",
            {"elasticsearchRefs": [{"name": "es"}]},
            "ls",
            ("spec.elasticsearchRefs[0].clusterName", v.LOGSTASH_CLUSTER_NAME),
        ),
        (
            "Logstash",
            {
                "elasticsearchRefs": [
                    {"name": "a", "clusterName": "eu"},
                    {"name": "b", "clusterName": "eu"},
                ]
            },
            "ls",
            (
                "spec.elasticsearchRefs[1].clusterName",
                "clusterName 'eu' is used by more than one reference",
            ),
        ),
        (
            "Logstash",
            {"pipelines": [{"pipeline.id": "main"}], "pipelinesRef": {"secretName": "p"}},
            "ls",
            ("spec", "Specify at most one of [pipelines, pipelinesRef], not both"),
        ),
    ],
)
def test_invalid_objects(
    kind: str, spec: dict[str, Any], name: str, expected: tuple[str, str]
) -> None:
    assert validate_application(kind, obj(kind, spec, name)) == [expected]


def test_every_problem_is_reported() -> None:
    errors = validate_application(
        "Agent", obj("Agent", {"version": "1.0.0", "mode": "fleet", "config": {"a": 1}}, "x" * 40)
    )
    assert [field for field, _ in errors] == [
        "metadata.name",
        "spec.version",
        "spec",
        "spec.config",
    ]


@pytest.mark.parametrize(
    ("kind", "spec", "expected"),
    [
        (
            "Agent",
            {"mode": "fleet", "deployment": {}},
            [("spec.policyID", v.AGENT_POLICY_ID_WARNING)],
        ),
        ("Agent", FLEET, []),
        ("Agent", AGENT, []),
        ("Kibana", {}, []),
    ],
)
def test_warnings(kind: str, spec: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert application_warnings(kind, obj(kind, spec)) == expected
