"""Elasticsearch status from StatefulSets, Pods and the (optional) health API answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.stack.elasticsearch.status import (
    compute_status,
    desired_nodes_supported,
    invalid_status,
    merge_conditions,
    reachable_message,
    reported_health,
    resources_aware_management,
    running_version_condition,
    unreachable_reason,
    with_orchestration,
)

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
        # No answer from the cluster: nothing measured, whatever the Pods say (ECK's status).
        (3, 3, None, "unknown", "ApplyingChanges", 10.0),
        (2, 3, None, "unknown", "ApplyingChanges", 10.0),
        (0, 3, None, "unknown", "ApplyingChanges", 10.0),
        (3, 3, "unknown", "unknown", "ApplyingChanges", 10.0),
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


@pytest.mark.parametrize(
    ("answer", "reported"),
    [
        ("green", "green"),
        ("YELLOW", "yellow"),
        ("red", "red"),
        ("unknown", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
    ],
)
def test_health_is_only_what_the_cluster_answered(answer: str | None, reported: str) -> None:
    assert reported_health(answer) == reported


@pytest.mark.parametrize(
    ("annotations", "version", "reason"),
    [
        ({}, "8.15.0", "Elasticsearch cluster UUID is not reconciled"),
        (
            {"elasticsearch.k8s.elastic.co/cluster-uuid": "u"},
            "8.15.0",
            "Desired nodes API must be cleared",
        ),
        (
            {"elasticsearch.k8s.elastic.co/cluster-uuid": "u"},
            "7.17.0",
            "Elasticsearch cannot be reached yet, re-queuing",
        ),
    ],
)
def test_all_pods_ready_but_no_answer_is_what_eck_reports(
    annotations: dict[str, str], version: str, reason: str
) -> None:
    """The cluster's API does not answer: health unknown, ApplyingChanges, not complete with
    ECK's first reason, not reachable though the Service has endpoints."""
    es = make_es()
    es["metadata"]["annotations"] = annotations
    es["spec"]["version"] = version
    decision = compute_status(
        es,
        statefulsets=[make_sts(3, 3)],
        pods=make_pods(3, 3, version=version),
        health=None,
        now=NOW,
        # ECK's default resources: a memory limit and no CPU (not resources aware).
        desired_statefulsets=[
            sts_with({"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}})
        ],
    )

    conditions = conditions_of(decision.status)
    assert (decision.status["health"], decision.status["phase"]) == ("unknown", "ApplyingChanges")
    assert (conditions["ReconciliationComplete"]["status"], decision.unreachable_reason) == (
        "False",
        reason,
    )
    assert conditions["ReconciliationComplete"]["message"] == reason
    assert conditions["ElasticsearchIsReachable"] == {
        "type": "ElasticsearchIsReachable",
        "status": "False",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
        "message": "Service ns/es-es-internal-http has endpoints but Elasticsearch is unavailable",
    }
    # The node specs' progress text never hides the reason the pass stopped at.
    orchestrated = with_orchestration(
        decision, operations={}, message="3 of 3 nodes", phase=None, in_progress=False, now=NOW
    )
    assert conditions_of(orchestrated.status)["ReconciliationComplete"]["message"] == reason
    assert orchestrated.status["phase"] == "ApplyingChanges"


def test_conditions_come_in_ecks_order_and_others_stay() -> None:
    paused = {"type": "OrchestrationPaused", "status": "False", "message": "m"}
    ours = {"type": "StackflowReconciliation", "status": "False", "message": "license"}
    decision = compute_status(
        make_es(status={"conditions": [ours, paused]}),
        statefulsets=[make_sts(3, 3)],
        pods=make_pods(3, 3),
        health="green",
        now=NOW,
    )

    assert [c["type"] for c in decision.status["conditions"]] == [
        "OrchestrationPaused",
        "ReconciliationComplete",
        "RunningDesiredVersion",
        "ElasticsearchIsReachable",
        "ResourcesAwareManagement",
    ]


@pytest.mark.parametrize(
    ("previous", "reported", "merged"),
    [
        ([], [("ReconciliationComplete", "True")], [("ReconciliationComplete", "True")]),
        (
            [("OrchestrationPaused", "True"), ("ReconciliationComplete", "True")],
            [("ReconciliationComplete", "False"), ("ElasticsearchIsReachable", "True")],
            [
                ("OrchestrationPaused", "True"),
                ("ReconciliationComplete", "False"),
                ("ElasticsearchIsReachable", "True"),
            ],
        ),
        (
            [("StackflowReconciliation", "False")],
            [("ReconciliationComplete", "True")],
            [("ReconciliationComplete", "True")],
        ),
    ],
)
def test_merge_conditions(
    previous: list[tuple[str, str]], reported: list[tuple[str, str]], merged: list[tuple[str, str]]
) -> None:
    def conditions(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"type": kind, "status": value} for kind, value in pairs]

    assert merge_conditions(conditions(previous), conditions(reported)) == conditions(merged)


@pytest.mark.parametrize(
    ("has_endpoints", "answers", "message"),
    [
        (False, False, "Service ns/es-es-internal-http has no endpoint"),
        (
            True,
            False,
            "Service ns/es-es-internal-http has endpoints but Elasticsearch is unavailable",
        ),
        (True, True, "Service ns/es-es-internal-http has endpoints"),
    ],
)
def test_reachable_message(has_endpoints: bool, answers: bool, message: str) -> None:
    assert reachable_message("ns", "es", has_endpoints=has_endpoints, answers=answers) == message


@pytest.mark.parametrize(
    ("desired", "running", "condition"),
    [
        ("8.15.0", None, ("Unknown", "No running version reported")),
        ("8.15.0", "8.14.3", ("False", "Upgrading from 8.14.3 to 8.15.0")),
        ("8.15.0", "8.15.0", ("True", "All nodes are running version 8.15.0")),
        ("8.14.3", "8.15.0", ("True", "All nodes are running version 8.15.0")),
    ],
)
def test_running_version_condition(
    desired: str, running: str | None, condition: tuple[str, str]
) -> None:
    assert running_version_condition(desired, running) == condition


@pytest.mark.parametrize(
    ("spec", "running", "supported"),
    [
        ("8.15.0", None, True),
        ("8.3.0", None, True),
        ("8.2.3", None, False),
        ("8.15.0", "8.2.0", False),
        ("7.17.0", "8.3.0", True),
    ],
)
def test_desired_nodes_supported(spec: str, running: str | None, supported: bool) -> None:
    assert desired_nodes_supported(spec, running) is supported


@pytest.mark.parametrize(
    ("bootstrapped", "resources_aware", "reason"),
    [
        (False, "True", "Elasticsearch cluster UUID is not reconciled"),
        (True, "True", "Waiting for Elasticsearch to be available to update the desired nodes API"),
        (True, "False", "Desired nodes API must be cleared"),
        (True, None, "Elasticsearch cannot be reached yet, re-queuing"),
    ],
)
def test_unreachable_reason(bootstrapped: bool, resources_aware: str | None, reason: str) -> None:
    assert unreachable_reason(bootstrapped=bootstrapped, resources_aware=resources_aware) == reason


def sts_with(
    resources: dict[str, Any],
    *,
    mount: str = "/usr/share/elasticsearch/data",
    storage: str | None = "1Gi",
) -> dict[str, Any]:
    requests = {"storage": storage} if storage is not None else {}
    return {
        "metadata": {"name": "es-es-default"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "elasticsearch",
                            "resources": resources,
                            "volumeMounts": [{"name": "elasticsearch-data", "mountPath": mount}],
                        }
                    ]
                }
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "elasticsearch-data"},
                    "spec": {"resources": {"requests": requests}},
                }
            ],
        },
    }


