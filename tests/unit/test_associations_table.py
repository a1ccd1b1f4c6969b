"""The association table: thirteen pairs, ECK's names, labels, roles and service accounts."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.associations.table import (
    ASSOCIATIONS,
    AuthMode,
    UnknownAssociationError,
    association_named,
    associations_of,
    elastic_service_account,
    find_association,
)


def test_table_has_the_thirteen_pairs_once() -> None:
    names = [association.name for association in ASSOCIATIONS]
    assert sorted(names) == sorted(
        [
            "kb-es", "apm-es", "apm-kibana", "ent-es", "beat-es", "beat-kibana", "agent-es",
            "agent-kibana", "agent-fleetserver", "logstash-es", "ems-es", "kb-ent", "kb-epr",
        ]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "associated", "target", "suffix", "annotation", "hashed", "label_type"),
    [
        ("kb-es", "Kibana", "Elasticsearch", "kibana-user", "association.k8s.elastic.co/es-conf", False, "kibanaassociation.k8s.elastic.co/type"),
        ("apm-kibana", "ApmServer", "Kibana", "apm-kb-user", "association.k8s.elastic.co/kb-conf", False, "apmassociation.k8s.elastic.co/type"),
        ("agent-es", "Agent", "Elasticsearch", "agent-user", "association.k8s.elastic.co/es-conf", True, "agentassociation.k8s.elastic.co/type"),
        ("agent-fleetserver", "Agent", "Agent", None, "association.k8s.elastic.co/fs-conf", False, "agentassociation.k8s.elastic.co/type"),
        ("logstash-es", "Logstash", "Elasticsearch", "logstash-user", "association.k8s.elastic.co/es-conf", True, "logstashassociation.k8s.elastic.co/type"),
        ("ems-es", "ElasticMapsServer", "Elasticsearch", "maps-user", "association.k8s.elastic.co/es-conf", False, "mapsassociation.k8s.elastic.co/type"),
        ("kb-ent", "Kibana", "EnterpriseSearch", None, "association.k8s.elastic.co/ent-conf", False, "kibanaassociation.k8s.elastic.co/type"),
        ("kb-epr", "Kibana", "PackageRegistry", None, "association.k8s.elastic.co/epr-conf", False, "kibanaassociation.k8s.elastic.co/type"),
    ],
)  # fmt: skip
def test_rows_carry_eck_names(
    name: str,
    associated: str,
    target: str,
    suffix: str | None,
    annotation: str,
    hashed: bool,
    label_type: str,
) -> None:
    association = association_named(name)
    assert association.associated_kind == associated
    assert association.target.kind == target
    assert association.user_secret_suffix == suffix
    assert association.annotation_base == annotation
    assert association.hashed_annotation is hashed
    assert association.label_type == label_type
    assert association.controller_name == f"{name}-association-controller"
    assert (association.auth_mode is AuthMode.NONE) is (suffix is None)


def _obj(kind: str, **spec: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": "ns", "name": "x"}, "spec": spec}


@pytest.mark.parametrize(
    ("name", "obj", "roles"),
    [
        ("kb-es", _obj("Kibana", version="8.15.0"), "kibana_system"),
        ("apm-es", _obj("ApmServer", version="8.15.0"), "eck_apm_user_role_v87,apm_system"),
        ("apm-es", _obj("ApmServer", version="8.3.0"), "eck_apm_user_role_v80,apm_system"),
        ("apm-es", _obj("ApmServer", version="7.17.0"), "eck_apm_user_role_v75,ingest_admin,apm_system"),
        ("apm-kibana", _obj("ApmServer", version="8.15.0"), "eck_apm_agent_user_role"),
        ("ent-es", _obj("EnterpriseSearch", version="8.15.0"), "superuser"),
        ("beat-es", _obj("Beat", type="filebeat", version="8.15.0"), "kibana_admin,ingest_admin,beats_admin,remote_monitoring_agent,eck_beat_es_filebeat_role_v77"),
        ("beat-es", _obj("Beat", type="mybeat", version="8.15.0"), "eck_beat_es_mybeat_role"),
        ("beat-kibana", _obj("Beat", type="metricbeat", version="7.4.0"), "kibana_user,ingest_admin,beats_admin,eck_beat_kibana_metricbeat_role_v73"),
        ("agent-es", _obj("Agent", version="8.15.0"), "eck_agent_user_role"),
        ("agent-es", _obj("Agent", version="7.16.0", fleetServerEnabled=True), "superuser"),
        ("agent-kibana", _obj("Agent", version="8.15.0"), "eck_fleet_admin_user_role"),
        ("agent-kibana", _obj("Agent", version="8.0.1"), "superuser"),
        ("logstash-es", _obj("Logstash", version="8.15.0"), "eck_logstash_user_role"),
        ("ems-es", _obj("ElasticMapsServer", version="8.15.0"), "elastic_internal_probe_user"),
        ("kb-ent", _obj("Kibana", version="8.15.0"), ""),
    ],
)  # fmt: skip
def test_user_roles(name: str, obj: dict[str, Any], roles: str) -> None:
    assert association_named(name).roles_for(obj) == roles


@pytest.mark.parametrize(
    ("name", "obj", "account"),
    [
        ("kb-es", _obj("Kibana", version="7.17.0"), "elastic/kibana"),
        ("kb-es", _obj("Kibana", version="7.16.3"), None),
        (
            "agent-es",
            _obj("Agent", version="8.15.0", fleetServerEnabled=True),
            "elastic/fleet-server",
        ),
        ("agent-es", _obj("Agent", version="8.15.0"), None),
        ("apm-es", _obj("ApmServer", version="8.15.0"), None),
    ],
)
def test_elastic_service_account(name: str, obj: dict[str, Any], account: str | None) -> None:
    assert elastic_service_account(association_named(name), obj) == account


def test_find_association_and_errors() -> None:
    assert find_association("Agent", "Agent").name == "agent-fleetserver"
    assert {a.name for a in associations_of("Kibana")} == {"kb-es", "kb-ent", "kb-epr"}
    assert associations_of("Elasticsearch") == ()
    with pytest.raises(UnknownAssociationError, match="cannot be associated"):
        find_association("Kibana", "Kibana")
    with pytest.raises(UnknownAssociationError):
        association_named("es-es")


def test_target_names() -> None:
    target = association_named("kb-es").target
    assert target.http_service_name("prod") == "prod-es-http"
    assert target.public_certs_secret_name("prod") == "prod-es-http-certs-public"
    assert association_named("agent-fleetserver").target.default_port == 8220
