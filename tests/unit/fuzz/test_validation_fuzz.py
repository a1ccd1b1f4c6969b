"""Fuzzing the pure validation: every object gets a list of field problems, never an exception.

The objects are the CRD schema's (what the API server stores) and the same with wrong-typed,
oversized and too-deep values anywhere (what a server without the schema, or a raw client, may
hand the operator). A problem names a field of the object (``spec.nodeSets[0].count``) and says
what is wrong, so the reconcile's ``InvalidSpec`` and the webhook's denial are one clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import example, given, settings

from stackflow.stack.apps.validation import application_warnings, validate_application
from stackflow.stack.elasticsearch.validation import validate_elasticsearch
from stackflow.webhooks.admission import WEBHOOKS, Webhook
from tests.unit.fuzz.strategies import (
    FUZZ_SETTINGS,
    elasticsearch_objects,
    kibana_objects,
    objects_of,
)

#: The top-level fields a problem may be reported under.
OBJECT_FIELDS = ("metadata", "spec", "status")


def assert_field_problems(problems: object) -> None:
    """Each problem is ``(field path, message)``: the path within the object, a message to read."""
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, tuple)
        assert len(problem) == 2
        field, message = problem
        assert isinstance(field, str)
        assert field.split(".")[0].split("[")[0] in OBJECT_FIELDS, field
        assert isinstance(message, str)
        assert message.strip()


def elasticsearch(spec: object, **fields: Any) -> dict[str, Any]:
    """A cluster named ``quickstart`` with ``spec`` as given (any type)."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": "ns1"},
        "spec": spec,
        **fields,
    }


def kibana(spec: object, **fields: Any) -> dict[str, Any]:
    """A Kibana named ``kb`` with ``spec`` as given (any type)."""
    return {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "metadata": {"name": "kb", "namespace": "ns1"},
        "spec": spec,
        **fields,
    }


MASTER = {"name": "default", "count": 1, "config": {"node.roles": ["master"]}}


@FUZZ_SETTINGS
@given(elasticsearch_objects(fuzz=False))
def test_schema_valid_elasticsearch_gets_field_problems(es: Mapping[str, Any]) -> None:
    assert_field_problems(validate_elasticsearch(es))


@FUZZ_SETTINGS
@given(elasticsearch_objects(fuzz=True))
@example(elasticsearch(["8.15.0"]))
@example(elasticsearch({"version": "8.15.0", "nodeSets": "default"}))
@example(elasticsearch({"version": "8.15.0", "nodeSets": ["default"]}))
@example(elasticsearch({"version": "8.15.0", "nodeSets": {"name": "default"}}))
@example(elasticsearch({"version": "8.15.0", "nodeSets": [MASTER]}, status=["8.15.0"]))
@example(elasticsearch({"version": "8.15.0", "nodeSets": [MASTER]}, metadata=[]))
@example(elasticsearch({"version": "8.15.0", "nodeSets": [{**MASTER, "config": []}]}))
@example(elasticsearch({"version": "8.15.0", "nodeSets": [{**MASTER, "count": 10**30}]}))
@example(elasticsearch({"version": ["8.15.0"], "nodeSets": [MASTER]}))
@example(elasticsearch({"version": "8.15.0", "nodeSets": [MASTER]}, status={"version": 8}))
def test_any_elasticsearch_gets_field_problems(es: Mapping[str, Any]) -> None:
    assert_field_problems(validate_elasticsearch(es))


@FUZZ_SETTINGS
@given(kibana_objects(fuzz=False))
def test_schema_valid_kibana_gets_field_problems(kb: Mapping[str, Any]) -> None:
    assert_field_problems(validate_application("Kibana", kb))


