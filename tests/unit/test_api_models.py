"""The ECK API models: ECK manifests parse, round-trip unchanged, and bad fields are named."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stackflow.api.agent import Agent
from stackflow.api.base import InvalidResourceError
from stackflow.api.common import ObjectSelector
from stackflow.api.elasticsearch import Elasticsearch
from stackflow.api.kibana import Kibana
from stackflow.api.kinds import KINDS, kind_for_object, kind_info, parse_object
from tests.unit.eck_manifests import AGENT, ECK_MANIFESTS, ELASTICSEARCH, KIBANA


def test_every_kind_has_a_manifest() -> None:
    assert set(ECK_MANIFESTS) == {info.kind for info in KINDS}


@pytest.mark.parametrize("kind", sorted(ECK_MANIFESTS))
def test_eck_manifest_round_trips_unchanged(kind: str) -> None:
    manifest = ECK_MANIFESTS[kind]
    original = copy.deepcopy(manifest)
    model = parse_object(manifest)
    assert type(model).__name__ == kind
    assert model.to_object() == original
    assert manifest == original  # parsing does not mutate its input


@pytest.mark.parametrize("kind", sorted(ECK_MANIFESTS))
def test_unknown_fields_survive_at_every_level(kind: str) -> None:
    manifest = copy.deepcopy(ECK_MANIFESTS[kind])
    manifest["topLevelExtra"] = 1
    manifest["spec"]["specExtra"] = {"a": [1, 2]}
    manifest["status"]["statusExtra"] = "x"
    manifest["metadata"]["metadataExtra"] = True
    assert kind_info(kind).model.from_object(manifest).to_object() == manifest


def test_typed_fields_are_read_with_python_names() -> None:
    es = Elasticsearch.from_object(copy.deepcopy(ELASTICSEARCH))
    assert es.name == "quickstart"
    assert es.namespace == "default"
    assert [n.name for n in es.spec.node_sets] == ["masters", "data"]
    assert es.spec.node_sets[0].count == 3
    assert es.spec.http is not None
    assert es.spec.http.tls_enabled()
    assert es.status is not None
    assert es.status.phase == "Ready"
    assert es.status.health == "green"
    kb = Kibana.from_object(copy.deepcopy(KIBANA))
    assert kb.spec.elasticsearch_ref is not None
    assert kb.spec.elasticsearch_ref.key("kibana") == "default/quickstart"
    assert kb.status is not None
    assert kb.status.elasticsearch_association_status == "Established"
    agent = Agent.from_object(copy.deepcopy(AGENT))
    assert agent.spec.policy_id == "eck-fleet-server"
    assert agent.spec.effective_mode() == "fleet"


def test_models_built_in_python_write_eck_names_and_no_defaults() -> None:
    kb = Kibana.model_validate(
        {
            "api_version": "kibana.k8s.elastic.co/v1",
            "kind": "Kibana",
            "metadata": {"name": "kb"},
            "spec": {"version": "9.1.0", "elasticsearch_ref": {"name": "es"}},
        }
    )
    assert kb.to_object() == {
        "apiVersion": "kibana.k8s.elastic.co/v1",
        "kind": "Kibana",
        "metadata": {"name": "kb"},
        "spec": {"version": "9.1.0", "elasticsearchRef": {"name": "es"}},
    }


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda o: o["spec"].pop("version"), "spec.version"),
        (lambda o: o["spec"].update(nodeSets=[]), "spec.nodeSets"),
        (lambda o: o["spec"]["nodeSets"][1].update(count="many"), "spec.nodeSets[1].count"),
        (lambda o: o["spec"]["nodeSets"][0].update(name="bad_name!"), "spec.nodeSets[0].name"),
        (lambda o: o["spec"]["nodeSets"][0].update(name="n" * 24), "spec.nodeSets[0].name"),
        (
            lambda o: o["spec"].update(volumeClaimDeletePolicy="Never"),
            "spec.volumeClaimDeletePolicy",
        ),
        (lambda o: o["status"].update(health="purple"), "status.health"),
        (lambda o: o["status"].update(phase="Sleeping"), "status.phase"),
        (lambda o: o.pop("spec"), "spec"),
        (lambda o: o.update(kind="Kibana"), "kind"),
        (lambda o: o.update(apiVersion="kibana.k8s.elastic.co/v1"), "apiVersion"),
    ],
)
def test_validation_errors_name_the_field(mutate: Any, field: str) -> None:
    manifest = copy.deepcopy(ELASTICSEARCH)
    mutate(manifest)
    with pytest.raises(InvalidResourceError) as caught:
        Elasticsearch.from_object(manifest)
    assert any(problem.startswith(f"{field}:") for problem in caught.value.problems), caught.value
    assert "'quickstart'" in str(caught.value)


def test_association_status_values_are_eck_ones() -> None:
    manifest = copy.deepcopy(KIBANA)
    manifest["status"]["elasticsearchAssociationStatus"] = "Connected"
    with pytest.raises(InvalidResourceError, match=r"status\.elasticsearchAssociationStatus"):
        Kibana.from_object(manifest)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {"apiVersion": "elasticsearch.k8s.elastic.co/v1beta1", "kind": "Elasticsearch"},
            "Elasticsearch",
        ),
        ({"apiVersion": "beat.k8s.elastic.co/v1beta1", "kind": "Beat"}, "Beat"),
        ({"apiVersion": "apps/v1", "kind": "Deployment"}, None),
        ({"apiVersion": "kibana.k8s.elastic.co/v1", "kind": "Elasticsearch"}, None),
    ],
)
def test_kind_for_object(obj: dict[str, Any], expected: str | None) -> None:
    info = kind_for_object(obj)
    assert (info.kind if info else None) == expected


def test_parse_object_rejects_non_eck_kinds() -> None:
    with pytest.raises(ValueError, match="not an ECK kind"):
        parse_object({"apiVersion": "v1", "kind": "Secret"})


@pytest.mark.parametrize(
    ("selector", "default_namespace", "key"),
    [
        (ObjectSelector(name="es"), "ns1", "ns1/es"),
        (ObjectSelector(name="es", namespace="other"), "ns1", "other/es"),
    ],
)
def test_object_selector_key(selector: ObjectSelector, default_namespace: str, key: str) -> None:
    assert selector.key(default_namespace) == key
    assert selector.with_default_namespace(default_namespace).namespace == key.split("/")[0]
