"""Elasticsearch spec validation: the essentials of ECK's webhook."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.stack.elasticsearch.validation import (
    DISABLE_DOWNGRADE_VALIDATION_ANNOTATION,
    downgrade_problem,
    validate_elasticsearch,
)


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


@pytest.mark.parametrize(
    "node_sets",
    [
        # ECK refuses a cluster left without a master-eligible node: every count 0, ...
        [{"name": "default", "count": 0}],
        [{"name": "default", "count": 0, "config": {"node.roles": []}}],
        # ... or no master node set at all.
        [{"name": "data", "count": 3, "config": {"node.roles": ["data"]}}],
        [
            {"name": "masters", "count": 0, "config": {"node.roles": ["master"]}},
            {"name": "data", "count": 2, "config": {"node.roles": ["data"]}},
        ],
    ],
)
def test_a_cluster_without_a_master_node_is_refused_with_eck_s_message(
    node_sets: list[dict[str, Any]],
) -> None:
    assert validate_elasticsearch(make_es(nodeSets=node_sets)) == [
        ("spec.nodeSets", "Elasticsearch needs to have at least one master node")
    ]


def test_all_problems_are_reported_together() -> None:
    es = make_es(name="n" * 40, version="1.0", nodeSets=[{"name": "a b", "count": -2}])

    fields = {path for path, _ in validate_elasticsearch(es)}

    assert fields == {
        "metadata.name",
        "spec.version",
        "spec.nodeSets[0].name",
        "spec.nodeSets[0].count",
        "spec.nodeSets",
    }


DOWNGRADES = "Downgrades are not supported"
UPGRADE_PATH = (
    "Unsupported version upgrade path. Check the Elasticsearch documentation for supported "
    "upgrade paths."
)


@pytest.mark.parametrize(
    ("proposed", "running", "refused"),
    [
        ("8.18.0", "8.17.0", False),
        ("9.1.0", "8.18.0", False),
        ("8.0.0", "7.17.0", False),
        # 9.x only from 8.18, 8.x only from 7.17: ECK's message, the downgrade annotation or not.
        ("9.1.0", "8.17.0", True),
        ("8.15.0", "7.16.0", True),
        ("8.15.0", "9.1.0", True),
        (None, None, False),
    ],
)
def test_an_unsupported_upgrade_path_is_refused_with_eck_s_message(
    proposed: str | None, running: str | None, refused: bool
) -> None:
    es = make_es(version=proposed or "9.1.0")
    es["metadata"]["annotations"] = {DISABLE_DOWNGRADE_VALIDATION_ANNOTATION: "true"}
    if running:
        es["status"] = {"version": running}
    errors = validate_elasticsearch(es)
    expected = [("spec.version", UPGRADE_PATH)]
    assert errors == (expected if refused else []), errors


@pytest.mark.parametrize(
    ("proposed", "running", "allowed", "expected"),
    [
        # Nothing runs yet: any version may be chosen.
        ("8.15.0", None, False, None),
        ("9.1.0", "9.1.0", False, None),
        ("9.1.1", "9.1.0", False, None),
        ("10.0.0", "9.1.0", False, None),
        # Versions compare as ECK's: a pre-release comes before its release.
        ("9.1.0", "9.1.0-SNAPSHOT", False, None),
        ("9.1.0-SNAPSHOT", "9.1.0", False, DOWNGRADES),
        ("8.15.0", "9.1.0", False, DOWNGRADES),
        ("9.0.9", "9.1.0", False, DOWNGRADES),
        ("9.1.0", "9.1.1", False, DOWNGRADES),
        # ECK's annotation lets the user through, at their own risk.
        ("8.15.0", "9.1.0", True, None),
        # Unparseable versions are the version check's business.
        ("nope", "9.1.0", False, None),
        ("8.15.0", "garbage", False, None),
    ],
)
def test_downgrade_problem(
    proposed: str, running: str | None, allowed: bool, expected: str | None
) -> None:
    problem = downgrade_problem(proposed=proposed, running=running, downgrades_allowed=allowed)

    assert problem == (None if expected is None else ("spec.version", expected))


@pytest.mark.parametrize(
    ("annotations", "status", "refused"),
    [
        ({}, {"version": "9.1.0"}, True),
        ({}, {}, False),
        ({DISABLE_DOWNGRADE_VALIDATION_ANNOTATION: "true"}, {"version": "9.1.0"}, False),
        ({DISABLE_DOWNGRADE_VALIDATION_ANNOTATION: "false"}, {"version": "9.1.0"}, True),
    ],
)
def test_a_downgrade_below_the_running_version_is_refused(
    annotations: dict[str, str], status: dict[str, Any], refused: bool
) -> None:
    es = make_es(version="9.0.0")
    es["metadata"]["annotations"] = annotations
    es["status"] = status

    errors = validate_elasticsearch(es)

    expected = [("spec.version", DOWNGRADES)]
    assert errors == (expected if refused else [])
