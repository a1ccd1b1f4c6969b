"""Which association of an application still lacks its conf (ECK's ``IsConfiguredIfSet``)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.apps.status import associations_configured, unconfigured_association


def _app(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "app", "namespace": "ns", "annotations": annotations or {}},
        "spec": spec,
    }


ES_CONF = {"association.k8s.elastic.co/es-conf": '{"url": "https://es:9200"}'}
KB_CONF = {"association.k8s.elastic.co/kb-conf": '{"url": "https://kb:5601"}'}


@pytest.mark.parametrize(
    ("app", "missing"),
    [
        (_app({}), None),
        (_app({"elasticsearchRef": {"name": "db"}}), "elasticsearch"),
        (_app({"elasticsearchRef": {"name": "db"}}, ES_CONF), None),
        (_app({"elasticsearchRef": {"secretName": "external"}}), "elasticsearch"),
        # An all-empty ref is no association.
        (_app({"elasticsearchRef": {}}), None),
        (
            _app({"elasticsearchRef": {"name": "db"}, "kibanaRef": {"name": "kb"}}, ES_CONF),
            "kibana",
        ),
        (_app({"kibanaRef": {"name": "kb"}}, KB_CONF), None),
        (_app({"fleetServerRef": {"name": "fs"}}), "fleetserver"),
    ],
)
def test_unconfigured_association(app: dict[str, Any], missing: str | None) -> None:
    assert unconfigured_association(app) == missing
    assert associations_configured(app) is (missing is None)
