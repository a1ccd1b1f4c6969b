"""The association controllers' pure table parts: references and the owner mapper of their Secrets."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.api.kinds import kind_resource
from stackflow.controllers import CONTROLLERS
from stackflow.models.keys import NamespacedName

APP_NS = "team-a"
ES_NS = "team-b"


def app_manifest(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": kind_resource(kind).api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "8.15.0", **spec},
    }


def test_references_name_the_target_its_service_and_certificates() -> None:
    kibana = app_manifest(
        "Kibana", "kb", APP_NS, {"elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    )
    references = CONTROLLERS.named("kb-es").references(kibana)

    assert [(key.kind, key.namespace, key.name) for key in references] == [
        ("Elasticsearch", ES_NS, "es"),
        ("Service", ES_NS, "es-es-http"),
        ("Secret", ES_NS, "es-es-http-certs-public"),
    ]
    external = app_manifest("Kibana", "kb", APP_NS, {"elasticsearchRef": {"secretName": "ext"}})
    assert [
        (key.kind, key.namespace, key.name)
        for key in CONTROLLERS.named("kb-es").references(external)
    ] == [("Secret", APP_NS, "ext")]


@pytest.mark.parametrize(
    ("labels", "owner"),
    [
        pytest.param(
            {
                "kibanaassociation.k8s.elastic.co/name": "kb",
                "kibanaassociation.k8s.elastic.co/namespace": APP_NS,
                "kibanaassociation.k8s.elastic.co/type": "elasticsearch",
            },
            (APP_NS, "kb"),
            id="es-side-user-secret",
        ),
        pytest.param(
            {
                "kibanaassociation.k8s.elastic.co/name": "kb",
                "kibanaassociation.k8s.elastic.co/namespace": APP_NS,
                "kibanaassociation.k8s.elastic.co/type": "ent",
            },
            None,
            id="other-association",
        ),
        pytest.param({}, None, id="unlabelled"),
    ],
)
def test_association_secrets_map_to_their_associated_object(
    labels: dict[str, str], owner: tuple[str, str] | None
) -> None:
    (child_watch,) = CONTROLLERS.named("kb-es").children
    secret = {"metadata": {"name": "s", "namespace": ES_NS, "labels": labels}}

    assert child_watch.owners(secret) == ((NamespacedName(*owner),) if owner else ())