PREFIX = (
    "Cannot get compute and storage resources from Elasticsearch resource generation 4: "
    'cannot compute resources for NodeSet "default": '
)


@pytest.mark.parametrize(
    ("statefulset", "condition"),
    [
        (
            sts_with({"limits": {"memory": "2Gi", "cpu": "1"}}),
            (
                "True",
                "Successfully calculated compute and storage resources from "
                "Elasticsearch resource generation 4",
            ),
        ),
        (
            sts_with({"requests": {"memory": "2Gi", "cpu": "500m"}, "limits": {"memory": "2Gi"}}),
            (
                "True",
                "Successfully calculated compute and storage resources from "
                "Elasticsearch resource generation 4",
            ),
        ),
        (
            # ECK's defaults: a memory limit, no CPU at all.
            sts_with({"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}),
            ("False", PREFIX + "no CPU request or limit set"),
        ),
        (
            sts_with({"requests": {"memory": "1Gi", "cpu": "0"}, "limits": {"memory": "2Gi"}}),
            (
                "False",
                PREFIX + "CPU request is set but value is 0, "
                "memory request and limit do not have the same value",
            ),
        ),
        (
            sts_with({"limits": {"cpu": "1"}}, storage=None),
            (
                "False",
                PREFIX + "memory limit is not set, "
                'no storage request in claim "elasticsearch-data"',
            ),
        ),
        (
            sts_with({"limits": {"cpu": "1", "memory": "2Gi"}}, mount="/data"),
            (
                "False",
                PREFIX + "Elasticsearch path.data /usr/share/elasticsearch/data "
                "must mounted by a volume",
            ),
        ),
    ],
)
def test_resources_aware_management(
    statefulset: dict[str, Any], condition: tuple[str, str]
) -> None:
    assert resources_aware_management(make_es(), [statefulset]) == condition


def test_a_changed_message_moves_the_transition_time() -> None:
    """ECK replaces a condition whose message changed, with a new transition time."""
    previous = {
        "conditions": [
            {
                "type": "RunningDesiredVersion",
                "status": "False",
                "lastTransitionTime": EARLIER,
                "message": "Upgrading from 8.14.0 to 8.15.0",
            }
        ]
    }
    pods = make_pods(3, 3, version="8.14.3")

    decision = compute_status(
        make_es(status=previous), statefulsets=[make_sts(3, 3)], pods=pods, health="green", now=NOW
    )

    condition = conditions_of(decision.status)["RunningDesiredVersion"]
    assert (condition["message"], condition["lastTransitionTime"]) == (
        "Upgrading from 8.14.3 to 8.15.0",
        "2026-03-01T12:00:00Z",
    )
