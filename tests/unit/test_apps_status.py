"""Status of the stack applications from their workload and pods."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from stackflow.stack.apps import application_status
from stackflow.stack.apps.associations import ref_annotation

NOW = datetime(2026, 8, 1, tzinfo=UTC)


def obj(
    kind: str,
    name: str,
    *,
    spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return an application object."""
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "generation": 4}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "kind": kind,
        "metadata": metadata,
        "spec": spec or {"version": "8.15.0"},
        "status": status or {},
    }


def deployment(replicas: int, available: int, current: int | None = None) -> dict[str, Any]:
    """Return a Deployment with ``available`` of ``replicas`` pods available."""
    return {
        "kind": "Deployment",
        "spec": {"replicas": replicas},
        "status": {
            "replicas": replicas if current is None else current,
            "availableReplicas": available,
        },
    }


def daemonset(desired: int, available: int) -> dict[str, Any]:
    """Return a DaemonSet with ``available`` of ``desired`` pods available."""
    return {
        "kind": "DaemonSet",
        "status": {
            "desiredNumberScheduled": desired,
            "numberAvailable": available,
            "currentNumberScheduled": desired,
        },
    }


def pod(label: str, version: str) -> dict[str, Any]:
    """Return a pod carrying a version label."""
    return {"metadata": {"labels": {label: version}}}


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        (deployment(3, 3), {"availableNodes": 3, "count": 3, "health": "green"}),
        (deployment(3, 1), {"availableNodes": 1, "count": 3, "health": "yellow"}),
        (deployment(3, 0), {"availableNodes": 0, "count": 3, "health": "red"}),
        (deployment(2, 2, current=3), {"availableNodes": 2, "count": 3, "health": "green"}),
        (None, {"availableNodes": 0, "count": 0, "health": "red"}),
    ],
)
def test_deployment_status(workload: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    status = application_status("Kibana", obj("Kibana", "kb"), workload=workload, pods=[], now=NOW)
    assert {key: status[key] for key in expected} == expected
    assert status["selector"] == "common.k8s.elastic.co/type=kibana,kibana.k8s.elastic.co/name=kb"
    assert status["observedGeneration"] == 4
    assert "expectedNodes" not in status


@pytest.mark.parametrize(
    ("kind", "workload", "expected"),
    [
        ("Beat", daemonset(5, 5), {"expectedNodes": 5, "availableNodes": 5, "health": "green"}),
        ("Beat", daemonset(5, 2), {"expectedNodes": 5, "availableNodes": 2, "health": "yellow"}),
        ("Beat", daemonset(5, 0), {"expectedNodes": 5, "availableNodes": 0, "health": "red"}),
        ("Agent", deployment(2, 2), {"expectedNodes": 2, "availableNodes": 2, "health": "green"}),
        (
            "Logstash",
            {"kind": "StatefulSet", "spec": {"replicas": 3}, "status": {"readyReplicas": 2}},
            {"expectedNodes": 3, "availableNodes": 2, "health": "yellow"},
        ),
    ],
)
def test_node_status(kind: str, workload: dict[str, Any], expected: dict[str, Any]) -> None:
    status = application_status(kind, obj(kind, "x"), workload=workload, pods=[], now=NOW)
    assert {key: status[key] for key in expected} == expected
    assert "count" not in status


@pytest.mark.parametrize(
    ("spec", "annotations", "health"),
    [
        ({"version": "8.15.0", "elasticsearchRef": {"name": "es"}}, {}, "red"),
        (
            {"version": "8.15.0", "elasticsearchRef": {"name": "es"}},
            {"association.k8s.elastic.co/es-conf": json.dumps({"url": "u"})},
            "green",
        ),
        (
            {"version": "8.15.0", "elasticsearchRefs": [{"name": "es", "clusterName": "c"}]},
            {},
            "red",
        ),
        (
            {"version": "8.15.0", "elasticsearchRefs": [{"name": "es", "clusterName": "c"}]},
            {
                ref_annotation(target="es", ref={"name": "es"}, default_namespace="ns"): json.dumps(
                    {"url": "u"}
                )
            },
            "green",
        ),
    ],
)
def test_unconfigured_association_is_red(
    spec: dict[str, Any], annotations: dict[str, str], health: str
) -> None:
    kind = "Logstash" if "elasticsearchRefs" in spec else "Beat"
    status = application_status(
        kind,
        obj(kind, "x", spec=spec, annotations=annotations),
        workload=deployment(1, 1),
        pods=[],
        now=NOW,
    )
    assert status["health"] == health


def test_version_is_the_lowest_running_and_kept_without_pods() -> None:
    label = "kibana.k8s.elastic.co/version"
    pods = [pod(label, "8.15.0"), pod(label, "8.9.2"), pod(label, "not-a-version")]
    status = application_status(
        "Kibana", obj("Kibana", "kb"), workload=deployment(3, 3), pods=pods, now=NOW
    )
    assert status["version"] == "8.9.2"
    kept = application_status(
        "Kibana", obj("Kibana", "kb", status={"version": "8.1.0"}), workload=None, pods=[], now=NOW
    )
    assert kept["version"] == "8.1.0"


def test_kind_specific_fields_and_association_statuses_are_kept() -> None:
    current = {"elasticsearchAssociationStatus": "Established"}
    status = application_status(
        "ApmServer",
        obj("ApmServer", "apm", status=current),
        workload=deployment(1, 1),
        pods=[],
        now=NOW,
    )
    assert status["service"] == "apm-apm-http"
    assert status["secretTokenSecret"] == "apm-apm-token"
    assert status["elasticsearchAssociationStatus"] == "Established"
    assert (
        application_status(
            "EnterpriseSearch", obj("EnterpriseSearch", "ent"), workload=None, pods=[], now=NOW
        )["service"]
        == "ent-ent-http"
    )


def test_conditions_keep_transition_time_while_status_holds() -> None:
    earlier = "2026-07-01T00:00:00Z"
    current = {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": earlier}]}
    same = application_status(
        "Beat",
        obj("Beat", "b", status=current),
        workload=None,
        pods=[],
        now=NOW,
        conditions=[{"type": "Ready", "status": "True", "message": ""}],
    )
    assert same["conditions"][0]["lastTransitionTime"] == earlier
    flipped = application_status(
        "Beat",
        obj("Beat", "b", status=current),
        workload=None,
        pods=[],
        now=NOW,
        conditions=[{"type": "Ready", "status": "False", "message": "x"}],
    )
    assert flipped["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "message": "x",
            "lastTransitionTime": "2026-08-01T00:00:00Z",
        }
    ]
