"""Elasticsearch status from StatefulSets, Pods and the (optional) health API answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.stack.elasticsearch.status import compute_status, invalid_status

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EARLIER = "2026-02-01T00:00:00Z"


def make_es(count: int = 3, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "es", "namespace": "ns", "generation": 4},
        "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": count}]},
        "status": status or {},
    }


def make_sts(replicas: int, ready: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "es-es-default",
            "generation": 2,
            "labels": {"elasticsearch.k8s.elastic.co/cluster-name": "es"},
        },
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 2,
            "replicas": replicas,
            "readyReplicas": ready,
            "currentRevision": "r1",
            "updateRevision": "r1",
        },
    }


def make_pods(ready: int, total: int, version: str = "8.15.0") -> list[dict[str, Any]]:
    return [
        {
            "metadata": {
                "name": f"es-es-default-{index}",
                "labels": {
                    "elasticsearch.k8s.elastic.co/cluster-name": "es",
                    "elasticsearch.k8s.elastic.co/version": version,
                },
            },
            "status": {
                "conditions": [{"type": "Ready", "status": "True" if index < ready else "False"}]
            },
        }
        for index in range(total)
    ]


@pytest.mark.parametrize(
    ("ready", "total", "api_health", "health", "phase", "requeue"),
    [
        (3, 3, "green", "green", "Ready", None),
        (3, 3, "yellow", "yellow", "Ready", None),
        (3, 3, None, "green", "Ready", 10.0),
        (2, 3, None, "yellow", "ApplyingChanges", 10.0),
        (0, 3, None, "red", "ApplyingChanges", 10.0),
        (0, 0, None, "unknown", "ApplyingChanges", 10.0),
        (2, 3, "red", "red", "ApplyingChanges", 10.0),
    ],
)
def test_health_phase_and_requeue(
    ready: int, total: int, api_health: str | None, health: str, phase: str, requeue: float | None
) -> None:
    decision = compute_status(
        make_es(),
        statefulsets=[make_sts(3, ready)] if total else [],
        pods=make_pods(ready, total),
        health=api_health,
        now=NOW,
    )

    assert decision.status["health"] == health
    assert decision.status["phase"] == phase
    assert decision.status["availableNodes"] == ready
    assert decision.status["observedGeneration"] == 4
    assert decision.requeue_after_seconds == requeue


def conditions_of(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {condition["type"]: condition for condition in status["conditions"]}


@pytest.mark.parametrize(
    ("api_health", "reachable"),
    [("green", "True"), (None, "False")],
)
def test_reachable_condition(api_health: str | None, reachable: str) -> None:
    decision = compute_status(
        make_es(), statefulsets=[make_sts(3, 3)], pods=make_pods(3, 3), health=api_health, now=NOW
    )

    assert conditions_of(decision.status)["ElasticsearchIsReachable"]["status"] == reachable


@pytest.mark.parametrize(
    ("previous_status", "expected_time"),
    [
        ("True", EARLIER),
        ("False", "2026-03-01T12:00:00Z"),
    ],
)
def test_last_transition_time_is_kept_only_while_unchanged(
    previous_status: str, expected_time: str
) -> None:
    previous = {
        "conditions": [
            {
                "type": "ReconciliationComplete",
                "status": previous_status,
                "lastTransitionTime": EARLIER,
                "message": "",
            }
        ]
    }

    decision = compute_status(
        make_es(status=previous),
        statefulsets=[make_sts(3, 3)],
        pods=make_pods(3, 3),
        health="green",
        now=NOW,
    )

    assert (
        conditions_of(decision.status)["ReconciliationComplete"]["lastTransitionTime"]
        == expected_time
    )


@pytest.mark.parametrize(
    ("versions", "lowest", "desired"),
    [
        (["8.15.0", "8.15.0", "8.15.0"], "8.15.0", "True"),
        (["8.14.3", "8.15.0", "8.15.0"], "8.14.3", "False"),
    ],
)
def test_version_is_the_lowest_running(versions: list[str], lowest: str, desired: str) -> None:
    pods = make_pods(3, 3)
    for pod, version in zip(pods, versions, strict=True):
        pod["metadata"]["labels"]["elasticsearch.k8s.elastic.co/version"] = version

    decision = compute_status(
        make_es(), statefulsets=[make_sts(3, 3)], pods=pods, health="green", now=NOW
    )

    assert decision.status["version"] == lowest
    assert conditions_of(decision.status)["RunningDesiredVersion"]["status"] == desired
    assert decision.status["phase"] == ("Ready" if desired == "True" else "ApplyingChanges")


def test_statefulset_not_scaled_yet_means_applying_changes() -> None:
    decision = compute_status(
        make_es(count=5),
        statefulsets=[make_sts(3, 3)],
        pods=make_pods(3, 3),
        health="green",
        now=NOW,
    )

    assert decision.status["phase"] == "ApplyingChanges"
    assert decision.requeue_after_seconds == 10.0


def test_pods_of_other_clusters_are_ignored() -> None:
    other = make_pods(3, 3)
    for pod in other:
        pod["metadata"]["labels"]["elasticsearch.k8s.elastic.co/cluster-name"] = "other"

    decision = compute_status(
        make_es(), statefulsets=[make_sts(3, 0)], pods=other, health=None, now=NOW
    )

    assert decision.status["availableNodes"] == 0
    assert decision.status["health"] == "unknown"


def test_invalid_status_reports_every_error() -> None:
    status = invalid_status(
        make_es(), errors=[("spec.version", "bad"), ("metadata.name", "too long")], now=NOW
    )

    assert status["phase"] == "Invalid"
    condition = conditions_of(status)["ReconciliationComplete"]
    assert condition["status"] == "False"
    assert condition["message"] == "spec.version: bad; metadata.name: too long"
