"""Wrong-shaped and oversized specs are refused by the pure validation, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from activities.unknown_fields import unknown_fields_message
from stackflow.api.kinds import unknown_spec_fields
from stackflow.stack.apps.validation import validate_application
from stackflow.stack.elasticsearch.validation import (
    max_node_set_count,
    too_many_cluster_nodes_message,
    validate_elasticsearch,
)
from stackflow.stack.spec_shapes import MAX_CONFIG_BYTES, MAX_SPEC_DEPTH


def elasticsearch(**node_set: Any) -> dict[str, Any]:
    """A one-node-set Elasticsearch whose node set has ``node_set`` on top of a valid one."""
    return {
        "metadata": {"name": "es", "namespace": "ns"},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1, **node_set}]},
    }


def nested(levels: int) -> dict[str, Any]:
    """A map nested ``levels`` levels deep."""
    value: dict[str, Any] = {"leaf": "value"}
    for _ in range(levels):
        value = {"level": value}
    return value


NODE_SET = "spec.nodeSets[0]"

REFUSED = [
    pytest.param(
        {"podTemplate": {"spec": {"containers": "x"}}},
        f"{NODE_SET}.podTemplate.spec.containers",
        "must be a list of containers, not a string ('x')",
        id="containers-a-string",
    ),
    pytest.param(
        {"podTemplate": "x"},
        f"{NODE_SET}.podTemplate",
        "must be a map (a PodTemplateSpec), not a string",
        id="pod-template-a-string",
    ),
    pytest.param(
        {"podTemplate": {"spec": ["x"]}},
        f"{NODE_SET}.podTemplate.spec",
        "must be a map (a PodSpec), not a list",
        id="pod-spec-a-list",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"containers": ["elasticsearch"]}}},
        f"{NODE_SET}.podTemplate.spec.containers[0]",
        "must be a map, not a string",
        id="container-a-string",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"containers": [{"name": "elasticsearch", "env": "A=1"}]}}},
        f"{NODE_SET}.podTemplate.spec.containers[0].env",
        "must be a list, not a string",
        id="env-not-a-list",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"containers": [{"name": "elasticsearch", "env": ["A=1"]}]}}},
        f"{NODE_SET}.podTemplate.spec.containers[0].env[0]",
        "must be a map, not a string",
        id="env-item-a-string",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"initContainers": {"name": "x"}}}},
        f"{NODE_SET}.podTemplate.spec.initContainers",
        "must be a list of containers, not a map",
        id="init-containers-a-map",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"volumes": "data"}}},
        f"{NODE_SET}.podTemplate.spec.volumes",
        "must be a list, not a string",
        id="volumes-a-string",
    ),
    pytest.param(
        {"podTemplate": {"metadata": {"labels": {"tier": 3}}}},
        f"{NODE_SET}.podTemplate.metadata.labels.tier",
        "must be a string, not a number",
        id="label-a-number",
    ),
    pytest.param(
        {"podTemplate": {"spec": {"containers": [{"name": "x", "resources": "big"}]}}},
        f"{NODE_SET}.podTemplate.spec.containers[0].resources",
        "must be a map with requests and limits, not a string",
        id="container-resources-a-string",
    ),
    pytest.param(
        {
            "podTemplate": {
                "spec": {"containers": [{"name": "x", "resources": {"limits": {"cpu": "two"}}}]}
            }
        },
        f"{NODE_SET}.podTemplate.spec.containers[0].resources.limits.cpu",
        "'two' is not a Kubernetes quantity",
        id="container-cpu-garbage",
    ),
    pytest.param(
        {"resources": {"requests": {"memory": "lots"}}},
        f"{NODE_SET}.resources.requests.memory",
        "'lots' is not a Kubernetes quantity",
        id="memory-garbage",
    ),
    pytest.param(
        {"resources": {"limits": {"memory": "-2Gi"}}},
        f"{NODE_SET}.resources.limits.memory",
        "'-2Gi' must not be negative",
        id="memory-negative",
    ),
    pytest.param(
        {"volumeClaimTemplates": {"metadata": {"name": "elasticsearch-data"}}},
        f"{NODE_SET}.volumeClaimTemplates",
        "must be a list of PersistentVolumeClaims, not a map",
        id="claims-a-map",
    ),
    pytest.param(
        {
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "elasticsearch-data"},
                    "spec": {"resources": {"requests": {"storage": "huge"}}},
                }
            ]
        },
        f"{NODE_SET}.volumeClaimTemplates[0].spec.resources.requests.storage",
        "'huge' is not a Kubernetes quantity",
        id="storage-garbage",
    ),
    pytest.param(
        {"volumeClaimTemplates": [{"metadata": {"name": 7}}]},
        f"{NODE_SET}.volumeClaimTemplates[0].metadata.name",
        "must be a string, not a number",
        id="claim-name-a-number",
    ),
    pytest.param(
        {"config": {"node.roles": ["master", "bogus"]}},
        f"{NODE_SET}.config.node.roles",
        "unknown node role 'bogus'",
        id="unknown-role",
    ),
    pytest.param(
        {"config": {"node": {"roles": "garbage"}}},
        f"{NODE_SET}.config.node.roles",
        "unknown node role 'garbage'",
        id="garbage-roles-nested",
    ),
    pytest.param(
        {"config": {"node.roles": {"master": True}}},
        f"{NODE_SET}.config.node.roles",
        "must be a list of node roles, not a map",
        id="roles-a-map",
    ),
    pytest.param(
        {"count": 2147483647},
        f"{NODE_SET}.count",
        f"count 2147483647 is more than the {max_node_set_count()} nodes a node set may have",
        id="count-int32-max",
    ),
    pytest.param(
        {"count": 300},
        f"{NODE_SET}.count",
        "transport certificates Secret, which may hold at most 1 MiB",
        id="count-300",
    ),
    pytest.param(
        {"config": {"deep": nested(MAX_SPEC_DEPTH + 10)}},
        f"{NODE_SET}.config.deep",
        f"nested more than {MAX_SPEC_DEPTH} levels deep",
        id="config-too-deep",
    ),
    pytest.param(
        {"config": {f"setting{index}": "v" * 1000 for index in range(800)}},
        f"{NODE_SET}.config",
        f"larger than the {MAX_CONFIG_BYTES} bytes allowed",
        id="config-too-large",
    ),
]


@pytest.mark.parametrize(("node_set", "field", "message"), REFUSED)
def test_a_wrong_shaped_node_set_is_refused_naming_its_field(
    node_set: dict[str, Any], field: str, message: str
) -> None:
    problems = validate_elasticsearch(elasticsearch(**node_set))
    assert any(path.startswith(field) and message in text for path, text in problems), problems


ACCEPTED = [
    pytest.param({}, id="plain"),
    pytest.param({"count": max_node_set_count()}, id="count-at-the-limit"),
    pytest.param({"config": {"deep": nested(150)}}, id="config-150-levels"),
    pytest.param({"config": {"node.roles": []}}, id="coordinating-only-with-a-master-elsewhere"),
    pytest.param({"config": {"node.roles": "master, data"}}, id="roles-as-a-string"),
    pytest.param(
        {"config": {"node": {"roles": ["master", "data_hot", "voting_only", "ml"]}}},
        id="roles-nested",
    ),
    pytest.param(
        {"resources": {"requests": {"memory": "2Gi", "cpu": 1}, "limits": {"cpu": "500m"}}},
        id="quantities",
    ),
    pytest.param(
        {
            "podTemplate": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "containers": [
                        {
                            "name": "elasticsearch",
                            "env": [{"name": "A", "value": "1"}],
                            "resources": {"limits": {"memory": "4Gi"}},
                        }
                    ],
                    "volumes": [{"name": "elasticsearch-data", "emptyDir": {}}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "elasticsearch-data"},
                    "spec": {"resources": {"requests": {"storage": "1.5Ti"}}},
                }
            ],
        },
        id="full-pod-template",
    ),
]


@pytest.mark.parametrize("node_set", ACCEPTED)
def test_a_well_formed_node_set_is_accepted(node_set: dict[str, Any]) -> None:
    es = elasticsearch(**node_set)
    if node_set.get("config", {}).get("node.roles") == []:
        es["spec"]["nodeSets"].append({"name": "masters", "count": 1})
    assert validate_elasticsearch(es) == []


def test_the_node_set_limit_shrinks_with_the_users_transport_names() -> None:
    sans = [{"dns": f"{'x' * 60}-{index}.example.com"} for index in range(20)]
    es = elasticsearch(count=max_node_set_count())
    es["spec"]["transport"] = {"tls": {"subjectAltNames": sans}}
    problems = validate_elasticsearch(es)
    assert [path for path, _ in problems] == [f"{NODE_SET}.count"]


@pytest.mark.parametrize(("extra", "refused"), [(0, False), (1, True)])
def test_a_cluster_may_declare_at_most_a_thousand_nodes(extra: int, refused: bool) -> None:
    es = elasticsearch()
    es["spec"]["nodeSets"] = [{"name": f"set-{index}", "count": 200} for index in range(5)]
    es["spec"]["nodeSets"][0]["count"] += extra
    expected = [("spec.nodeSets", too_many_cluster_nodes_message(1001))] if refused else []
    assert validate_elasticsearch(es) == expected


def test_a_spec_nested_thousands_deep_is_refused_without_recursion() -> None:
    es = elasticsearch()
    es["spec"]["http"] = nested(20_000)
    assert validate_elasticsearch(es) == [
        ("spec.http.level.level.level", f"nested more than {MAX_SPEC_DEPTH} levels deep")
    ]


@pytest.mark.parametrize(
    ("kind", "spec", "field", "message"),
    [
        pytest.param(
            "Kibana",
            {"podTemplate": {"spec": {"containers": "x"}}},
            "spec.podTemplate.spec.containers",
            "must be a list of containers, not a string",
            id="kibana-containers",
        ),
        pytest.param(
            "Beat",
            {"type": "filebeat", "daemonSet": {"podTemplate": {"spec": {"volumes": 3}}}},
            "spec.daemonSet.podTemplate.spec.volumes",
            "must be a list, not a number",
            id="beat-volumes",
        ),
        pytest.param(
            "Agent",
            {"statefulSet": {"volumeClaimTemplates": [{"spec": {"resources": "1Gi"}}]}},
            "spec.statefulSet.volumeClaimTemplates[0].spec.resources",
            "must be a map with requests and limits",
            id="agent-claims",
        ),
        pytest.param(
            "Kibana",
            {"config": nested(MAX_SPEC_DEPTH + 1)},
            "spec.config.level.level.level",
            "nested more than",
            id="kibana-config-too-deep",
        ),
    ],
)
def test_a_wrong_shaped_application_is_refused_naming_its_field(
    kind: str, spec: dict[str, Any], field: str, message: str
) -> None:
    obj = {"metadata": {"name": "app", "namespace": "ns"}, "spec": {"version": "9.1.0", **spec}}
    problems = validate_application(kind, obj)
    assert any(path == field and message in text for path, text in problems), problems


@pytest.mark.parametrize(
    ("obj", "fields"),
    [
        pytest.param(
            {
                "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                "kind": "Elasticsearch",
                "metadata": {"name": "es", "managedFields": []},
                "spec": {
                    "version": "9.1.0",
                    "nodeSet": [{"name": "typo"}],
                    "nodeSets": [
                        {"name": "default", "count": 1, "cont": 3, "config": {"any": {"x": 1}}}
                    ],
                    "http": {"tls": {"selfSignedCertificate": {"disabled": True, "sans": 1}}},
                },
                "status": {"somethingNew": 1},
            },
            [
                "spec.nodeSet",
                "spec.nodeSets[0].cont",
                "spec.http.tls.selfSignedCertificate.sans",
            ],
            id="elasticsearch-typos",
        ),
        pytest.param(
            {
                "apiVersion": "kibana.k8s.elastic.co/v1",
                "kind": "Kibana",
                "metadata": {"name": "kb"},
                "spec": {"version": "9.1.0", "count": 1, "podTemplate": {"spec": {"x": 1}}},
            },
            [],
            id="kibana-free-form-pod-template",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "spec": {"a": 1}},
            [],
            id="not-an-eck-kind",
        ),
        pytest.param(
            {
                "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                "kind": "Elasticsearch",
                "metadata": {"name": "es"},
                "spec": {"version": "9.1.0", "nodeSets": "x", "extra": 1},
            },
            [],
            id="does-not-parse",
        ),
    ],
)
def test_unknown_spec_fields_are_the_undeclared_ones_outside_free_form_parts(
    obj: dict[str, Any], fields: list[str]
) -> None:
    assert sorted(unknown_spec_fields(obj)) == sorted(fields)


def test_the_unknown_fields_warning_names_ten_fields_and_counts_the_rest() -> None:
    fields = [f"spec.field{index}" for index in range(12)]
    message = unknown_fields_message("Kibana", "ns/kb", fields)
    assert message == (
        "Kibana ns/kb has fields this operator does not know, kept but ignored: "
        + ", ".join(fields[:10])
        + " and 2 more"
    )
