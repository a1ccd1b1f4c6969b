"""The webhook's certificate Secret and ValidatingWebhookConfiguration, as pure decisions."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from stackflow.stack.certificates import CertificateSettings, certificate_sans
from stackflow.webhooks.admission import WEBHOOKS
from stackflow.webhooks.certs import (
    WebhookSettings,
    desired_configuration,
    desired_secret,
    pairs_from_secret,
    webhook_certificates,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def settings(*, in_cluster: bool) -> WebhookSettings:
    return WebhookSettings(
        namespace="elastic-system",
        secret_name="stackflow-webhook-cert",
        configuration_name="stackflow.elastic-system.k8s.elastic.co",
        port=9443,
        in_cluster=in_cluster,
        certificates=CertificateSettings(
            validity=timedelta(days=10), rotate_before=timedelta(days=1)
        ),
    )


def test_the_service_is_named_after_the_secret() -> None:
    assert settings(in_cluster=True).service_name == "stackflow-webhook"
    assert WebhookSettings("ns", "elastic-webhook-server-cert", "n", 1, True).service_name == (
        "elastic-webhook-server"
    )


def test_a_missing_secret_gets_a_ca_and_a_serving_pair_for_the_service_and_loopback() -> None:
    ca, leaf = webhook_certificates(None, settings(in_cluster=True), now=NOW)
    sans = certificate_sans(leaf.certificate())
    assert "dns:stackflow-webhook.elastic-system.svc" in sans
    assert "ip:127.0.0.1" in sans
    leaf.certificate().verify_directly_issued_by(ca.certificate())


# (days later, CA kept, serving pair kept)
ROTATION = [(0, True, True), (5, True, True), (9.5, False, False), (20, False, False)]


@pytest.mark.parametrize(("days", "same_ca", "same_leaf"), ROTATION)
def test_certificates_are_kept_until_due_for_rotation(
    days: float, same_ca: bool, same_leaf: bool
) -> None:
    config = settings(in_cluster=True)
    ca, leaf = webhook_certificates(None, config, now=NOW)
    secret = desired_secret(config, ca, leaf)
    assert pairs_from_secret(secret) == (ca, leaf)
    new_ca, new_leaf = webhook_certificates(secret, config, now=NOW + timedelta(days=days))
    assert (new_ca == ca, new_leaf == leaf) == (same_ca, same_leaf)


def test_a_garbled_secret_is_replaced() -> None:
    config = settings(in_cluster=True)
    ca, leaf = webhook_certificates({"data": {"ca.crt": "%%%", "tls.crt": "eA=="}}, config, now=NOW)
    assert pairs_from_secret(desired_secret(config, ca, leaf)) == (ca, leaf)


@pytest.mark.parametrize("in_cluster", [True, False])
def test_the_configuration_names_every_webhook_with_ecks_policies(in_cluster: bool) -> None:
    config = settings(in_cluster=in_cluster)
    configuration = desired_configuration(config, b"CA PEM")
    assert configuration["metadata"]["name"] == "stackflow.elastic-system.k8s.elastic.co"
    hooks = configuration["webhooks"]
    assert [hook["name"] for hook in hooks] == [webhook.name for webhook in WEBHOOKS]
    for hook, webhook in zip(hooks, WEBHOOKS, strict=True):
        assert hook["failurePolicy"] == "Ignore"
        assert hook["sideEffects"] == "None"
        assert hook["matchPolicy"] == "Exact"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["rules"] == [
            {
                "apiGroups": [webhook.group],
                "apiVersions": [webhook.version],
                "operations": ["CREATE", "UPDATE"],
                "resources": [webhook.plural],
                "scope": "*",
            }
        ]
        client = hook["clientConfig"]
        assert base64.b64decode(client["caBundle"]) == b"CA PEM"
        if in_cluster:
            assert client["service"] == {
                "name": "stackflow-webhook",
                "namespace": "elastic-system",
                "path": webhook.path,
                "port": 443,
            }
            assert "url" not in client
        else:
            assert client["url"] == f"https://127.0.0.1:9443{webhook.path}"
            assert "service" not in client
