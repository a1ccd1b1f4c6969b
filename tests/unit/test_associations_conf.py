"""The conf annotation: names, JSON, stale clean-up, service URLs and external targets."""

from __future__ import annotations

import json

import pytest

from stackflow.stack.associations.conf import (
    AssociationConf,
    ConfError,
    conf_annotation_name,
    external_conf,
    managed_conf,
    no_auth_conf,
    parse_conf,
    service_url,
    stale_conf_annotations,
)
from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.table import association_named

ES_REF = AssociationRef(
    association="agent-es",
    target_kind="Elasticsearch",
    namespace="namespace1",
    name="elasticsearch1",
)


@pytest.mark.parametrize(
    ("association", "expected"),
    [
        ("agent-es", "association.k8s.elastic.co/es-conf-2150608354"),
        ("logstash-es", "association.k8s.elastic.co/es-conf-2150608354"),
        ("kb-es", "association.k8s.elastic.co/es-conf"),
        ("beat-kibana", "association.k8s.elastic.co/kb-conf"),
        ("agent-fleetserver", "association.k8s.elastic.co/fs-conf"),
    ],
)
def test_conf_annotation_name(association: str, expected: str) -> None:
    assert conf_annotation_name(association_named(association), ES_REF) == expected


def test_conf_json_is_go_shaped_and_round_trips() -> None:
    conf = managed_conf(
        ca_secret_name="kb-kb-es-ca",
        ca_cert_provided=True,
        url="https://es-es-http.ns.svc:9200",
        version="8.15.0",
        auth_secret_name="kb-kibana-user",
        auth_secret_key="ns-kb-kibana-user",
    )
    assert conf.to_json() == (
        '{"authSecretName":"kb-kibana-user","authSecretKey":"ns-kb-kibana-user","isApiKey":false,'
        '"isServiceAccount":false,"caCertProvided":true,"caSecretName":"kb-kb-es-ca",'
        '"url":"https://es-es-http.ns.svc:9200","version":"8.15.0"}'
    )
    assert parse_conf(conf.to_json()) == conf
    assert conf.is_configured()


def test_optional_fields_appear_only_when_set() -> None:
    conf = AssociationConf(
        auth_secret_name="-",
        additional_secrets_hash="42",
        serverless=True,
        client_cert_secret_name="cc",
        transitive_es_client_cert_secret_name="tc",
    )
    data = json.loads(conf.to_json())
    assert list(data) == [
        "authSecretName", "authSecretKey", "isApiKey", "isServiceAccount", "caCertProvided",
        "caSecretName", "additionalSecretsHash", "url", "version", "serverless",
        "clientCertSecretName", "transitiveESRef",
    ]  # fmt: skip
    assert data["transitiveESRef"] == {"clientCertSecretName": "tc"}
    assert parse_conf(conf.to_json()) == conf


@pytest.mark.parametrize(
    ("conf", "configured"),
    [
        (no_auth_conf(ca_secret_name="", ca_cert_provided=False, url="http://x", version=""), True),
        (AssociationConf(auth_secret_name="s", url="http://x"), False),
        (AssociationConf(auth_secret_name="s", auth_secret_key="k", url=""), False),
        (AssociationConf(auth_secret_name="-", url="https://x", ca_cert_provided=True), False),
    ],
)
def test_is_configured(conf: AssociationConf, configured: bool) -> None:
    assert conf.is_configured() is configured


@pytest.mark.parametrize("value", ["not json", "[1]"])
def test_parse_conf_rejects_garbage(value: str) -> None:
    with pytest.raises(ConfError):
        parse_conf(value)


def test_stale_annotations_are_those_without_a_current_ref() -> None:
    agent_es = association_named("agent-es")
    current = conf_annotation_name(agent_es, ES_REF)
    annotations = {
        current: "{}",
        "association.k8s.elastic.co/es-conf-1234": "{}",
        "association.k8s.elastic.co/es-conf": "{}",
        "association.k8s.elastic.co/kb-conf": "{}",
        "unrelated": "x",
    }
    assert stale_conf_annotations(agent_es, annotations=annotations, refs=[ES_REF]) == [
        "association.k8s.elastic.co/es-conf",
        "association.k8s.elastic.co/es-conf-1234",
    ]
    kb_es = association_named("kb-es")
    assert stale_conf_annotations(kb_es, annotations=annotations, refs=[]) == [
        "association.k8s.elastic.co/es-conf",
        "association.k8s.elastic.co/es-conf-1234",
        current,
    ]


SERVICE = {
    "metadata": {"name": "es-es-http", "namespace": "ns"},
    "spec": {"ports": [{"name": "https", "port": 9200}]},
}


@pytest.mark.parametrize(
    ("scheme", "base_path", "url"),
    [
        ("https", "", "https://es-es-http.ns.svc:9200"),
        ("https", "/kibana", "https://es-es-http.ns.svc:9200/kibana"),
        ("http", "", None),
    ],
)
def test_service_url(scheme: str, base_path: str, url: str | None) -> None:
    assert service_url(SERVICE, scheme=scheme, base_path=base_path) == url


EXTERNAL = AssociationRef(
    association="kb-es", target_kind="Elasticsearch", namespace="ns", secret_name="remote"
)


@pytest.mark.parametrize(
    ("data", "key", "is_api_key", "ca"),
    [
        (
            {"url": b"https://remote:9243", "username": b"u", "password": b"p"},
            "password",
            False,
            "",
        ),
        (
            {"url": b"https://remote:9243", "api-key": b"k", "ca.crt": b"PEM"},
            "api-key",
            True,
            "remote",
        ),
    ],
)
def test_external_conf(data: dict[str, bytes], key: str, is_api_key: bool, ca: str) -> None:
    conf = external_conf(ref=EXTERNAL, secret_data=data, version="8.15.0")
    assert conf.auth_secret_name == "remote"
    assert (conf.auth_secret_key, conf.is_api_key, conf.ca_secret_name) == (key, is_api_key, ca)
    assert conf.ca_cert_provided is bool(ca)
    assert conf.url == "https://remote:9243"
    assert conf.version == "8.15.0"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"username": b"u", "password": b"p"}, "url secret field cannot be empty"),
        ({"url": b"https://r", "password": b"p"}, "username secret field cannot be empty"),
        ({"url": b"https://r", "username": b"u"}, "password secret field cannot be empty"),
    ],
)
def test_external_conf_errors(data: dict[str, bytes], message: str) -> None:
    with pytest.raises(ConfError, match=message):
        external_conf(ref=EXTERNAL, secret_data=data, version="")
    with pytest.raises(ConfError, match="not an external reference"):
        external_conf(ref=ES_REF, secret_data=data, version="")
