"""The license-annotation pre-check: pure in ``review``, the license read only when asked for."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from stackflow.webhooks.admission import needs_license, requests_enterprise, review
from stackflow.webhooks.server import CachedLicenseVerdict, WebhookServer

MANAGED = "managed"
KB_PATH = "/validate-kibana-k8s-elastic-co-v1-kibana"
LICENSE_DENIAL = (
    'Kibana.kibana.k8s.elastic.co "kb" is invalid: '
    'metadata.annotations.eck.k8s.elastic.co/license: Invalid value: "enterprise": '
    "Enterprise license required but ECK operator is running on a Basic license"
)


def is_managed(namespace: str) -> bool:
    return namespace == MANAGED


def kibana(annotations: dict[str, str] | None, *, spec: dict[str, Any] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": "kb", "namespace": MANAGED}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "kind": "Kibana",
        "metadata": metadata,
        "spec": {"version": "8.15.0"} if spec is None else spec,
    }


def admission_review(obj: object, *, namespace: str = MANAGED) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u", "operation": "CREATE", "namespace": namespace, "object": obj},
    }


ENTERPRISE = {"eck.k8s.elastic.co/license": "enterprise"}

# (object, namespace, operator has an enterprise license, allowed, denial message)
ROWS: list[tuple[Any, str, bool, bool, str]] = [
    (kibana(ENTERPRISE), MANAGED, False, False, LICENSE_DENIAL),
    (kibana(ENTERPRISE), MANAGED, True, True, ""),
    (kibana(None), MANAGED, False, True, ""),
    (kibana({"eck.k8s.elastic.co/license": "basic"}), MANAGED, False, True, ""),
    (kibana({"other": "enterprise"}), MANAGED, False, True, ""),
    # Outside the managed namespaces nothing is checked, the annotation neither.
    (kibana(ENTERPRISE), "elsewhere", False, True, ""),
    # The annotation check comes before the kind's rules: its denial alone is reported.
    (kibana(ENTERPRISE, spec={}), MANAGED, False, False, LICENSE_DENIAL),
    # Licensed, the kind's rules still apply.
    (kibana(ENTERPRISE, spec={}), MANAGED, True, False, "spec.version: Required value"),
]


@pytest.mark.parametrize(("obj", "namespace", "enterprise", "is_allowed", "message"), ROWS)
def test_license_annotation_pre_check(
    obj: Any, namespace: str, enterprise: bool, is_allowed: bool, message: str
) -> None:
    body = admission_review(obj, namespace=namespace)
    response = review(KB_PATH, body, is_managed, enterprise=enterprise).body["response"]
    assert response["allowed"] is is_allowed
    if message:
        assert message in response["status"]["message"]
        assert response["status"]["code"] == 403


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (admission_review(kibana(ENTERPRISE)), True),
        (admission_review(kibana(None)), False),
        (admission_review(kibana({"eck.k8s.elastic.co/license": "Enterprise"})), False),
        (admission_review("not an object"), False),
        ({"request": None}, False),
        ([], False),
    ],
)
def test_needs_license_only_for_the_annotated(body: object, expected: bool) -> None:
    assert needs_license(body) is expected


def test_requests_enterprise_reads_the_annotation() -> None:
    assert requests_enterprise(kibana(ENTERPRISE)) is True
    assert requests_enterprise({"metadata": {"annotations": None}}) is False


class LicenseSource:
    """A license verdict that counts how often the server asks for it."""

    def __init__(self, *, licensed: bool = False, error: Exception | None = None) -> None:
        self.licensed = licensed
        self.error = error
        self.calls = 0

    async def __call__(self) -> bool:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.licensed


def raw(obj: object) -> bytes:
    return json.dumps(admission_review(obj)).encode()


@pytest.mark.parametrize(("licensed", "is_allowed"), [(False, False), (True, True)])
async def test_server_reads_the_license_for_annotated_objects(
    licensed: bool, is_allowed: bool
) -> None:
    source = LicenseSource(licensed=licensed)
    server = WebhookServer(
        host="127.0.0.1", port=0, is_managed=is_managed, enterprise_license=source
    )
    answer = await server.decide(KB_PATH, raw(kibana(ENTERPRISE)))
    assert answer.body["response"]["allowed"] is is_allowed
    assert source.calls == 1


async def test_server_reads_no_license_otherwise() -> None:
    source = LicenseSource(licensed=True)
    server = WebhookServer(
        host="127.0.0.1", port=0, is_managed=is_managed, enterprise_license=source
    )
    assert (await server.decide(KB_PATH, raw(kibana(None)))).body["response"]["allowed"] is True
    assert (await server.decide(KB_PATH, b"{")).status == 400
    assert source.calls == 0


async def test_server_without_a_license_source_counts_as_basic() -> None:
    server = WebhookServer(host="127.0.0.1", port=0, is_managed=is_managed)
    answer = await server.decide(KB_PATH, raw(kibana(ENTERPRISE)))
    assert answer.body["response"]["status"]["message"] == LICENSE_DENIAL


async def test_an_unreadable_license_fails_the_call() -> None:
    source = LicenseSource(error=RuntimeError("API server unreachable"))
    server = WebhookServer(
        host="127.0.0.1", port=0, is_managed=is_managed, enterprise_license=source
    )
    answer = await server.decide(KB_PATH, raw(kibana(ENTERPRISE)))
    # An HTTP error, not a denial: failurePolicy Ignore lets the API server admit the object.
    assert answer.status == 500
    assert source.calls == 1


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_burst_of_annotated_reviews_reads_the_license_once() -> None:
    reading, release = asyncio.Event(), asyncio.Event()
    calls = 0

    async def slow_read() -> bool:
        nonlocal calls
        calls += 1
        reading.set()
        await release.wait()
        return True

    clock = Clock()
    verdict = CachedLicenseVerdict(slow_read, ttl_seconds=30, clock=clock)
    waiting = [asyncio.create_task(verdict()) for _ in range(20)]
    await reading.wait()  # the first review reads; the 19 others started with it and wait
    release.set()
    assert await asyncio.gather(*waiting) == [True] * 20
    assert calls == 1
    clock.now += 29
    assert await verdict() is True
    assert calls == 1
    clock.now += 2  # the verdict is 31 seconds old: read again
    assert await verdict() is True
    assert calls == 2


async def test_a_failed_license_read_is_not_remembered() -> None:
    source = LicenseSource(error=RuntimeError("API server unreachable"))
    verdict = CachedLicenseVerdict(source, ttl_seconds=30, clock=Clock())
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await verdict()
    assert source.calls == 2
    source.error = None
    source.licensed = True
    assert await verdict() is True
    assert source.calls == 3


async def test_the_server_reads_the_license_once_for_many_annotated_objects() -> None:
    source = LicenseSource(licensed=True)
    server = WebhookServer(
        host="127.0.0.1", port=0, is_managed=is_managed, enterprise_license=source
    )
    for _ in range(50):
        answer = await server.decide(KB_PATH, raw(kibana(ENTERPRISE)))
        assert answer.body["response"]["allowed"] is True
    assert source.calls == 1
