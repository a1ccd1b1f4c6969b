"""Every Pod, StatefulSet, Deployment and DaemonSet the builders make carries the covering label.

The child watches of those kinds follow one informer per kind, selected by
``common.k8s.elastic.co/type`` (``watchers.informers.COVERED_KINDS``): a workload or a Pod without
that label would be invisible to every controller watching it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.controllers import CONTROLLERS
from stackflow.stack.apps.builder import desired_children as application_children
from stackflow.stack.apps.kinds import APP_KINDS
from stackflow.stack.elasticsearch.builder import desired_children as elasticsearch_children
from stackflow.stack.labels import TYPE_LABEL
from watchers.informers import COVERED_KINDS, selector_predicate

NOW = datetime(2026, 3, 1, tzinfo=UTC)
WORKLOADS = {"StatefulSet", "Deployment", "DaemonSet"}
#: What each application kind needs besides a version to build its workload.
REQUIRED = {
    "Beat": {"type": "filebeat", "deployment": {}},
    "Agent": {"deployment": {}},
}


def _application(kind: str, api_version: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "app", "namespace": "ns1", "uid": "uid-1"},
        "spec": {"version": "8.15.0", **REQUIRED.get(kind, {})},
    }


def _built() -> Iterator[tuple[str, Mapping[str, Any]]]:
    passwords = itertools.count()
    es = {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "es", "namespace": "ns1", "uid": "uid-1"},
        "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
    }
    for child in elasticsearch_children(
        es, existing={}, now=NOW, random_password=lambda: f"p-{next(passwords)}"
    ):
        yield "Elasticsearch", child
    for app in APP_KINDS.values():
        obj = _application(app.kind, app.api_version)
        for child in application_children(app.kind, obj, existing={}, now=NOW):
            yield app.kind, child


def _workloads() -> list[tuple[str, Mapping[str, Any]]]:
    return [(owner, child) for owner, child in _built() if child["kind"] in WORKLOADS]


@pytest.fixture(scope="module")
def workloads() -> list[tuple[str, Mapping[str, Any]]]:
    """Every workload the builders make for one object of each kind."""
    return _workloads()


def test_every_kind_builds_a_workload(workloads: list[tuple[str, Mapping[str, Any]]]) -> None:
    assert {owner for owner, _ in workloads} == {"Elasticsearch", *APP_KINDS}


def test_every_workload_and_its_pods_carry_the_covering_label(
    workloads: list[tuple[str, Mapping[str, Any]]],
) -> None:
    for owner, workload in workloads:
        pod_labels = workload["spec"]["template"]["metadata"]["labels"]
        assert TYPE_LABEL in workload["metadata"]["labels"], (owner, workload["kind"])
        assert TYPE_LABEL in pod_labels, (owner, workload["kind"])


def test_every_child_watch_of_a_covered_kind_selects_what_the_builders_label(
    workloads: list[tuple[str, Mapping[str, Any]]],
) -> None:
    selected = 0
    for controller in CONTROLLERS:
        for child in controller.children:
            if (child.kind.group, child.kind.plural) not in COVERED_KINDS:
                continue
            assert child.label_selector, controller.name
            selects = selector_predicate(child.label_selector)
            assert selects is not None, child.label_selector
            for _, workload in workloads:
                for labels in (
                    workload["metadata"]["labels"],
                    workload["spec"]["template"]["metadata"]["labels"],
                ):
                    if selects({"metadata": {"labels": labels}}):
                        selected += 1
                        assert TYPE_LABEL in labels
    assert selected
