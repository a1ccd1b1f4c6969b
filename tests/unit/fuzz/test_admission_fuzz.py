"""Fuzzing the admission review: any body gets an AdmissionReview answer, never an exception.

``review_bytes`` is what the webhook server calls with the raw request body. Whatever the bytes
(not JSON, JSON nested too deep, an envelope of the wrong shape, an object with wrong-typed,
oversized or too-deep fields), the answer is a 400 naming what is malformed, an admission
(``allowed: true``), or a denial (``allowed: false``) whose message names the object and a field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stackflow.webhooks.admission import (
    ADMISSION_API_VERSION,
    WEBHOOKS,
    Answer,
    Webhook,
    review_bytes,
)
from tests.unit.fuzz.strategies import (
    ADVERSARIAL,
    FUZZ_SETTINGS,
    elasticsearch_objects,
    json_values,
    kibana_objects,
    objects_of,
)

ELASTICSEARCH_PATH = "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch"
KIBANA_PATH = "/validate-kibana-k8s-elastic-co-v1-kibana"
PATHS = st.one_of(st.sampled_from([webhook.path for webhook in WEBHOOKS]), st.text(max_size=20))
OPERATIONS = st.one_of(st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]), json_values(3))


def managed(namespace: str) -> bool:
    """Every namespace is managed, except one: both branches of the pre-check are reached."""
    return namespace != "unmanaged"


def envelope(obj: object, *, operation: object = "CREATE", uid: object = "uid-1") -> bytes:
    """The JSON bytes of an AdmissionReview asking about ``obj``."""
    request = {"uid": uid, "operation": operation, "object": obj}
    return json.dumps(
        {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "request": request}
    ).encode()


def nested_bytes(depth: int) -> bytes:
    """An AdmissionReview whose object nests ``depth`` levels deep, as bytes (``json.dumps``
    itself recurses, so it is written out rather than dumped)."""
    head = envelope({"kind": "Elasticsearch", "spec": "HOLE"}).split(b'"HOLE"')
    return head[0] + b'{"a": ' * depth + b"1" + b"}" * depth + head[1]


def assert_an_answer(answer: Answer, *, kind: str | None = None) -> None:
    """An AdmissionReview v1 answer: admitted, or refused with a message (naming ``kind``'s
    object and a field when the object itself is refused)."""
    assert answer.status in (200, 400, 500)
    assert answer.body["apiVersion"] == ADMISSION_API_VERSION
    assert answer.body["kind"] == "AdmissionReview"
    response = answer.body["response"]
    assert isinstance(response["uid"], str)
    assert isinstance(response["allowed"], bool)
    json.dumps(answer.body)
    if response["allowed"]:
        assert answer.status == 200
        return
    message = response["status"]["message"]
    assert isinstance(message, str)
    assert message.strip()
    if answer.status == 200 and kind is not None:
        assert message.startswith(f"{kind}."), message
        assert " is invalid: " in message, message


def decide(path: str, raw: bytes, *, enterprise: bool = False) -> Answer:
    """The webhook's decision on ``raw`` sent to ``path``."""
    return review_bytes(path, raw, managed, enterprise=enterprise)


@FUZZ_SETTINGS
@given(st.binary(max_size=300), PATHS)
@example(b"[" * 100_000, ELASTICSEARCH_PATH)
@example(b'{"a": ' * 100_000, ELASTICSEARCH_PATH)
@example(b"\xff\xfe", ELASTICSEARCH_PATH)
@example(b"NaN", ELASTICSEARCH_PATH)
def test_any_bytes_get_an_answer(raw: bytes, path: str) -> None:
    assert_an_answer(decide(path, raw))


@FUZZ_SETTINGS
@given(json_values(), PATHS)
def test_any_json_gets_an_answer(body: object, path: str) -> None:
    assert_an_answer(decide(path, json.dumps(body).encode()))


