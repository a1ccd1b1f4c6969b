"""Admission webhook calls (reference §8) against a real HTTPS webhook server with its own CA."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.admission import Admission
from kubesim.errors import StatusError
from tests.kubesim.admission_requests import CONFIG_MAP, admission_request
from tests.kubesim.webhook_server import (
    WebhookServer,
    allow,
    closed_port,
    deny,
    hang,
    patch,
    raw,
)

ALL_RULES = [
    {
        "operations": ["*"],
        "apiGroups": ["*"],
        "apiVersions": ["*"],
        "resources": ["*"],
    }
]


class Webhooks:
    """Configurations served to :class:`Admission`, pointing at the test server."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server
        self.configurations: dict[str, list[dict[str, Any]]] = {"mutating": [], "validating": []}

    def add(self, flavour: str, name: str, path: str, **fields: Any) -> None:
        """Add a configuration ``name`` with one webhook ``name`` posting to ``path``."""
        webhook: dict[str, Any] = {
            "name": name,
            "clientConfig": {"url": self.server.url(path), "caBundle": self.server.ca_bundle},
            "rules": ALL_RULES,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            **fields,
        }
        self.configurations[flavour].append({"metadata": {"name": name}, "webhooks": [webhook]})

    def admission(self, **kwargs: Any) -> Admission:
        """An :class:`Admission` reading these configurations."""
        return Admission(list_configurations=lambda f: self.configurations[f], **kwargs)


@pytest.fixture
async def server() -> AsyncIterator[WebhookServer]:
    async with WebhookServer.start(dns_names=["hooks.system.svc"]) as running:
        yield running


@pytest.fixture
async def webhooks(server: WebhookServer) -> Webhooks:
    return Webhooks(server)


@pytest.fixture
async def admission(webhooks: Webhooks) -> AsyncIterator[Admission]:
    created = webhooks.admission()
    yield created
    await created.close()


async def test_allowed_and_review_shape(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("validating", "v.example.com", "/validate")
    server.answer("/validate", allow(warnings=["be careful"]))
    assert await admission.validate(admission_request()) == ["be careful"]
    [review] = server.reviews
    request = review["request"]
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert request["operation"] == "CREATE"
    assert request["object"] == CONFIG_MAP
    assert request["oldObject"] is None
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["options"] == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "CreateOptions",
        "fieldManager": "test",
    }
    assert server.paths == ["/validate?timeout=10s"]


@pytest.mark.parametrize(
    ("code", "reason", "expected_code"),
    [(403, "Forbidden", 403), (200, "", 400), (422, "Invalid", 422)],
)
async def test_denied(
    server: WebhookServer,
    webhooks: Webhooks,
    admission: Admission,
    code: int,
    reason: str,
    expected_code: int,
) -> None:
    webhooks.add("validating", "v.example.com", "/validate")
    server.answer("/validate", deny(code, "nope", reason=reason))
    with pytest.raises(StatusError) as raised:
        await admission.validate(admission_request())
    assert raised.value.code == expected_code
    assert raised.value.reason == reason
    assert raised.value.message == 'admission webhook "v.example.com" denied the request: nope'


