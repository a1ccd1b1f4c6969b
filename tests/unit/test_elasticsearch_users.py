"""Association users and service tokens in the file realm (ECK's formats), the license decision,
and the controller-table watches that wake the Elasticsearch workflow for those Secrets."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from activities.cluster_license_api import (
    LicenseAction,
    desired_license,
    license_decision,
)
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER
from stackflow.stack.elasticsearch import users
from stackflow.stack.elasticsearch.builder import desired_children

NOW = datetime(2026, 3, 1, tzinfo=UTC)
ES_NAME = "quickstart"
FILE_REALM = ("Secret", "quickstart-es-xpack-file-realm")
ES = {
    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
    "kind": "Elasticsearch",
    "metadata": {"name": ES_NAME, "namespace": "ns1", "uid": "uid-1"},
    "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
}
OPERATOR_USERS = {
    "elastic",
    "elastic-internal",
    "elastic-internal-diagnostics",
    "elastic-internal-monitoring",
    "elastic-internal-pre-stop",
    "elastic-internal-probe",
}


def labelled_secret(
    name: str,
    data: Mapping[str, str],
    *,
    secret_type: str = "user",
    cluster: str = ES_NAME,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "labels": {
                "common.k8s.elastic.co/type": secret_type,
                "elasticsearch.k8s.elastic.co/cluster-name": cluster,
                "elasticsearch.k8s.elastic.co/cluster-namespace": "ns1",
            },
        },
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def kibana_user(
    name: str = "ns1-kb-kibana-user", *, roles: str = "kibana_system"
) -> dict[str, Any]:
    return labelled_secret(
        name, {"name": name, "passwordHash": "$2a$10$kibanahash", "userRoles": roles}
    )


def token(name: str, full_name: str, token_hash: str) -> dict[str, Any]:
    return labelled_secret(
        name, {"name": full_name, "hash": token_hash}, secret_type="service-account-token"
    )


def build(*secrets: dict[str, Any], previous: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Build the children from ``secrets`` (plus a previous build) and decode the file realm."""
    existing = {
        (child["kind"], child["metadata"]["name"]): child for child in [*(previous or []), *secrets]
    }
    numbers = itertools.count(1)
    children = desired_children(
        ES, existing=existing, now=NOW, random_password=lambda: f"password-{next(numbers)}"
    )
    realm = {(c["kind"], c["metadata"]["name"]): c for c in children}[FILE_REALM]
    return {key: base64.b64decode(value).decode() for key, value in realm["data"].items()}


def users_of(realm: Mapping[str, str]) -> dict[str, str]:
    return dict(line.split(":", 1) for line in realm["users"].splitlines())


def roles_of(realm: Mapping[str, str]) -> dict[str, list[str]]:
    return {
        role: members.split(",")
        for role, members in (line.split(":", 1) for line in realm["users_roles"].splitlines())
    }


@pytest.mark.parametrize(
    ("secrets", "users", "roles"),
    [
        pytest.param([], {}, {}, id="no-association"),
        pytest.param(
            [kibana_user()],
            {"ns1-kb-kibana-user": "$2a$10$kibanahash"},
            {"kibana_system": ["ns1-kb-kibana-user"]},
            id="kibana-user",
        ),
        pytest.param(
            [
                kibana_user("ns1-b-beat-user", roles="beat_writer, monitoring"),
                kibana_user("ns1-a-beat-user", roles="beat_writer"),
            ],
            {"ns1-a-beat-user": "$2a$10$kibanahash", "ns1-b-beat-user": "$2a$10$kibanahash"},
            {
                "beat_writer": ["ns1-a-beat-user", "ns1-b-beat-user"],
                "monitoring": ["ns1-b-beat-user"],
            },
            id="several-users-sorted-roles-trimmed",
        ),
        pytest.param(
            [kibana_user(roles="")], {"ns1-kb-kibana-user": "$2a$10$kibanahash"}, {}, id="no-roles"
        ),
        pytest.param(
            [labelled_secret("half-written", {"name": "half-written"})], {}, {}, id="no-hash"
        ),
        pytest.param(
            [
                labelled_secret(
                    "other",
                    {"name": "other", "passwordHash": "h", "userRoles": "r"},
                    cluster="another-es",
                )
            ],
            {},
            {},
            id="other-cluster",
        ),
        pytest.param(
            [
                labelled_secret(
                    "elastic", {"name": "elastic", "passwordHash": "h", "userRoles": "r"}
                )
            ],
            {},
            {},
            id="cannot-redefine-operator-user",
        ),
    ],
)
def test_association_users_join_the_file_realm(
    secrets: list[dict[str, Any]], users: dict[str, str], roles: dict[str, list[str]]
) -> None:
    realm = build(*secrets)

    realm_users = users_of(realm)
    assert set(realm_users) == OPERATOR_USERS | set(users)
    assert {name: realm_users[name] for name in users} == users
    realm_roles = roles_of(realm)
    assert {role: realm_roles[role] for role in roles} == roles
    assert "r" not in realm_roles
    assert list(realm_users) == sorted(realm_users)


