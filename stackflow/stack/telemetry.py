"""ECK's telemetry document, as a pure function: the managed objects in, ``telemetry.yml`` out.

ECK's leader writes, every ``telemetry-interval``, one YAML document into the config Secret of
every managed Kibana (``<kb>-kb-config``, key ``telemetry.yml``), from where Kibana reports it:

    eck: {operator_uuid, custom_operator_namespace, distribution, distributionChannel,
          build: {version, hash, date, snapshot}, stats: {<kind>: {...}}, license: {...}}

``stats`` counts the objects of each kind (``resource_count``, ``pod_count`` from the status'
available Pods, ``helm_resource_count`` for objects installed by Elastic's Helm charts) plus a
few counters per kind; ``license`` is the licensing usage report minus its timestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

__all__ = [
    "DEFAULT_OPERATOR_NAMESPACE",
    "HELM_CHART_LABEL",
    "STATS_KEYS",
    "TELEMETRY_KEY",
    "OperatorInfo",
    "kibana_config_secret_name",
    "telemetry_document",
    "telemetry_stats",
    "telemetry_yaml",
]

#: The config Secret key Kibana reads the document from.
TELEMETRY_KEY = "telemetry.yml"
#: ECK's default operator namespace: any other is reported as a custom one.
DEFAULT_OPERATOR_NAMESPACE = "elastic-system"
#: The label Helm puts on what it installs; Elastic's charts are named ``eck-…``.
HELM_CHART_LABEL = "helm.sh/chart"

#: The ``stats`` key of each kind, in ECK's order.
STATS_KEYS: Mapping[str, str] = {
    "Elasticsearch": "elasticsearches",
    "Kibana": "kibanas",
    "ApmServer": "apms",
    "Beat": "beats",
    "EnterpriseSearch": "enterprisesearches",
    "Agent": "agents",
    "ElasticMapsServer": "maps",
    "StackConfigPolicy": "stackconfigpolicies",
    "Logstash": "logstashes",
    "AutoOpsAgentPolicy": "autoopsagentpolicies",
}


@dataclass(frozen=True)
class OperatorInfo:
    """What the document says about the operator itself."""

    operator_uuid: str
    operator_namespace: str
    #: The Kubernetes distribution (the API server's ``gitVersion``).
    distribution: str
    version: str
    distribution_channel: str = ""
    build_hash: str = ""
    build_date: str = ""
    build_snapshot: str = "false"


def kibana_config_secret_name(kibana_name: str) -> str:
    """The config Secret of Kibana `kibana_name`, which carries the document."""
    return f"{kibana_name}-kb-config"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _spec(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(manifest.get("spec"))


def _pods(manifest: Mapping[str, Any]) -> int:
    available = _mapping(manifest.get("status")).get("availableNodes")
    return available if isinstance(available, int) and not isinstance(available, bool) else 0


def _is_helm_managed(manifest: Mapping[str, Any]) -> bool:
    labels = _mapping(_mapping(manifest.get("metadata")).get("labels"))
    chart = labels.get(HELM_CHART_LABEL)
    return isinstance(chart, str) and chart.startswith("eck-")


def _elasticsearch_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    spec = _spec(manifest)
    annotations = _mapping(_mapping(manifest.get("metadata")).get("annotations"))
    monitoring = _mapping(spec.get("monitoring"))
    remote_clusters = _sequence(spec.get("remoteClusters"))
    return {
        "autoscaled_resource_count": int(
            "elasticsearch.alpha.elastic.co/autoscaling-spec" in annotations
        ),
        "stack_monitoring_logs_count": int(
            bool(_sequence(_mapping(monitoring.get("logs")).get("elasticsearchRefs")))
        ),
        "stack_monitoring_metrics_count": int(
            bool(_sequence(_mapping(monitoring.get("metrics")).get("elasticsearchRefs")))
        ),
        "remote_clusters": len(remote_clusters),
        "remote_clusters_api_keys": sum(
            1 for cluster in remote_clusters if _mapping(cluster).get("apiKey") is not None
        ),
        "downward_node_labels_count": int(bool(_sequence(spec.get("downwardNodeLabels")))),
    }


def _agent_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    spec = _spec(manifest)
    return {
        "fleet_mode": int(spec.get("mode") == "fleet"),
        "fleet_server": int(spec.get("fleetServerEnabled") is True),
        "multiple_refs": int(len(_sequence(spec.get("elasticsearchRefs"))) > 1),
    }


def _logstash_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    spec = _spec(manifest)
    return {
        "pipeline_count": len(_sequence(spec.get("pipelines"))),
        "pipeline_ref_count": int(spec.get("pipelinesRef") is not None),
        "service_count": len(_sequence(spec.get("services"))),
    }


def _beat_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    beat_type = _spec(manifest).get("type")
    return {f"{beat_type}_count": 1} if isinstance(beat_type, str) and beat_type else {}


def _policy_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    spec = _spec(manifest)
    counters: dict[str, int] = {}
    for section in ("elasticsearch", "kibana"):
        for setting, value in _mapping(spec.get(section)).items():
            if value:
                counters[f"{section}_{_snake(setting)}_count"] = 1
    return counters


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _no_counters(manifest: Mapping[str, Any]) -> dict[str, int]:
    return {}


#: Kind-specific counters: each object adds its values to the kind's stats.
_COUNTERS: Mapping[str, Callable[[Mapping[str, Any]], dict[str, int]]] = {
    "Elasticsearch": _elasticsearch_counters,
    "Agent": _agent_counters,
    "Logstash": _logstash_counters,
    "Beat": _beat_counters,
    "StackConfigPolicy": _policy_counters,
}


def telemetry_stats(
    objects: Mapping[str, Iterable[Mapping[str, Any]]],
) -> dict[str, dict[str, int]]:
    """``stats``: per kind of `objects` (manifests by kind name), its counts and counters.

    Every kind of ``STATS_KEYS`` is present, with zero counts when none of its objects exists.
    """
    stats: dict[str, dict[str, int]] = {}
    for kind, key in STATS_KEYS.items():
        manifests = list(objects.get(kind, ()))
        counts = {
            "resource_count": len(manifests),
            "pod_count": sum(_pods(manifest) for manifest in manifests),
            "helm_resource_count": sum(_is_helm_managed(manifest) for manifest in manifests),
        }
        counters = _COUNTERS.get(kind, _no_counters)
        for manifest in manifests:
            for name, value in counters(manifest).items():
                counts[name] = counts.get(name, 0) + value
        stats[key] = counts
    return stats


def telemetry_document(
    operator: OperatorInfo,
    objects: Mapping[str, Iterable[Mapping[str, Any]]],
    license_report: Mapping[str, str],
) -> dict[str, Any]:
    """The telemetry document for `operator`, the managed `objects` and the licensing report."""
    return {
        "eck": {
            "operator_uuid": operator.operator_uuid,
            "custom_operator_namespace": operator.operator_namespace != DEFAULT_OPERATOR_NAMESPACE,
            "distribution": operator.distribution,
            "distributionChannel": operator.distribution_channel,
            "build": {
                "version": operator.version,
                "hash": operator.build_hash,
                "date": operator.build_date,
                "snapshot": operator.build_snapshot,
            },
            "stats": telemetry_stats(objects),
            "license": dict(license_report),
        }
    }


def telemetry_yaml(document: Mapping[str, Any]) -> str:
    """The document as the YAML text written under ``telemetry.yml`` (stable key order)."""
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)
