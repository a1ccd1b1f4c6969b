"""Fuzzing the builders the reconcile calls once validation has passed.

The reconcile validates first (every problem becomes one ``InvalidSpec`` message), then builds
every child; a build may still refuse with ``ValueError`` (the reconcile reports its message as
``InvalidSpec``; the application reconcile also takes ``KeyError``, a referenced Secret without
its key). Anything else escaping a build is a crash: the reconcile would fail with a traceback,
retried for ever. The clusters are schema-valid with small counts (so certificates stay cheap),
and their free-form parts (``podTemplate``, ``volumeClaimTemplates``, ``config``) hold
Kubernetes-shaped values, or anything, as the API server lets through.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import currently_in_test_context, event, example, given, settings

from stackflow.api.kinds import kind_info
from stackflow.stack import certificates
from stackflow.stack.apps.builder import desired_children as application_children
from stackflow.stack.apps.kinds import APP_KINDS
from stackflow.stack.apps.validation import validate_application
from stackflow.stack.elasticsearch.builder import desired_children as elasticsearch_children
from stackflow.stack.elasticsearch.validation import validate_elasticsearch
from tests.unit.fuzz.strategies import (
    APPLICATION_REQUIREMENTS,
    BUILD_SETTINGS,
    application_valid_looking,
    elasticsearch_valid_looking,
    kibana_valid_looking,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(scope="module", autouse=True)
def one_key_for_every_certificate() -> Iterator[None]:
    """Certificates are signed with one key, made and loaded once: generating and checking a
    2048-bit key per certificate would spend the budget on RSA, which is not what is fuzzed."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    load_key = functools.lru_cache(maxsize=4)(serialization.load_pem_private_key)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(certificates, "_new_key", lambda: key)
        patch.setattr(serialization, "load_pem_private_key", load_key)
        yield


def outcome(name: str) -> None:
    """Count how a build ended in hypothesis' statistics (when called from a hypothesis test)."""
    if currently_in_test_context():
        event(name)


def assert_manifests(children: object) -> None:
    """A build's output: Kubernetes objects with a kind and a name, that encode as JSON."""
    assert isinstance(children, list)
    assert children
    for child in children:
        assert isinstance(child, Mapping)
        assert isinstance(child["kind"], str)
        assert isinstance(child["metadata"]["name"], str)
        assert child["metadata"]["name"]
    json.dumps(children, allow_nan=False)


def cluster(**node_set: Any) -> dict[str, Any]:
    """A valid-looking cluster of one master node set, with ``node_set``'s fields set."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "es", "namespace": "ns1", "uid": "uid-1"},
        "spec": {
            "version": "8.15.0",
            "nodeSets": [
                {"name": "masters", "count": 1, "config": {"node.roles": ["master"]}, **node_set}
            ],
        },
    }


def build_elasticsearch(es: Mapping[str, Any]) -> None:
    """What the reconcile does: validate, then build; only a refusal may stop the build."""
    if validate_elasticsearch(es):
        outcome("invalid")
        return
    passwords = itertools.count()
    try:
        children = elasticsearch_children(
            es, existing={}, now=NOW, random_password=lambda: f"password-{next(passwords)}"
        )
    except ValueError as error:
        refusal = str(error)
    else:
        outcome("built")
        assert_manifests(children)
        return
    outcome("refused")
    assert refusal.strip()


@BUILD_SETTINGS
@given(elasticsearch_valid_looking())
@example(cluster(podTemplate={"spec": ["containers"]}))
@example(cluster(podTemplate={"spec": {"containers": 1}}))
@example(cluster(podTemplate={"spec": {"containers": ["elasticsearch"]}}))
@example(cluster(podTemplate={"spec": {"containers": [{"name": "elasticsearch", "env": ["X=1"]}]}}))
@example(cluster(podTemplate={"spec": {"volumes": ["data"]}}))
@example(cluster(podTemplate={"metadata": ["labels"]}))
@example(cluster(volumeClaimTemplates=[{"spec": ["storage"]}]))
@example(cluster(volumeClaimTemplates=[{"metadata": ["elasticsearch-data"]}]))
@example(cluster(resources={"requests": ["memory"]}))
def test_a_valid_elasticsearch_builds_or_is_refused(es: dict[str, Any]) -> None:
    build_elasticsearch(es)


def build_application(kind: str, obj: Mapping[str, Any]) -> None:
    """What the application reconcile does: validate, then build."""
    if validate_application(kind, obj):
        outcome("invalid")
        return
    try:
        children = application_children(kind, obj, existing={}, now=NOW)
    except (ValueError, KeyError) as error:
        refusal = str(error)
    else:
        outcome("built")
        assert_manifests(children)
        return
    outcome("refused")
    assert refusal.strip()


#: An association conf annotation nested deeper than Python's JSON decoder recurses.
DEEP_CONF = {"association.k8s.elastic.co/es-conf": "[" * 5_000 + "]" * 5_000}


@BUILD_SETTINGS
@given(kibana_valid_looking())
@example(
    {
        "kind": "Kibana",
        "metadata": {"name": "kb", "namespace": "ns1", "uid": "uid-1", "annotations": DEEP_CONF},
        "spec": {"version": "8.15.0"},
    }
)
def test_a_valid_kibana_builds_or_is_refused(kb: dict[str, Any]) -> None:
    build_application("Kibana", kb)


@pytest.mark.parametrize("kind", [kind for kind in APP_KINDS if kind != "Kibana"])
def test_a_valid_application_of_every_kind_builds_or_is_refused(kind: str) -> None:
    info = kind_info(kind)
    stored = next(version.name for version in info.versions if version.storage)
    objects = application_valid_looking(info.group, info.plural, kind, stored)
    # The found input first: while it still crashes, the test fails at once rather than after a
    # search and a shrink.
    required = APPLICATION_REQUIREMENTS[kind]
    metadata = {"name": "app", "namespace": "ns1", "uid": "uid-1", "annotations": DEEP_CONF}
    build_application(
        kind, {"kind": kind, "metadata": metadata, "spec": {"version": "8.15.0", **required}}
    )

    # Every other application kind: a smaller budget for each of them.
    @settings(BUILD_SETTINGS, max_examples=25)
    @given(objects)
    def check(obj: dict[str, Any]) -> None:
        build_application(kind, obj)

    check()