@pytest.mark.parametrize(
    ("secrets", "service_tokens"),
    [
        pytest.param([], "", id="none"),
        pytest.param(
            [
                token("ns1-kb-kibana-user", "elastic/kibana/ns1_kb_uid1", "{PBKDF2_STRETCH}kb"),
                token(
                    "ns1-agent-fleet-user", "elastic/fleet-server/ns1_agent_uid2", "{PBKDF2}fleet"
                ),
            ],
            "elastic/fleet-server/ns1_agent_uid2:{PBKDF2}fleet\n"
            "elastic/kibana/ns1_kb_uid1:{PBKDF2_STRETCH}kb\n",
            id="sorted-by-token-name",
        ),
        pytest.param(
            [
                labelled_secret(
                    "no-hash", {"name": "elastic/kibana/x"}, secret_type="service-account-token"
                )
            ],
            "",
            id="incomplete-ignored",
        ),
    ],
)
def test_service_account_tokens_file(secrets: list[dict[str, Any]], service_tokens: str) -> None:
    realm = build(*secrets)

    assert realm["service_tokens"] == service_tokens
    assert not set(users_of(realm)) - OPERATOR_USERS


def test_removing_the_association_secret_removes_the_user_and_rebuilds_are_stable() -> None:
    numbers = itertools.count(1)
    first_children = desired_children(
        ES,
        existing={("Secret", "ns1-kb-kibana-user"): kibana_user()},
        now=NOW,
        random_password=lambda: f"password-{next(numbers)}",
    )

    with_user = build(kibana_user(), previous=first_children)
    again = build(kibana_user(), previous=first_children)
    without_user = build(previous=first_children)

    assert with_user == again
    assert "ns1-kb-kibana-user" in users_of(with_user)
    assert "ns1-kb-kibana-user" not in users_of(without_user)
    assert "kibana_system" not in roles_of(without_user)
    assert set(users_of(without_user)) == OPERATOR_USERS


