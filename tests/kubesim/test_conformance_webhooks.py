"""Reference §12 check 25 end to end: a validating webhook behind kubesim, seen through kubernetes_asyncio."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.kubesim.webhook_server import WebhookServer, closed_port, deny, raw

WEBHOOK_NAME = "deny.example.com"


@pytest.fixture
async def webhook_server() -> AsyncIterator[WebhookServer]:
    async with WebhookServer.start() as server:
        yield server


def _configuration(*, url: str, ca_bundle: str, failure_policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "deny-configmaps"},
        "webhooks": [
            {
                "name": WEBHOOK_NAME,
                "clientConfig": {"url": url, "caBundle": ca_bundle},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["configmaps"],
                    }
                ],
                "failurePolicy": failure_policy,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


async def _register(api: client.ApiClient, configuration: Any) -> None:
    await client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(
        configuration
    )


async def _create_config_map(api: client.ApiClient, name: str) -> Any:
    body: Any = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    }
    return await client.CoreV1Api(api).create_namespaced_config_map("default", body)


def _status(error: ApiException) -> dict[str, Any]:
    assert error.body is not None
    status: dict[str, Any] = json.loads(error.body)
    return status


async def test_denial_is_403_with_the_webhook_message(
    ka_client: client.ApiClient, webhook_server: WebhookServer
) -> None:
    webhook_server.answer("/validate", deny(403, "nope", reason="Forbidden"))
    await _register(
        ka_client,
        _configuration(
            url=webhook_server.url("/validate"),
            ca_bundle=webhook_server.ca_bundle,
            failure_policy="Fail",
        ),
    )
    with pytest.raises(ApiException) as raised:
        await _create_config_map(ka_client, "denied")
    assert raised.value.status == 403
    body = _status(raised.value)
    assert body["message"] == f'admission webhook "{WEBHOOK_NAME}" denied the request: nope'
    [review] = webhook_server.reviews
    assert review["request"]["operation"] == "CREATE"
    assert review["request"]["object"]["metadata"]["name"] == "denied"
    assert review["request"]["oldObject"] is None
    with pytest.raises(ApiException) as missing:
        await client.CoreV1Api(ka_client).read_namespaced_config_map("denied", "default")
    assert missing.value.status == 404


async def test_reply_with_another_uid_is_a_call_failure(
    ka_client: client.ApiClient, webhook_server: WebhookServer
) -> None:
    wrong_uid = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "another-uid", "allowed": True},
    }
    webhook_server.answer("/validate", raw(wrong_uid))
    await _register(
        ka_client,
        _configuration(
            url=webhook_server.url("/validate"),
            ca_bundle=webhook_server.ca_bundle,
            failure_policy="Fail",
        ),
    )
    with pytest.raises(ApiException) as raised:
        await _create_config_map(ka_client, "wrong-uid")
    assert raised.value.status == 500
    message = _status(raised.value)["message"]
    assert message.startswith(f'Internal error occurred: failed calling webhook "{WEBHOOK_NAME}": ')
    assert 'got "another-uid"' in message


@pytest.mark.parametrize(("failure_policy", "created"), [("Fail", False), ("Ignore", True)])
async def test_webhook_down(
    ka_client: client.ApiClient, webhook_server: WebhookServer, failure_policy: str, created: bool
) -> None:
    url = f"https://127.0.0.1:{await closed_port()}/validate"
    await _register(
        ka_client,
        _configuration(url=url, ca_bundle=webhook_server.ca_bundle, failure_policy=failure_policy),
    )
    if created:
        config_map = await _create_config_map(ka_client, "through")
        assert config_map.metadata.name == "through"
        return
    with pytest.raises(ApiException) as raised:
        await _create_config_map(ka_client, "blocked")
    assert raised.value.status == 500
    body = _status(raised.value)
    assert body["reason"] == "InternalError"
    assert body["message"].startswith(
        f'Internal error occurred: failed calling webhook "{WEBHOOK_NAME}": failed to call webhook: '
        f'Post "{url}?timeout=10s": '
    )
