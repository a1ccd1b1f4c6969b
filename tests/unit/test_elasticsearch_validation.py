"""Elasticsearch spec validation: the essentials of ECK's webhook."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.validation import validate_elasticsearch


def make_es(name: str = "quickstart", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 3}]}
    base.update(spec)
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": base}


@pytest.mark.parametrize(
    "es",
    [
        make_es(),
        make_es(version="7.17.0"),
        make_es(version="9.1.2"),
        make_es(version="8.16.0-SNAPSHOT"),
        make_es(name="n" * 36),
        make_es(nodeSets=[{"name": "default", "count": 0, "config": {"node.roles": []}}]),
        make_es(
            nodeSets=[
                {"name": "masters", "count": 3, "config": {"node.roles": ["master"]}},
                {"name": "data", "count": 2, "config": {"node.roles": ["data"]}},
            ]
        ),
    ],
)
def test_valid_specs_have_no_errors(es: dict[str, Any]) -> None:
    assert validate_elasticsearch(es) == []


@pytest.mark.parametrize(
    ("es", "field"),
    [
        (make_es(name="n" * 37), "metadata.name"),
        (make_es(version=""), "spec.version"),
        (make_es(version="eight"), "spec.version"),
        (make_es(version="7.16.3"), "spec.version"),
        (make_es(version="6.8.0"), "spec.version"),
        (make_es(version="10.0.0"), "spec.version"),
        (make_es(nodeSets=[]), "spec.nodeSets"),
        (make_es(nodeSets=[{"name": "bad_name", "count": 1}]), "spec.nodeSets[0].name"),
        (make_es(nodeSets=[{"name": "x" * 24, "count": 1}]), "spec.nodeSets[0].name"),
        (make_es(nodeSets=[{"name": "a", "count": -1}]), "spec.nodeSets[0].count"),
        (
            make_es(nodeSets=[{"name": "a", "count": 1}, {"name": "a", "count": 1}]),
            "spec.nodeSets[1].name",
        ),
        (
            make_es(nodeSets=[{"name": "data", "count": 2, "config": {"node.roles": ["data"]}}]),
            "spec.nodeSets",
        ),
        (
            make_es(name="n" * 36, nodeSets=[{"name": "x" * 23, "count": 1}]),
            "spec.nodeSets[0].name",
        ),
    ],
)
def test_invalid_specs_name_the_field(es: dict[str, Any], field: str) -> None:
    errors = validate_elasticsearch(es)

    assert field in [path for path, _ in errors]
    assert all(message for _, message in errors)


def test_all_problems_are_reported_together() -> None:
    es = make_es(name="n" * 40, version="1.0", nodeSets=[{"name": "a b", "count": -2}])

    fields = {path for path, _ in validate_elasticsearch(es)}

    assert fields == {
        "metadata.name",
        "spec.version",
        "spec.nodeSets[0].name",
        "spec.nodeSets[0].count",
    }