def test_the_build_after_the_first_hashes_no_password_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The operator users' hashes the first build wrote are read back by the next reconcile:
    it keeps them, and pays no PBKDF2 for them (tens of milliseconds for six users)."""
    first_children = desired_children(
        ES, existing={}, now=NOW, random_password=lambda: "password-once"
    )
    hashed: list[bytes] = []
    real = users.hashlib.pbkdf2_hmac

    def counting(name: str, password: bytes, salt: bytes, iterations: int, size: int) -> bytes:
        hashed.append(password)
        return real(name, password, salt, iterations, size)

    monkeypatch.setattr(users.hashlib, "pbkdf2_hmac", counting)

    realm = build(previous=first_children)

    first_realm = {(c["kind"], c["metadata"]["name"]): c for c in first_children}[FILE_REALM]
    assert users_of(realm) == users_of(
        {key: base64.b64decode(value).decode() for key, value in first_realm["data"].items()}
    )
    assert hashed == []


def license_secret(data: Mapping[str, str]) -> dict[str, Any]:
    return {"data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


@pytest.mark.parametrize(
    ("desired", "current", "trial_started", "action"),
    [
        pytest.param(
            {"uid": "p1", "type": "platinum"},
            {"uid": "basic-uid", "type": "basic"},
            False,
            LicenseAction.PUT_LICENSE,
            id="basic-to-platinum",
        ),
        pytest.param(
            {"uid": "p1", "type": "platinum"},
            {"uid": "p1", "type": "platinum"},
            False,
            LicenseAction.NONE,
            id="already-applied",
        ),
        pytest.param(
            {"uid": "p2", "type": "enterprise"},
            {"uid": "p1", "type": "platinum"},
            False,
            LicenseAction.PUT_LICENSE,
            id="newer-license",
        ),
        pytest.param(
            {"type": "trial"},
            {"uid": "basic-uid", "type": "basic"},
            False,
            LicenseAction.START_TRIAL,
            id="start-trial",
        ),
        pytest.param(
            {"type": "trial"},
            {"uid": "basic-uid", "type": "basic"},
            True,
            LicenseAction.NONE,
            id="trial-only-once",
        ),
        pytest.param(
            {"type": "trial"},
            {"uid": "t", "type": "trial"},
            False,
            LicenseAction.NONE,
            id="trial-running",
        ),
    ],
)
def test_license_decision(
    desired: dict[str, Any], current: dict[str, Any], trial_started: bool, action: LicenseAction
) -> None:
    decision = license_decision(desired=desired, current=current, trial_started=trial_started)

    assert decision.action is action


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({"license": '{"type":"trial"}'}, {"type": "trial"}, id="license-key"),
        pytest.param(
            {"custom": '{"uid":"u","type":"gold"}'}, {"uid": "u", "type": "gold"}, id="only-key"
        ),
        pytest.param({"license": "not json"}, None, id="not-json"),
        pytest.param({"license": "{}"}, None, id="no-type"),
        pytest.param({"a": "{}", "b": "{}"}, None, id="ambiguous"),
    ],
)
def test_desired_license(data: dict[str, str], expected: dict[str, Any] | None) -> None:
    if expected is None:
        with pytest.raises(ValueError):
            desired_license(license_secret(data))
    else:
        assert desired_license(license_secret(data)) == expected


def selector_matches(selector: str | None, labels: Mapping[str, str]) -> bool:
    """The two selector forms the table uses: ``key`` (exists) and ``key=value``."""
    if selector is None:
        return True
    key, _, value = selector.partition("=")
    return key in labels and (not value or labels[key] == value)


def es_workflows_woken_by(secret: Mapping[str, Any]) -> set[tuple[str, str]]:
    labels = secret["metadata"].get("labels") or {}
    return {
        owner
        for watch in ELASTICSEARCH_CONTROLLER.children
        if watch.kind.kind == "Secret" and selector_matches(watch.label_selector, labels)
        for owner in watch.owners(secret)
    }


def owned_license_secret() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "quickstart-es-license",
            "namespace": "ns1",
            "labels": {
                "common.k8s.elastic.co/type": "license",
                "license.k8s.elastic.co/scope": "elasticsearch",
            },
            "ownerReferences": [
                {
                    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                    "kind": "Elasticsearch",
                    "name": ES_NAME,
                }
            ],
        }
    }


@pytest.mark.parametrize(
    ("secret", "woken"),
    [
        pytest.param(kibana_user(), {("ns1", ES_NAME)}, id="association-user"),
        pytest.param(token("t", "elastic/kibana/t", "h"), {("ns1", ES_NAME)}, id="sa-token"),
        pytest.param(owned_license_secret(), {("ns1", ES_NAME)}, id="cluster-license"),
        pytest.param({"metadata": {"name": "x", "namespace": "ns1"}}, set(), id="unrelated"),
    ],
)
def test_secret_changes_wake_the_elasticsearch_workflow(
    secret: dict[str, Any], woken: set[tuple[str, str]]
) -> None:
    assert es_workflows_woken_by(secret) == woken
