"""The table of stack applications: one entry per kind, everything the shared builder needs to know.

Adding a kind is one :class:`AppKind` entry (plus, when the kind needs settings of its own, a
``parts`` hook). Strings may use ``{type}``, replaced by the Beat type.

The table is the top of the package's kind layer: it imports the row type (:class:`AppKind`, from
:mod:`stackflow.stack.apps.context`) and the ``parts`` hooks; neither imports it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.stack.apps import hooks_http, hooks_ingest
from stackflow.stack.apps.context import (
    DAEMON_SET,
    DEPLOYMENT,
    STATEFUL_SET,
    AppKind,
    ClaimTemplate,
)

__all__ = [
    "APP_KINDS",
    "DAEMON_SET",
    "DEPLOYMENT",
    "FLEET_SERVER_PORT",
    "SHORT_NAMES",
    "STATEFUL_SET",
    "AppKind",
    "ClaimTemplate",
    "app_kind",
]

FLEET_SERVER_PORT = 8220


def _fleet_server_enabled(spec: Mapping[str, Any]) -> bool:
    return spec.get("mode") == "fleet" and bool(spec.get("fleetServerEnabled"))


APP_KINDS: Mapping[str, AppKind] = {
    entry.kind: entry
    for entry in (
        AppKind(
            kind="Kibana",
            api_version="kibana.k8s.elastic.co/v1",
            short="kb",
            type_label="kibana",
            label_prefix="kibana.k8s.elastic.co",
            container_name="kibana",
            image_repository="docker.elastic.co/kibana/kibana",
            config_file="kibana.yml",
            config_path="/usr/share/kibana/config/kibana.yml",
            # ECK 3.5's default (it raised Kibana's from 1Gi: Kibana 9 needs the headroom).
            default_memory="2Gi",
            log_module="kibana",
            http_port=5601,
            readiness_path="/login",
            automount_service_account_token=False,
            parts=hooks_http.kibana_parts,
        ),
        AppKind(
            kind="ApmServer",
            api_version="apm.k8s.elastic.co/v1",
            short="apm",
            type_label="apm-server",
            label_prefix="apm.k8s.elastic.co",
            container_name="apm-server",
            image_repository="docker.elastic.co/apm/apm-server",
            config_file="apm-server.yml",
            config_path="/usr/share/apm-server/config/config-secret/apm-server.yml",
            default_memory="512Mi",
            http_port=8200,
            readiness_path="/",
            workload_parts=("server",),
            automount_service_account_token=False,
            parts=hooks_http.apm_parts,
        ),
        AppKind(
            kind="EnterpriseSearch",
            api_version="enterprisesearch.k8s.elastic.co/v1",
            short="ent",
            type_label="enterprise-search",
            label_prefix="enterprisesearch.k8s.elastic.co",
            container_name="enterprise-search",
            image_repository="docker.elastic.co/enterprise-search/enterprise-search",
            config_file="enterprise-search.yml",
            config_path="/usr/share/enterprise-search/config/enterprise-search.yml",
            default_memory="4Gi",
            http_port=3002,
            readiness_path="/api/ent/v1/internal/health",
            automount_service_account_token=False,
            parts=hooks_http.enterprise_search_parts,
        ),
        AppKind(
            kind="Beat",
            api_version="beat.k8s.elastic.co/v1beta1",
            short="beat",
            type_label="beat",
            label_prefix="beat.k8s.elastic.co",
            container_name="{type}",
            image_repository="docker.elastic.co/beats/{type}",
            config_file="{type}.yml",
            config_path="/etc/beat.yml",
            default_memory="300Mi",
            workload_parts=("{type}",),
            workload_sections={"daemonSet": DAEMON_SET, "deployment": DEPLOYMENT},
            config_secret_parts=("{type}", "config"),
            parts=hooks_ingest.beat_parts,
        ),
        AppKind(
            kind="Agent",
            api_version="agent.k8s.elastic.co/v1alpha1",
            short="agent",
            type_label="agent",
            label_prefix="agent.k8s.elastic.co",
            container_name="agent",
            image_repository="docker.elastic.co/beats/elastic-agent",
            config_file="agent.yml",
            config_path="/etc/agent.yml",
            default_memory="400Mi",
            http_port=FLEET_SERVER_PORT,
            serves_http=_fleet_server_enabled,
            workload_sections={
                "daemonSet": DAEMON_SET,
                "deployment": DEPLOYMENT,
                "statefulSet": STATEFUL_SET,
            },
            parts=hooks_ingest.agent_parts,
        ),
        AppKind(
            kind="Logstash",
            api_version="logstash.k8s.elastic.co/v1alpha1",
            short="ls",
            type_label="logstash",
            label_prefix="logstash.k8s.elastic.co",
            container_name="logstash",
            image_repository="docker.elastic.co/logstash/logstash",
            config_file="logstash.yml",
            config_path="/usr/share/logstash/config/logstash.yml",
            default_memory="2Gi",
            http_port=9600,
            http_tls=False,
            http_service_parts=("api",),
            http_port_name="api",
            readiness_path="/",
            workload_kind=STATEFUL_SET,
            claim_template=ClaimTemplate("logstash-data", "1.5Gi", "/usr/share/logstash/data"),
            user_services=True,
            parts=hooks_ingest.logstash_parts,
        ),
        AppKind(
            kind="ElasticMapsServer",
            api_version="maps.k8s.elastic.co/v1alpha1",
            short="ems",
            type_label="maps",
            label_prefix="maps.k8s.elastic.co",
            container_name="maps",
            image_repository="docker.elastic.co/elastic-maps-service/elastic-maps-server",
            config_file="elastic-maps-server.yml",
            config_path="/usr/src/app/server/config/elastic-maps-server.yml",
            default_memory="200Mi",
            http_port=8080,
            readiness_path="/status",
            automount_service_account_token=False,
            parts=hooks_http.maps_parts,
        ),
        AppKind(
            kind="PackageRegistry",
            api_version="packageregistry.k8s.elastic.co/v1alpha1",
            short="epr",
            type_label="package-registry",
            label_prefix="packageregistry.k8s.elastic.co",
            container_name="package-registry",
            image_repository="docker.elastic.co/package-registry/distribution",
            config_file="config.yml",
            config_path="/package-registry/config.yml",
            default_memory="1Gi",
            http_port=8080,
            readiness_path="/health",
            automount_service_account_token=False,
            parts=hooks_http.package_registry_parts,
        ),
    )
}
"""Every stack application kind, keyed by Kubernetes kind."""

SHORT_NAMES: Mapping[str, AppKind] = {entry.short: entry for entry in APP_KINDS.values()}
"""The same table keyed by short name (``kb``, ``apm``…)."""


def app_kind(kind: str) -> AppKind:
    """Return the table entry of ``kind`` (a Kubernetes kind or a short name); ``KeyError`` if unknown."""
    if kind in APP_KINDS:
        return APP_KINDS[kind]
    return SHORT_NAMES[kind]
