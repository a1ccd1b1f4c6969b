"""ECK-style manifests of every kind, spec and status as ECK writes them: shared by the API model
and the CRD tests."""

from __future__ import annotations

from typing import Any


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
"""One ECK-style manifest per kind (spec and status), by kind."""