@FUZZ_SETTINGS
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "apiVersion": st.one_of(st.just(ADMISSION_API_VERSION), json_values(3)),
            "kind": st.one_of(st.just("AdmissionReview"), json_values(3)),
            "request": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "uid": st.one_of(st.just("uid-1"), json_values(3)),
                        "operation": OPERATIONS,
                        "namespace": st.one_of(st.just("unmanaged"), json_values(3)),
                        "object": st.one_of(elasticsearch_objects(fuzz=True), ADVERSARIAL),
                        "oldObject": ADVERSARIAL,
                    },
                ),
                ADVERSARIAL,
            ),
        },
    ),
    st.booleans(),
)
def test_any_envelope_gets_an_answer(body: dict[str, Any], enterprise: bool) -> None:
    assert_an_answer(decide(ELASTICSEARCH_PATH, json.dumps(body).encode(), enterprise=enterprise))


def _object_test(path: str, kind: str) -> Callable[[dict[str, Any], object, bool], None]:
    def check(obj: dict[str, Any], operation: object, enterprise: bool) -> None:
        assert_an_answer(
            decide(path, envelope(obj, operation=operation), enterprise=enterprise), kind=kind
        )

    return check


@FUZZ_SETTINGS
@given(elasticsearch_objects(fuzz=True), OPERATIONS, st.booleans())
@example({"kind": "Elasticsearch", "spec": ["8.15.0"]}, "CREATE", False)
@example(
    {"kind": "Elasticsearch", "spec": {"version": "8.15.0", "nodeSets": "default"}}, "CREATE", False
)
@example(
    {"kind": "Elasticsearch", "spec": {"version": "8.15.0", "nodeSets": ["default"]}},
    "CREATE",
    False,
)
@example(
    {"kind": "Elasticsearch", "spec": {"version": "8.15.0"}, "status": ["8.15.0"]}, "UPDATE", False
)
@example({"kind": "Elasticsearch", "metadata": {"annotations": ["x"]}, "spec": {}}, "CREATE", False)
def test_any_elasticsearch_review_gets_an_answer(
    obj: dict[str, Any], operation: object, enterprise: bool
) -> None:
    _object_test(ELASTICSEARCH_PATH, "Elasticsearch")(obj, operation, enterprise)


@FUZZ_SETTINGS
@given(kibana_objects(fuzz=True), OPERATIONS, st.booleans())
@example({"kind": "Kibana", "spec": ["8.15.0"]}, "CREATE", False)
@example(
    {"kind": "Kibana", "spec": {"version": "8.15.0", "elasticsearchRef": ["es"]}}, "CREATE", False
)
@example({"kind": "Kibana", "spec": {"version": "8.15.0", "monitoring": ["es"]}}, "CREATE", False)
def test_any_kibana_review_gets_an_answer(
    obj: dict[str, Any], operation: object, enterprise: bool
) -> None:
    _object_test(KIBANA_PATH, "Kibana")(obj, operation, enterprise)


@FUZZ_SETTINGS
@given(st.sampled_from([50, 500, 900, 5_000, 50_000]))
def test_a_body_nested_too_deep_is_refused(depth: int) -> None:
    answer = decide(ELASTICSEARCH_PATH, nested_bytes(depth))
    assert_an_answer(answer)
    assert answer.body["response"]["allowed"] is False


@pytest.mark.parametrize("webhook", WEBHOOKS, ids=[webhook.path for webhook in WEBHOOKS])
def test_any_object_of_every_validated_kind_gets_an_answer(webhook: Webhook) -> None:
    objects = objects_of(webhook.group, webhook.plural, webhook.kind, webhook.version, fuzz=True)

    # Every kind's webhook, its own CRD version's objects: a smaller budget for each of them.
    @settings(FUZZ_SETTINGS, max_examples=25)
    @given(objects, OPERATIONS, st.booleans())
    def check(obj: dict[str, Any], operation: object, enterprise: bool) -> None:
        answer = decide(webhook.path, envelope(obj, operation=operation), enterprise=enterprise)
        assert_an_answer(answer, kind=webhook.kind)

    check()
