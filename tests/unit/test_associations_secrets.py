"""Association Secrets: the CA copy, user Secrets on both sides, password reuse and selectors."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from stackflow.stack.associations import bcrypt
from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.secrets import (
    app_user_secret,
    app_user_secret_name,
    association_secrets_selector,
    ca_cert_provided,
    ca_secret,
    ca_secret_name,
    es_user_name,
    es_user_secret,
    orphaned_secrets,
    user_secret_selector,
)
from stackflow.stack.associations.service_accounts import (
    pbkdf2_stretch_hash,
    service_account_secrets,
)
from stackflow.stack.associations.table import association_named
from stackflow.stack.objects import decode_secret_data

KIBANA = {
    "apiVersion": "kibana.k8s.elastic.co/v1",
    "kind": "Kibana",
    "metadata": {"name": "kb", "namespace": "apps", "uid": "kb-uid"},
    "spec": {"version": "8.15.0", "elasticsearchRef": {"name": "es", "namespace": "data"}},
}
ES = {
    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
    "kind": "Elasticsearch",
    "metadata": {"name": "es", "namespace": "data", "uid": "es-uid"},
}
KB_REF = AssociationRef(
    association="kb-es", target_kind="Elasticsearch", namespace="data", name="es"
)
AGENT_REF = AssociationRef(
    association="agent-es", target_kind="Elasticsearch", namespace="data", name="es"
)


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


@pytest.mark.parametrize(
    ("association", "ref", "ca", "app", "user"),
    [
        ("kb-es", KB_REF, "kb-kb-es-ca", "kb-kibana-user", "apps-kb-kibana-user"),
        ("agent-es", AGENT_REF, "kb-agent-es-data-es-ca", "kb-data-es-agent-user", "apps-kb-data-es-agent-user"),
        ("logstash-es", AGENT_REF, "kb-logstash-es-data-es-ca", "kb-data-es-logstash-user", "apps-kb-data-es-logstash-user"),
    ],
)  # fmt: skip
def test_names(association: str, ref: AssociationRef, ca: str, app: str, user: str) -> None:
    row = association_named(association)
    assert ca_secret_name(row, associated_name="kb", ref=ref) == ca
    assert app_user_secret_name(row, associated_name="kb", ref=ref) == app
    assert es_user_name(row, associated_namespace="apps", associated_name="kb", ref=ref) == user


def test_no_user_names_for_auth_less_associations() -> None:
    with pytest.raises(ValueError, match="no user"):
        app_user_secret_name(association_named("kb-ent"), associated_name="kb", ref=KB_REF)


def test_ca_secret_copies_public_certs_with_labels_and_owner() -> None:
    public = {"data": {"ca.crt": _b64("CA"), "tls.crt": _b64("CRT")}}
    secret = ca_secret(
        association_named("kb-es"), associated=KIBANA, ref=KB_REF, public_certs=public
    )
    assert secret["metadata"]["name"] == "kb-kb-es-ca"
    assert secret["metadata"]["namespace"] == "apps"
    assert secret["metadata"]["labels"] == {
        "elasticsearch.k8s.elastic.co/cluster-name": "es",
        "elasticsearch.k8s.elastic.co/cluster-namespace": "data",
        "kibanaassociation.k8s.elastic.co/name": "kb",
        "kibanaassociation.k8s.elastic.co/namespace": "apps",
        "kibanaassociation.k8s.elastic.co/type": "elasticsearch",
    }
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "kb-uid"
    assert secret["data"] == public["data"]
    assert ca_cert_provided(secret)
    assert not ca_cert_provided({"data": {"tls.crt": _b64("CRT")}})


def test_app_user_secret_generates_then_reuses_password() -> None:
    row = association_named("kb-es")
    secret, password = app_user_secret(
        row, associated=KIBANA, ref=KB_REF, existing=None, generate_password=lambda: "generated"
    )
    assert password == "generated"
    assert decode_secret_data(secret) == {"apps-kb-kibana-user": b"generated"}
    assert secret["metadata"]["labels"]["eck.k8s.elastic.co/credentials"] == "true"
    assert secret["metadata"]["labels"]["kibanaassociation.k8s.elastic.co/name"] == "kb"
    again, reused = app_user_secret(
        row, associated=KIBANA, ref=KB_REF, existing=secret, generate_password=lambda: "other"
    )
    assert reused == "generated"
    assert again == secret


def _fast_hash(password: bytes) -> bytes:
    return bcrypt.hash_password(password, cost=4, salt=b"0123456789abcdef")


def test_es_user_secret_content_and_labels() -> None:
    secret = es_user_secret(
        association_named("kb-es"),
        associated=KIBANA,
        ref=KB_REF,
        es=ES,
        password="pw",
        existing=None,
        hasher=_fast_hash,
    )
    meta = secret["metadata"]
    assert (meta["name"], meta["namespace"]) == ("apps-kb-kibana-user", "data")
    assert meta["labels"] == {
        "common.k8s.elastic.co/type": "user",
        "elasticsearch.k8s.elastic.co/cluster-name": "es",
        "elasticsearch.k8s.elastic.co/cluster-namespace": "data",
        "kibanaassociation.k8s.elastic.co/name": "kb",
        "kibanaassociation.k8s.elastic.co/namespace": "apps",
        "kibanaassociation.k8s.elastic.co/type": "elasticsearch",
    }
    assert meta["ownerReferences"][0]["uid"] == "es-uid"
    data = decode_secret_data(secret)
    assert data["name"] == b"apps-kb-kibana-user"
    assert data["userRoles"] == b"kibana_system"
    assert bcrypt.check_password(b"pw", data["passwordHash"])


def test_es_user_hash_kept_while_it_matches_and_replaced_when_not() -> None:
    row = association_named("kb-es")

    def build(password: str, existing: dict[str, Any] | None) -> dict[str, Any]:
        return es_user_secret(
            row, associated=KIBANA, ref=KB_REF, es=ES, password=password, existing=existing
        )

    first = build("pw", None)
    assert build("pw", first)["data"]["passwordHash"] == first["data"]["passwordHash"]
    changed = decode_secret_data(build("new", first))["passwordHash"]
    assert bcrypt.check_password(b"new", changed)
    assert not bcrypt.check_password(b"pw", changed)


def test_user_via_kibana_lives_in_the_kibanas_elasticsearch() -> None:
    apm = {"kind": "ApmServer", "apiVersion": "apm.k8s.elastic.co/v1", "metadata": {"name": "apm", "namespace": "obs", "uid": "u"}, "spec": {"version": "8.15.0"}}  # fmt: skip
    kb_ref = AssociationRef(
        association="apm-kibana", target_kind="Kibana", namespace="apps", name="kb"
    )
    secret = es_user_secret(
        association_named("apm-kibana"), associated=apm, ref=kb_ref, es=ES, password="pw",
        existing=None, hasher=_fast_hash,
    )  # fmt: skip
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == (
        "obs-apm-apm-kb-user",
        "data",
    )
    labels = secret["metadata"]["labels"]
    assert labels["kibana.k8s.elastic.co/name"] == "kb"
    assert labels["elasticsearch.k8s.elastic.co/cluster-name"] == "es"
    assert labels["apmassociation.k8s.elastic.co/type"] == "kibana"


def test_selectors_and_orphans() -> None:
    row = association_named("agent-es")
    agent = {"metadata": {"name": "ag", "namespace": "apps"}}
    assert user_secret_selector(row, associated=agent, ref=AGENT_REF) == {
        "common.k8s.elastic.co/type": "user",
        "elasticsearch.k8s.elastic.co/cluster-name": "es",
        "elasticsearch.k8s.elastic.co/cluster-namespace": "data",
        "agentassociation.k8s.elastic.co/name": "ag",
        "agentassociation.k8s.elastic.co/namespace": "apps",
        "agentassociation.k8s.elastic.co/type": "elasticsearch",
    }
    selector = association_secrets_selector(row, associated_namespace="apps", associated_name="ag")
    kept = {"metadata": {"name": "kept", "labels": {**selector, "elasticsearch.k8s.elastic.co/cluster-name": "es", "elasticsearch.k8s.elastic.co/cluster-namespace": "data"}}}  # fmt: skip
    gone = {"metadata": {"name": "gone", "labels": {**selector, "elasticsearch.k8s.elastic.co/cluster-name": "old", "elasticsearch.k8s.elastic.co/cluster-namespace": "data"}}}  # fmt: skip
    assert [
        s["metadata"]["name"] for s in orphaned_secrets(row, secrets=[kept, gone], refs=[AGENT_REF])
    ] == ["gone"]
    assert len(orphaned_secrets(row, secrets=[kept, gone], refs=[])) == 2


@pytest.mark.parametrize(
    ("password", "hashed", "matches"),
    [
        (b"", b"$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.", True),
        (b"abc", b"$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i", True),
        (b"abd", b"$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i", False),
        (b"abc", b"$2a$12$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i", False),
        (b"abc", b"{PBKDF2}10000$x$y", False),
    ],
)
def test_bcrypt_known_vectors(password: bytes, hashed: bytes, matches: bool) -> None:
    assert bcrypt.check_password(password, hashed) is matches


def test_bcrypt_hash_format() -> None:
    hashed = bcrypt.hash_password(b"secret", salt=b"0123456789abcdef")
    assert hashed.startswith(b"$2a$04$")
    assert len(hashed) == 60
    assert bcrypt.check_password(b"secret", hashed)
    with pytest.raises(ValueError):
        bcrypt.hash_password(b"x", cost=3)


def test_service_account_secrets_created_then_reused() -> None:
    row = association_named("kb-es")
    app, es_side = service_account_secrets(
        row, associated=KIBANA, ref=KB_REF, es=ES, service_account="elastic/kibana",
        existing=None, generate_secret=lambda: "s3cret",
    )  # fmt: skip
    app_data = decode_secret_data(app)
    assert app["metadata"]["name"] == "kb-kibana-user"
    (owner,) = app["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Kibana", "kb", True)
    assert app_data["name"] == b"apps_kb_kb-uid"
    assert app_data["serviceAccount"] == b"elastic/kibana"
    token = base64.b64decode(app_data["token"])
    assert token == b"\x00\x01\x00\x01elastic/kibana/apps_kb_kb-uid:s3cret"
    assert es_side["metadata"]["name"] == "apps-kb-kibana-user"
    assert es_side["metadata"]["labels"]["common.k8s.elastic.co/type"] == "service-account-token"
    es_data = decode_secret_data(es_side)
    assert es_data["name"] == b"elastic/kibana/apps_kb_kb-uid"
    assert es_data["hash"] == app_data["hash"]
    assert app_data["hash"].startswith(b"{PBKDF2_STRETCH}10000$")
    again, _ = service_account_secrets(
        row, associated=KIBANA, ref=KB_REF, es=ES, service_account="elastic/kibana",
        existing=app, generate_secret=lambda: "other",
    )  # fmt: skip
    assert again == app


def test_pbkdf2_stretch_hash_is_deterministic_for_a_salt() -> None:
    salt = bytes(32)
    assert pbkdf2_stretch_hash("x", salt=salt) == pbkdf2_stretch_hash("x", salt=salt)
    assert pbkdf2_stretch_hash("x", salt=salt) != pbkdf2_stretch_hash("y", salt=salt)
