"""The parity tier's comparison (tests/parity/compare.py): what is masked, how objects are
flattened and diffed, and how DIFFERENCES.md's rows match; pure, no cluster."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.parity.compare import (
    ABSENT,
    MASK,
    Difference,
    Row,
    Until,
    diff,
    flatten,
    holds,
    normalize,
    parse_rows,
    undocumented,
    world,
)


def secret(data: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "n", "uid": "u1"},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


@pytest.mark.parametrize(
    ("item", "path", "shown"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "c", "uid": "x"}}, "metadata.uid", MASK),
        (
            {"kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": "t"}},
            "metadata.creationTimestamp",
            MASK,
        ),
        (
            {"kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1"}},
            "spec.clusterIP",
            MASK,
        ),
        (
            {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a/config-hash": "1"}}},
            "metadata.labels.a/config-hash",
            MASK,
        ),
        (
            {"kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a/type": "es"}}},
            "metadata.labels.a/type",
            "es",
        ),
        (secret({"elastic": "generated-password"}), "data.elastic", "<value>"),
        (secret({"elasticsearch.yml": "a:\n  b: 1\n"}), "data.elasticsearch.yml.a.b", 1),
        (
            {
                "kind": "ConfigMap",
                "metadata": {"name": "c"},
                "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nx"},
            },
            "data.ca.crt",
            "<pem>",
        ),
    ],
)
def test_what_differs_between_runs_is_masked_and_secrets_show_keys(
    item: dict[str, Any], path: str, shown: Any
) -> None:
    assert flatten(normalize(item))[path] == shown


def test_lists_of_named_objects_are_keyed_by_name() -> None:
    pod = {"containers": [{"name": "es", "image": "a"}, {"name": "sidecar", "image": "b"}]}
    assert flatten(pod) == {
        "containers[es].name": "es",
        "containers[es].image": "a",
        "containers[sidecar].name": "sidecar",
        "containers[sidecar].image": "b",
    }
    mounts = {"m": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}
    assert set(flatten(mounts)) == {
        "m[/a].name",
        "m[/a].mountPath",
        "m[/b].name",
        "m[/b].mountPath",
    }


def test_events_are_compared_by_object_type_and_reason() -> None:
    event = {
        "kind": "Event",
        "metadata": {"name": "x.123", "namespace": "n"},
        "involvedObject": {"kind": "Elasticsearch", "name": "es"},
        "type": "Warning",
        "reason": "Unhealthy",
        "count": 3,
    }
    assert world([event, {**event, "count": 4}]) == {
        "Events n": {"Elasticsearch/es Warning Unhealthy": "recorded"}
    }


def test_two_worlds_differ_field_by_field_and_by_object() -> None:
    eck = {"A n/a": {"spec": {"x": 1, "y": 2}}, "B n/b": {}}
    stackflow = {"A n/a": {"spec": {"x": 1, "z": 3}}, "C n/c": {}}
    assert diff(eck, stackflow) == [
        Difference("A n/a", "spec.y", 2, ABSENT),
        Difference("A n/a", "spec.z", ABSENT, 3),
        Difference("B n/b", "", "present", ABSENT),
        Difference("C n/c", "", ABSENT, "present"),
    ]


TABLE = """\
| scenario | object | field path | ECK | Stackflow | reason |
|---|---|---|---|---|---|
| one-node | `Pod parity/*`<br>`StatefulSet parity/*` | `spec.securityContext*` | set | unset | because |
| * | `B n/b` | `` | present | (absent) | never made |
"""


def test_rows_document_differences_and_stale_rows_are_reported() -> None:
    rows = parse_rows(TABLE)
    assert rows[0] == Row(
        ("one-node",),
        ("Pod parity/*", "StatefulSet parity/*"),
        ("spec.securityContext*",),
        "because",
    )
    known = Difference("Pod parity/p-0", "spec.securityContext.runAsUser", 1000, ABSENT)
    new = Difference("Service parity/s", "spec.type", "ClusterIP", "NodePort")
    loose, stale = undocumented("one-node", [known, new], rows)
    assert loose == [new]
    assert stale == [rows[1]]


def test_the_schedulers_events_are_left_out() -> None:
    """Whether a Pod waited for a node is the scheduler's timing, in either world."""
    waited = {
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "n"},
        "involvedObject": {"kind": "Pod", "name": "es-default-1"},
        "type": "Warning",
        "reason": "FailedScheduling",
        "source": {"component": "default-scheduler"},
    }
    reported = {**waited, "source": {}, "reportingComponent": "default-scheduler"}
    assert world([waited, reported]) == {}


def test_the_volume_binders_events_are_left_out() -> None:
    """Whether a claim was looked at before its volume existed is the machine's timing."""
    waited = {
        "kind": "Event",
        "metadata": {"name": "c.1", "namespace": "n"},
        "involvedObject": {"kind": "PersistentVolumeClaim", "name": "data-es-0"},
        "type": "Normal",
        "reason": "FailedBinding",
        "source": {"component": "persistentvolume-controller"},
    }
    assert world([waited]) == {}


def test_a_deployments_pod_is_keyed_without_what_is_generated() -> None:
    """Kibana's Pod is named by its ReplicaSet: the template hash and a random suffix."""
    pod = {
        "kind": "Pod",
        "metadata": {
            "name": "kb-kb-5d8f7c9b4-x2k9q",
            "generateName": "kb-kb-5d8f7c9b4-",
            "namespace": "n",
            "labels": {"pod-template-hash": "5d8f7c9b4"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "kb-kb-5d8f7c9b4"}],
        },
    }
    shown = world([pod])
    assert list(shown) == ["Pod n/kb-kb-<generated>"]
    assert shown["Pod n/kb-kb-<generated>"]["metadata"]["name"] == "kb-kb-<generated>"
    replica_set = {"kind": "ReplicaSet", "metadata": {"name": "kb-kb-5d8f7c9b4", "namespace": "n"}}
    created = {
        "kind": "Event",
        "metadata": {"name": "e.1", "namespace": "n"},
        "involvedObject": {"kind": "ReplicaSet", "name": "kb-kb-5d8f7c9b4"},
        "type": "Normal",
        "reason": "SuccessfulCreate",
    }
    assert world([replica_set, created]) == {}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], True),
        ([Until("Kibana n/kb", "status.associationStatus", "Established")], True),
        ([Until("Kibana n/kb", "status.associationStatus", "Pending")], False),
        ([Until("Kibana n/kb", "status.health", "green")], False),
        ([Until("Kibana n/other", "status.associationStatus", "Established")], False),
    ],
)
def test_a_step_waits_for_a_field_of_an_object(conditions: list[Until], expected: bool) -> None:
    current = {"Kibana n/kb": {"status": {"associationStatus": "Established"}}}
    assert holds(current, conditions) is expected


def test_a_row_may_exclude_scenarios() -> None:
    """``!pattern`` in the scenario cell: the row is neither used nor stale there."""
    (row,) = parse_rows(
        "| scenario | object | field path | ECK | Stackflow | reason |\n"
        "|---|---|---|---|---|---|\n"
        "| *<br>!license-* | `StatefulSet */*` | `spec.x` | a | b | why |\n"
    )
    assert row.covers("one-node")
    assert not row.covers("license-basic")
    assert undocumented("license-basic", [], [row]) == ([], [])
    assert undocumented("one-node", [], [row]) == ([], [row])
