"""ECK's telemetry document (``stackflow.stack.telemetry``): stats per kind, operator info, license."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stackflow.stack.telemetry import (
    STATS_KEYS,
    OperatorInfo,
    kibana_config_secret_name,
    telemetry_document,
    telemetry_stats,
    telemetry_yaml,
)


def obj(
    spec: dict[str, Any] | None = None,
    *,
    available: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A manifest with the given spec, status.availableNodes, labels and annotations."""
    manifest: dict[str, Any] = {
        "metadata": {"name": "x", "labels": labels or {}, "annotations": annotations or {}},
        "spec": spec or {},
    }
    if available is not None:
        manifest["status"] = {"availableNodes": available}
    return manifest


ZERO = {"resource_count": 0, "pod_count": 0, "helm_resource_count": 0}


@pytest.mark.parametrize(
    ("objects", "key", "expected"),
    [
        pytest.param({}, "kibanas", ZERO, id="no-objects-zero-counts"),
        pytest.param(
            {"Kibana": [obj(available=2), obj(available=1), obj()]},
            "kibanas",
            {"resource_count": 3, "pod_count": 3, "helm_resource_count": 0},
            id="kibana-counts-and-pods",
        ),
        pytest.param(
            {
                "ApmServer": [
                    obj(labels={"helm.sh/chart": "eck-apm-server-0.1.0"}),
                    obj(labels={"helm.sh/chart": "my-own-chart-1.0"}),
                ]
            },
            "apms",
            {"resource_count": 2, "pod_count": 0, "helm_resource_count": 1},
            id="only-elastic-charts-count-as-helm",
        ),
        pytest.param(
            {
                "Elasticsearch": [
                    obj(
                        {
                            "monitoring": {"metrics": {"elasticsearchRefs": [{"name": "mon"}]}},
                            "remoteClusters": [{"name": "a", "apiKey": {}}, {"name": "b"}],
                        },
                        available=3,
                        annotations={"elasticsearch.alpha.elastic.co/autoscaling-spec": "{}"},
                    ),
                    obj({"downwardNodeLabels": ["topology.kubernetes.io/zone"]}),
                ]
            },
            "elasticsearches",
            {
                **ZERO,
                "resource_count": 2,
                "pod_count": 3,
                "autoscaled_resource_count": 1,
                "stack_monitoring_logs_count": 0,
                "stack_monitoring_metrics_count": 1,
                "remote_clusters": 2,
                "remote_clusters_api_keys": 1,
                "downward_node_labels_count": 1,
            },
            id="elasticsearch-counters",
        ),
        pytest.param(
            {
                "Agent": [
                    obj({"mode": "fleet", "fleetServerEnabled": True}),
                    obj({"mode": "fleet", "elasticsearchRefs": [{"name": "a"}, {"name": "b"}]}),
                    obj({}),
                ]
            },
            "agents",
            {**ZERO, "resource_count": 3, "fleet_mode": 2, "fleet_server": 1, "multiple_refs": 1},
            id="agent-counters",
        ),
        pytest.param(
            {
                "Beat": [
                    obj({"type": "filebeat"}),
                    obj({"type": "filebeat"}),
                    obj({"type": "auditbeat"}),
                ]
            },
            "beats",
            {**ZERO, "resource_count": 3, "filebeat_count": 2, "auditbeat_count": 1},
            id="beat-types",
        ),
        pytest.param(
            {"Logstash": [obj({"pipelines": [{}, {}], "services": [{}]})]},
            "logstashes",
            {
                **ZERO,
                "resource_count": 1,
                "pipeline_count": 2,
                "pipeline_ref_count": 0,
                "service_count": 1,
            },
            id="logstash-counters",
        ),
        pytest.param(
            {
                "StackConfigPolicy": [
                    obj(
                        {"elasticsearch": {"clusterSettings": {"a": 1}, "snapshotRepositories": {}}}
                    )
                ]
            },
            "stackconfigpolicies",
            {**ZERO, "resource_count": 1, "elasticsearch_cluster_settings_count": 1},
            id="policy-setting-types",
        ),
    ],
)
def test_stats(
    objects: dict[str, list[dict[str, Any]]], key: str, expected: dict[str, int]
) -> None:
    """Each kind's counts and its own counters."""
    assert telemetry_stats(objects)[key] == expected


def test_every_kind_is_reported() -> None:
    """``stats`` has every kind ECK reports, even with no objects."""
    assert list(telemetry_stats({})) == list(STATS_KEYS.values())


OPERATOR = OperatorInfo(
    operator_uuid="0f6b4c1e-uuid",
    operator_namespace="elastic-system",
    distribution="v1.31.0",
    version="0.1.0",
    distribution_channel="helm",
)


@pytest.mark.parametrize(
    ("operator", "custom_namespace"),
    [
        (OPERATOR, False),
        (OperatorInfo("u", "ops", "v1.31.0", "0.1.0"), True),
    ],
)
def test_document(operator: OperatorInfo, custom_namespace: bool) -> None:
    """The ``eck`` document: operator fields, build, stats and the license report."""
    license_report = {"eck_license_level": "enterprise", "enterprise_resource_units": "1"}
    document = telemetry_document(operator, {"Kibana": [obj(available=1)]}, license_report)
    eck = document["eck"]
    assert list(eck) == [
        "operator_uuid",
        "custom_operator_namespace",
        "distribution",
        "distributionChannel",
        "build",
        "stats",
        "license",
    ]
    assert eck["operator_uuid"] == operator.operator_uuid
    assert eck["custom_operator_namespace"] is custom_namespace
    assert eck["distribution"] == "v1.31.0"
    assert eck["build"]["version"] == "0.1.0"
    assert eck["stats"]["kibanas"]["resource_count"] == 1
    assert eck["license"] == license_report


def test_yaml_round_trips() -> None:
    """The text written into the Secret parses back to the document."""
    document = telemetry_document(OPERATOR, {}, {"eck_license_level": "basic"})
    text = telemetry_yaml(document)
    assert text.startswith("eck:\n")
    assert yaml.safe_load(text) == document


def test_config_secret_name() -> None:
    """The document goes into ``<kb>-kb-config``."""
    assert kibana_config_secret_name("quickstart") == "quickstart-kb-config"