@FUZZ_SETTINGS
@given(kibana_objects(fuzz=True))
@example(kibana(["8.15.0"]))
@example(kibana({"version": "8.15.0", "elasticsearchRef": ["es"]}))
@example(kibana({"version": "8.15.0", "monitoring": {"metrics": ["es"]}}))
@example(kibana({"version": "8.15.0", "monitoring": {"metrics": {"elasticsearchRefs": ["es"]}}}))
@example(kibana({"version": "8.15.0", "monitoring": ["es"]}))
@example(kibana({"version": "8.15.0"}, metadata=[]))
def test_any_kibana_gets_field_problems(kb: Mapping[str, Any]) -> None:
    assert_field_problems(validate_application("Kibana", kb))


@pytest.mark.parametrize(
    ("es", "field"),
    [
        (elasticsearch({"version": "8.15.0", "nodeSets": "default"}), "spec.nodeSets"),
        (elasticsearch({"version": "8.15.0", "nodeSets": ["default"]}), "spec.nodeSets[0]"),
        (
            elasticsearch({"version": "8.15.0", "nodeSets": [{**MASTER, "count": "3"}]}),
            "spec.nodeSets[0].count",
        ),
        (
            elasticsearch({"version": "8.15.0", "nodeSets": [{**MASTER, "config": []}]}),
            "spec.nodeSets[0].config",
        ),
    ],
)
def test_a_wrong_type_is_named_by_its_field(es: Mapping[str, Any], field: str) -> None:
    fields = [path for path, _ in validate_elasticsearch(es)]
    assert field in fields


#: The wrong shapes the fuzzing found crashing an application kind's rules, by kind: each must be
#: a field problem (the webhook would otherwise deny with "cannot be validated", the reconcile
#: fail with a traceback).
FOUND_WRONG_SHAPES: dict[str, list[object]] = {
    "Agent": [
        {"version": "8.15.0", "deployment": {}, "elasticsearchRefs": True},
        {"version": "8.15.0", "deployment": {}, "elasticsearchRefs": ["es", "es2"]},
        ["fleet"],
    ],
    "Logstash": [
        {"version": "8.15.0", "elasticsearchRefs": [None]},
        {"version": "8.15.0", "elasticsearchRefs": 5},
    ],
}


def assert_application_field_problems(kind: str, spec: object) -> None:
    """An application of ``kind`` with ``spec`` gets field problems from its rules and warnings."""
    obj = {"kind": kind, "metadata": {"name": "app", "namespace": "ns1"}, "spec": spec}
    problems = validate_application(kind, obj)
    assert_field_problems(problems)
    assert problems
    assert_field_problems(application_warnings(kind, obj))


@pytest.mark.parametrize(
    ("kind", "spec"),
    [
        pytest.param(kind, spec, id=f"{kind}-{index}")
        for kind, specs in FOUND_WRONG_SHAPES.items()
        for index, spec in enumerate(specs)
    ],
)
def test_a_wrong_shaped_application_gets_field_problems(kind: str, spec: object) -> None:
    assert_application_field_problems(kind, spec)


@pytest.mark.parametrize("webhook", WEBHOOKS, ids=[webhook.path for webhook in WEBHOOKS])
def test_any_object_of_every_kind_gets_field_problems(webhook: Webhook) -> None:
    """The rules themselves, not the webhook (which turns a rule's crash into a denial): every
    kind's rules and warnings return field problems for any object of its CRD, wrong types too."""
    # The shapes found before first: while one still crashes, the test fails at once rather
    # than after a search and a shrink.
    for spec in FOUND_WRONG_SHAPES.get(webhook.kind, []):
        assert_application_field_problems(webhook.kind, spec)
    objects = objects_of(webhook.group, webhook.plural, webhook.kind, webhook.version, fuzz=True)

    # Every kind: a smaller budget for each of them.
    @settings(FUZZ_SETTINGS, max_examples=25)
    @given(objects)
    def check(obj: dict[str, Any]) -> None:
        assert_field_problems(webhook.rules(webhook.kind, obj))
        assert_field_problems(webhook.warnings(webhook.kind, obj))

    check()