async def test_mutating_patch_applied(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("mutating", "m.example.com", "/mutate")
    server.answer(
        "/mutate", patch([{"op": "add", "path": "/metadata/labels/added", "value": "yes"}])
    )
    obj, warnings = await admission.mutate(admission_request())
    assert obj is not None
    assert obj["metadata"]["labels"] == {"app": "web", "added": "yes"}
    assert warnings == []


async def test_mutating_denial(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("mutating", "m.example.com", "/mutate")
    server.answer("/mutate", deny(403, "no mutation for you"))
    with pytest.raises(StatusError) as raised:
        await admission.mutate(admission_request())
    assert raised.value.code == 403


async def test_series_order_and_reinvocation(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    # Configurations run sorted by name, so "a-first" runs before "b-second"; the later change
    # makes the IfNeeded webhook run once more and see the other's label.
    webhooks.add("mutating", "b-second", "/second")
    webhooks.add("mutating", "a-first", "/first", reinvocationPolicy="IfNeeded")
    server.answer("/first", patch([{"op": "add", "path": "/metadata/labels/first", "value": "1"}]))
    server.answer(
        "/second", patch([{"op": "add", "path": "/metadata/labels/second", "value": "2"}])
    )
    obj, _ = await admission.mutate(admission_request())
    assert obj is not None
    assert obj["metadata"]["labels"] == {"app": "web", "first": "1", "second": "2"}
    assert [path.split("?")[0] for path in server.paths] == ["/first", "/second", "/first"]
    assert server.reviews[2]["request"]["object"]["metadata"]["labels"]["second"] == "2"


def _wrong_uid() -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "not-the-uid", "allowed": False},
    }


@pytest.mark.parametrize("flavour", ["validating", "mutating"])
async def test_wrong_uid_is_call_failure(
    server: WebhookServer, webhooks: Webhooks, admission: Admission, flavour: str
) -> None:
    webhooks.add(flavour, "v.example.com", "/hook", failurePolicy="Fail")
    server.answer("/hook", raw(_wrong_uid()))
    call = admission.validate if flavour == "validating" else admission.mutate
    with pytest.raises(StatusError) as raised:
        await call(admission_request())
    uid = server.reviews[0]["request"]["uid"]
    assert raised.value.code == 500
    assert raised.value.reason == "InternalError"
    assert raised.value.message == (
        'Internal error occurred: failed calling webhook "v.example.com": received invalid webhook '
        f'response: expected response.uid="{uid}", got "not-the-uid"'
    )


async def test_wrong_uid_ignored(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("validating", "v.example.com", "/hook", failurePolicy="Ignore")
    server.answer("/hook", raw(_wrong_uid()))
    assert await admission.validate(admission_request()) == []
    assert len(server.reviews) == 1


async def test_webhook_down(webhooks: Webhooks, admission: Admission) -> None:
    port = await closed_port()
    url = f"https://127.0.0.1:{port}/validate"
    webhooks.add("validating", "down-fail.example.com", "/unused", failurePolicy="Fail")
    webhooks.configurations["validating"][0]["webhooks"][0]["clientConfig"]["url"] = url
    with pytest.raises(StatusError) as raised:
        await admission.validate(admission_request())
    assert raised.value.code == 500
    assert raised.value.message == (
        'Internal error occurred: failed calling webhook "down-fail.example.com": failed to call '
        f'webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )
    assert raised.value.to_status()["details"]["causes"][0][
        "message"
    ] == raised.value.message.removeprefix("Internal error occurred: ")
    webhooks.configurations["validating"][0]["webhooks"][0]["failurePolicy"] = "Ignore"
    assert await admission.validate(admission_request()) == []


async def test_selectors_skip_the_call(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add(
        "validating", "ns.example.com", "/ns", namespaceSelector={"matchLabels": {"env": "dev"}}
    )
    webhooks.add(
        "validating", "obj.example.com", "/obj", objectSelector={"matchLabels": {"app": "db"}}
    )
    server.answer("/ns", deny(403, "ns"))
    server.answer("/obj", deny(403, "obj"))
    assert await admission.validate(admission_request()) == []
    assert server.reviews == []


async def test_timeout(server: WebhookServer, webhooks: Webhooks, admission: Admission) -> None:
    release = asyncio.Event()
    webhooks.add("validating", "slow.example.com", "/slow", timeoutSeconds=1)
    server.answer("/slow", hang(release))
    try:
        with pytest.raises(StatusError) as raised:
            await admission.validate(admission_request())
    finally:
        release.set()
    assert raised.value.code == 500
    assert raised.value.message == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "{server.url("/slow")}?timeout=1s": context deadline exceeded'
    )


@pytest.mark.parametrize(
    ("side_effects", "called"),
    [("None", True), ("NoneOnDryRun", True), ("Some", False), ("Unknown", False)],
)
async def test_dry_run(
    server: WebhookServer,
    webhooks: Webhooks,
    admission: Admission,
    side_effects: str,
    called: bool,
) -> None:
    webhooks.add("validating", "v.example.com", "/validate", sideEffects=side_effects)
    if called:
        assert await admission.validate(admission_request(dry_run=True)) == []
        assert server.reviews[0]["request"]["dryRun"] is True
        return
    with pytest.raises(StatusError) as raised:
        await admission.validate(admission_request(dry_run=True))
    assert (raised.value.code, raised.value.reason) == (400, "BadRequest")
    assert raised.value.message == 'admission webhook "v.example.com" does not support dry run'
    assert server.reviews == []


async def test_untrusted_certificate_is_call_failure(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    other_ca = base64.b64encode(b"not a PEM").decode()
    webhooks.add("validating", "v.example.com", "/validate")
    webhooks.configurations["validating"][0]["webhooks"][0]["clientConfig"]["caBundle"] = other_ca
    with pytest.raises(StatusError) as raised:
        await admission.validate(admission_request())
    assert raised.value.code == 500
    assert 'failed calling webhook "v.example.com"' in raised.value.message


async def test_unknown_ca_is_call_failure(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    async with WebhookServer.start() as other:
        webhooks.add("validating", "v.example.com", "/validate")
        webhooks.configurations["validating"][0]["webhooks"][0]["clientConfig"]["caBundle"] = (
            other.ca_bundle
        )
        with pytest.raises(StatusError) as raised:
            await admission.validate(admission_request())
    assert raised.value.code == 500
    assert "tls: failed to verify certificate" in raised.value.message
    assert server.reviews == []


@pytest.mark.parametrize("resolvable", [True, False])
async def test_service_client_config(
    server: WebhookServer, webhooks: Webhooks, resolvable: bool
) -> None:
    webhooks.add("validating", "svc.example.com", "/unused")
    webhooks.configurations["validating"][0]["webhooks"][0]["clientConfig"] = {
        "service": {"namespace": "system", "name": "hooks", "path": "/svc", "port": 8443},
        "caBundle": server.ca_bundle,
    }
    seen: list[tuple[str, str, int]] = []

    def resolve(namespace: str, name: str, port: int) -> str | None:
        seen.append((namespace, name, port))
        return server.address if resolvable else None

    admission = webhooks.admission(service_resolver=resolve)
    try:
        if resolvable:
            assert await admission.validate(admission_request()) == []
            assert server.paths == ["/svc?timeout=10s"]
        else:
            with pytest.raises(StatusError) as raised:
                await admission.validate(admission_request())
            assert raised.value.message == (
                'Internal error occurred: failed calling webhook "svc.example.com": failed to call '
                'webhook: Post "https://hooks.system.svc:8443/svc?timeout=10s": service "hooks" not found'
            )
    finally:
        await admission.close()
    assert seen == [("system", "hooks", 8443)]


async def test_validating_webhooks_all_called_first_failure_reported(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("validating", "a.example.com", "/a")
    webhooks.add("validating", "b.example.com", "/b")
    server.answer("/a", allow(warnings=["from a"]))
    server.answer("/b", deny(403, "b says no"))
    with pytest.raises(StatusError) as raised:
        await admission.validate(admission_request())
    assert raised.value.message == 'admission webhook "b.example.com" denied the request: b says no'
    assert sorted(path.split("?")[0] for path in server.paths) == ["/a", "/b"]


async def test_delete_sends_old_object(
    server: WebhookServer, webhooks: Webhooks, admission: Admission
) -> None:
    webhooks.add("validating", "v.example.com", "/validate")
    await admission.validate(
        admission_request(operation="DELETE", obj=None, old_obj=CONFIG_MAP, options={})
    )
    request = server.reviews[0]["request"]
    assert (request["object"], request["oldObject"]) == (None, CONFIG_MAP)
    assert request["options"]["kind"] == "DeleteOptions"


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
async def test_patch_that_does_not_apply_is_500(
    server: WebhookServer, webhooks: Webhooks, admission: Admission, failure_policy: str
) -> None:
    webhooks.add("mutating", "m.example.com", "/mutate", failurePolicy=failure_policy)
    server.answer("/mutate", patch([{"op": "remove", "path": "/spec/missing"}]))
    with pytest.raises(StatusError) as raised:
        await admission.mutate(admission_request())
    assert (raised.value.code, raised.value.reason) == (500, "InternalError")
