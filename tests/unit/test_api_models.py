"""The ECK API models: ECK manifests parse, round-trip unchanged, and bad fields are named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stackflow.api.agent import Agent
from stackflow.api.base import InvalidResourceError
from stackflow.api.common import ObjectSelector
from stackflow.api.elasticsearch import Elasticsearch
from stackflow.api.kibana import Kibana
from stackflow.api.kinds import KINDS, kind_for_object, kind_info, parse_object


def _meta(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"team": "search"}}


ELASTICSEARCH: dict[str, Any] = {
    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
    "kind": "Elasticsearch",
    "metadata": {
        **_meta("quickstart"),
        "annotations": {"eck.k8s.elastic.co/downward-node-labels": "topology.kubernetes.io/zone"},
        "uid": "6f1c",
        "generation": 3,
        "resourceVersion": "42",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {
        "version": "9.1.0",
        "image": "docker.elastic.co/elasticsearch/elasticsearch:9.1.0",
        "http": {
            "service": {"spec": {"type": "LoadBalancer"}},
            "tls": {
                "selfSignedCertificate": {"subjectAltNames": [{"dns": "es.example.com"}]},
                "client": {"authentication": True},
            },
        },
        "transport": {
            "service": {"metadata": {"labels": {"x": "y"}}},
            "tls": {
                "otherNameSuffix": "node.cluster.local",
                "certificateAuthorities": {"configMapName": "trusted-cas"},
                "selfSignedCertificates": {"disabled": False},
            },
        },
        "remoteClusterServer": {"enabled": True},
        "nodeSets": [
            {
                "name": "masters",
                "count": 3,
                "config": {"node.roles": ["master"], "node.store.allow_mmap": False},
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": 2}},
                "zoneAwareness": {"zones": ["a", "b"]},
                "podTemplate": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "elasticsearch", "env": [{"name": "X"}]}]},
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "elasticsearch-data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}},
                            "storageClassName": "fast",
                        },
                    }
                ],
            },
            {"name": "data", "count": 0},
        ],
        "updateStrategy": {"changeBudget": {"maxUnavailable": 2, "maxSurge": -1}},
        "podDisruptionBudget": {},
        "auth": {"roles": [{"secretName": "roles"}], "fileRealm": [{"secretName": "users"}]},
        "secureSettings": [{"secretName": "s3", "entries": [{"key": "k", "path": "p"}]}],
        "serviceAccountName": "es",
        "remoteClusters": [
            {
                "name": "other",
                "elasticsearchRef": {"name": "other", "namespace": "ns2"},
                "apiKey": {
                    "access": {
                        "search": {
                            "names": ["logs-*"],
                            "field_security": {"grant": ["*"], "except": ["secret"]},
                            "allow_restricted_indices": False,
                        },
                        "replication": {"names": ["logs-*"]},
                    }
                },
            }
        ],
        "volumeClaimDeletePolicy": "DeleteOnScaledownOnly",
        "monitoring": {"metrics": {"elasticsearchRefs": [{"name": "monitoring"}]}},
        "revisionHistoryLimit": 2,
        "aFutureEckField": {"nested": [1, "two", None]},
    },
    "status": {
        "availableNodes": 3,
        "version": "9.1.0",
        "health": "green",
        "phase": "Ready",
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "ReconciliationComplete",
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "message": "",
            }
        ],
        "inProgressOperations": {
            "downscale": {"lastUpdatedTime": "2026-01-01T00:00:00Z", "nodes": [], "stalled": False},
            "upgrade": {"lastUpdatedTime": "2026-01-01T00:00:00Z"},
            "upscale": {"lastUpdatedTime": "2026-01-01T00:00:00Z"},
        },
        "monitoringAssociationStatus": {"default/monitoring": "Established"},
    },
}

KIBANA: dict[str, Any] = {
    "apiVersion": "kibana.k8s.elastic.co/v1",
    "kind": "Kibana",
    "metadata": _meta("kb", "kibana"),
    "spec": {
        "version": "9.1.0",
        "count": 2,
        "elasticsearchRef": {"name": "quickstart", "namespace": "default"},
        "enterpriseSearchRef": {"secretName": "ent-external"},
        "packageRegistryRef": {"name": "epr"},
        "config": {"server.publicBaseUrl": "https://kb.example.com"},
        "http": {"tls": {"certificate": {"secretName": "kb-cert"}}},
        "podTemplate": {"spec": {"containers": [{"name": "kibana"}]}},
        "secureSettings": [{"secretName": "kb-secure"}],
        "monitoring": {"logs": {"elasticsearchRefs": [{"name": "mon", "namespace": "obs"}]}},
    },
    "status": {
        "availableNodes": 2,
        "count": 2,
        "selector": "common.k8s.elastic.co/type=kibana,kibana.k8s.elastic.co/name=kb",
        "version": "9.1.0",
        "health": "green",
        "associationStatus": "Established",
        "elasticsearchAssociationStatus": "Established",
        "enterpriseSearchAssociationStatus": "Pending",
        "packageRegistryAssociationStatus": "",
        "observedGeneration": 1,
    },
}


def _simple(
    api_version: str, kind: str, spec: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _meta(kind.lower()),
        "spec": spec,
        "status": status,
    }


APM = _simple(
    "apm.k8s.elastic.co/v1",
    "ApmServer",
    {
        "version": "9.1.0",
        "count": 1,
        "elasticsearchRef": {"name": "quickstart"},
        "kibanaRef": {"name": "kb"},
        "config": {"apm-server.rum.enabled": True},
    },
    {
        "service": "apm-apm-http",
        "secretTokenSecret": "apm-apm-token",
        "kibanaAssociationStatus": "Failed",
    },
)
ENTERPRISE_SEARCH = _simple(
    "enterprisesearch.k8s.elastic.co/v1",
    "EnterpriseSearch",
    {
        "version": "8.18.0",
        "count": 1,
        "configRef": {"secretName": "ent-cfg"},
        "elasticsearchRef": {"name": "es"},
    },
    {"service": "ent-ent-http", "associationStatus": "Established", "health": "red"},
)
BEAT = _simple(
    "beat.k8s.elastic.co/v1beta1",
    "Beat",
    {
        "type": "filebeat",
        "version": "9.1.0",
        "elasticsearchRef": {"name": "quickstart"},
        "config": {
            "filebeat.inputs": [{"type": "container", "paths": ["/var/log/containers/*.log"]}]
        },
        "daemonSet": {
            "podTemplate": {"spec": {"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True}},
            "updateStrategy": {"type": "RollingUpdate"},
        },
    },
    {
        "expectedNodes": 3,
        "availableNodes": 3,
        "health": "green",
        "elasticsearchAssociationStatus": "Established",
    },
)
AGENT = _simple(
    "agent.k8s.elastic.co/v1alpha1",
    "Agent",
    {
        "version": "9.1.0",
        "mode": "fleet",
        "fleetServerEnabled": True,
        "policyID": "eck-fleet-server",
        "spaceID": "default",
        "elasticsearchRefs": [{"name": "quickstart", "outputName": "default"}],
        "kibanaRef": {"name": "kb"},
        "http": {"tls": {"client": {"authentication": False}}},
        "deployment": {"replicas": 1, "podTemplate": {"spec": {"serviceAccountName": "fleet"}}},
    },
    {"elasticsearchAssociationsStatus": {"default/quickstart": "Established"}, "health": "green"},
)
LOGSTASH = _simple(
    "logstash.k8s.elastic.co/v1alpha1",
    "Logstash",
    {
        "version": "9.1.0",
        "count": 1,
        "elasticsearchRefs": [{"name": "quickstart", "clusterName": "prod"}],
        "pipelines": [{"pipeline.id": "main", "config.string": "input { beats { port => 5044 } }"}],
        "services": [
            {"name": "beats", "service": {"spec": {"ports": [{"port": 5044, "name": "beats"}]}}}
        ],
        "volumeClaimTemplates": [{"metadata": {"name": "logstash-data"}}],
    },
    {"expectedNodes": 1, "availableNodes": 1, "selector": "x=y", "health": "green"},
)
MAPS = _simple(
    "maps.k8s.elastic.co/v1alpha1",
    "ElasticMapsServer",
    {"version": "9.1.0", "count": 1, "elasticsearchRef": {"name": "quickstart"}},
    {"associationStatus": "Pending"},
)
PACKAGE_REGISTRY = _simple(
    "packageregistry.k8s.elastic.co/v1alpha1",
    "PackageRegistry",
    {"version": "9.1.0", "count": 1, "config": {"package_paths": ["/packages"]}},
    {"count": 1, "availableNodes": 1},
)
STACK_CONFIG_POLICY = _simple(
    "stackconfigpolicy.k8s.elastic.co/v1alpha1",
    "StackConfigPolicy",
    {
        "resourceSelector": {"matchLabels": {"env": "prod"}},
        "weight": 10,
        "elasticsearch": {
            "clusterSettings": {"indices.recovery.max_bytes_per_sec": "100mb"},
            "snapshotRepositories": {"repo": {"type": "s3", "settings": {"bucket": "b"}}},
            "indexTemplates": {"componentTemplates": {"c": {"template": {}}}},
            "secretMounts": [{"secretName": "s", "mountPath": "/mnt/s"}],
        },
        "kibana": {"config": {"xpack.canvas.enabled": True}},
        "variablesFrom": [{"kind": "ConfigMap", "name": "vars"}],
    },
    {
        "details": {
            "elasticsearch": {
                "default/quickstart": {"phase": "Ready", "currentVersion": 5, "expectedVersion": 5}
            }
        },
        "resources": 1,
        "ready": 1,
        "errors": 0,
        "readyCount": "1/1",
        "phase": "Ready",
    },
)
AUTOSCALER = _simple(
    "autoscaling.k8s.elastic.co/v1alpha1",
    "ElasticsearchAutoscaler",
    {
        "elasticsearchRef": {"name": "quickstart"},
        "pollingPeriod": "30s",
        "policies": [
            {
                "name": "data",
                "roles": ["data", "ingest"],
                "deciders": {"proactive_storage": {"forecast_window": "5m"}},
                "resources": {
                    "nodeCount": {"min": 3, "max": 8},
                    "memory": {"min": "2Gi", "max": "8Gi"},
                },
            }
        ],
    },
    {
        "conditions": [{"type": "Active", "status": "True"}],
        "policies": [{"name": "data", "nodeSets": []}],
    },
)
AUTOOPS = _simple(
    "autoops.k8s.elastic.co/v1alpha1",
    "AutoOpsAgentPolicy",
    {
        "version": "9.2.4",
        "resourceSelector": {"matchExpressions": [{"key": "autoops", "operator": "Exists"}]},
        "namespaceSelector": {},
        "autoOpsRef": {"secretName": "autoops-secret"},
        "config": {"receivers": {}},
    },
    {
        "resources": 2,
        "ready": 1,
        "skipped": 1,
        "readyCount": "1/2",
        "phase": "Ready",
        "details": {"ns/es": {"phase": "Skipped", "message": "version deprecated"}},
    },
)

ECK_MANIFESTS: dict[str, dict[str, Any]] = {
    "Elasticsearch": ELASTICSEARCH,
    "Kibana": KIBANA,
    "ApmServer": APM,
    "EnterpriseSearch": ENTERPRISE_SEARCH,
    "Beat": BEAT,
    "Agent": AGENT,
    "Logstash": LOGSTASH,
    "ElasticMapsServer": MAPS,
    "PackageRegistry": PACKAGE_REGISTRY,
    "StackConfigPolicy": STACK_CONFIG_POLICY,
    "ElasticsearchAutoscaler": AUTOSCALER,
    "AutoOpsAgentPolicy": AUTOOPS,
}
"""One ECK-style manifest per kind (spec and status), shared with the CRD tests."""


def test_every_kind_has_a_manifest() -> None:
    assert set(ECK_MANIFESTS) == {info.kind for info in KINDS}


@pytest.mark.parametrize("kind", sorted(ECK_MANIFESTS))
def test_eck_manifest_round_trips_unchanged(kind: str) -> None:
    manifest = ECK_MANIFESTS[kind]
    original = copy.deepcopy(manifest)
    model = parse_object(manifest)
    assert type(model).__name__ == kind
    assert model.to_object() == original
    assert manifest == original  # parsing does not mutate its input


@pytest.mark.parametrize("kind", sorted(ECK_MANIFESTS))
def test_unknown_fields_survive_at_every_level(kind: str) -> None:
    manifest = copy.deepcopy(ECK_MANIFESTS[kind])
    manifest["topLevelExtra"] = 1
    manifest["spec"]["specExtra"] = {"a": [1, 2]}
    manifest["status"]["statusExtra"] = "x"
    manifest["metadata"]["metadataExtra"] = True
    assert kind_info(kind).model.from_object(manifest).to_object() == manifest


def test_typed_fields_are_read_with_python_names() -> None:
    es = Elasticsearch.from_object(copy.deepcopy(ELASTICSEARCH))
    assert es.name == "quickstart"
    assert es.namespace == "default"
    assert [n.name for n in es.spec.node_sets] == ["masters", "data"]
    assert es.spec.node_sets[0].count == 3
    assert es.spec.http is not None
    assert es.spec.http.tls_enabled()
    assert es.status is not None
    assert es.status.phase == "Ready"
    assert es.status.health == "green"
    kb = Kibana.from_object(copy.deepcopy(KIBANA))
    assert kb.spec.elasticsearch_ref is not None
    assert kb.spec.elasticsearch_ref.key("kibana") == "default/quickstart"
    assert kb.status is not None
    assert kb.status.elasticsearch_association_status == "Established"
    agent = Agent.from_object(copy.deepcopy(AGENT))
    assert agent.spec.policy_id == "eck-fleet-server"
    assert agent.spec.effective_mode() == "fleet"


def test_models_built_in_python_write_eck_names_and_no_defaults() -> None:
    kb = Kibana.model_validate(
        {
            "api_version": "kibana.k8s.elastic.co/v1",
            "kind": "Kibana",
            "metadata": {"name": "kb"},
            "spec": {"version": "9.1.0", "elasticsearch_ref": {"name": "es"}},
        }
    )
    assert kb.to_object() == {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "metadata": {"name": "kb"},
        "spec": {"version": "9.1.0", "elasticsearchRef": {"name": "es"}},
    }


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda o: o["spec"].pop("version"), "spec.version"),
        (lambda o: o["spec"].update(nodeSets=[]), "spec.nodeSets"),
        (lambda o: o["spec"]["nodeSets"][1].update(count="many"), "spec.nodeSets[1].count"),
        (lambda o: o["spec"]["nodeSets"][0].update(name="bad_name!"), "spec.nodeSets[0].name"),
        (lambda o: o["spec"]["nodeSets"][0].update(name="n" * 24), "spec.nodeSets[0].name"),
        (
            lambda o: o["spec"].update(volumeClaimDeletePolicy="Never"),
            "spec.volumeClaimDeletePolicy",
        ),
        (lambda o: o["status"].update(health="purple"), "status.health"),
        (lambda o: o["status"].update(phase="Sleeping"), "status.phase"),
        (lambda o: o.pop("spec"), "spec"),
        (lambda o: o.update(kind="Kibana"), "kind"),
        (lambda o: o.update(apiVersion="kibana.k8s.elastic.co/v1"), "apiVersion"),
    ],
)
def test_validation_errors_name_the_field(mutate: Any, field: str) -> None:
    manifest = copy.deepcopy(ELASTICSEARCH)
    mutate(manifest)
    with pytest.raises(InvalidResourceError) as caught:
        Elasticsearch.from_object(manifest)
    assert any(problem.startswith(f"{field}:") for problem in caught.value.problems), caught.value
    assert "'quickstart'" in str(caught.value)


def test_association_status_values_are_eck_ones() -> None:
    manifest = copy.deepcopy(KIBANA)
    manifest["status"]["elasticsearchAssociationStatus"] = "Connected"
    with pytest.raises(InvalidResourceError, match=r"status\.elasticsearchAssociationStatus"):
        Kibana.from_object(manifest)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {"apiVersion": "elasticsearch.k8s.elastic.co/v1beta1", "kind": "Elasticsearch"},
            "Elasticsearch",
        ),
        ({"apiVersion": "beat.k8s.elastic.co/v1beta1", "kind": "Beat"}, "Beat"),
        ({"apiVersion": "apps/v1", "kind": "Deployment"}, None),
        ({"apiVersion": "kibana.k8s.elastic.co/v1", "kind": "Elasticsearch"}, None),
    ],
)
def test_kind_for_object(obj: dict[str, Any], expected: str | None) -> None:
    info = kind_for_object(obj)
    assert (info.kind if info else None) == expected


def test_parse_object_rejects_non_eck_kinds() -> None:
    with pytest.raises(ValueError, match="not an ECK kind"):
        parse_object({"apiVersion": "v1", "kind": "Secret"})


@pytest.mark.parametrize(
    ("selector", "default_namespace", "key"),
    [
        (ObjectSelector(name="es"), "ns1", "ns1/es"),
        (ObjectSelector(name="es", namespace="other"), "ns1", "other/es"),
    ],
)
def test_object_selector_key(selector: ObjectSelector, default_namespace: str, key: str) -> None:
    assert selector.key(default_namespace) == key
    assert selector.with_default_namespace(default_namespace).namespace == key.split("/")[0]
