"""Association status fields per kind: single values, ns/name maps, Kibana's deprecated mirror."""

from __future__ import annotations

from typing import Any

import pytest

from activities.associations import confs_before_status
from stackflow.stack.associations.refs import AssociationRef
from stackflow.stack.associations.status import (
    StatusError,
    all_established,
    apply_status,
    current_statuses,
    describe,
    needs_requeue,
    status_map,
)
from stackflow.stack.associations.table import association_named

REF_A = AssociationRef(
    association="agent-es", target_kind="Elasticsearch", namespace="a", name="es1"
)
REF_B = AssociationRef(
    association="agent-es", target_kind="Elasticsearch", namespace="b", name="es2"
)


@pytest.mark.parametrize(
    ("association", "statuses", "before", "after"),
    [
        ("kb-es", {"a/es1": "Established"}, {"health": "green"},
         {"health": "green", "elasticsearchAssociationStatus": "Established", "associationStatus": "Established"}),
        ("kb-ent", {"a/ent": "Pending"}, {}, {"enterpriseSearchAssociationStatus": "Pending"}),
        ("ent-es", {"a/es": "Failed"}, {}, {"associationStatus": "Failed"}),
        ("agent-fleetserver", {"a/fs": "Established"}, {}, {"fleetServerAssociationStatus": "Established"}),
        ("agent-es", {"a/es1": "Established", "b/es2": "Pending"}, {},
         {"elasticsearchAssociationsStatus": {"a/es1": "Established", "b/es2": "Pending"}}),
        ("kb-es", {}, {"elasticsearchAssociationStatus": "Established", "associationStatus": "Established"}, {}),
        ("logstash-es", {}, {"elasticsearchAssociationsStatus": {"a/x": "Pending"}}, {}),
    ],
)  # fmt: skip
def test_apply_status(
    association: str, statuses: dict[str, Any], before: dict[str, Any], after: dict[str, Any]
) -> None:
    row = association_named(association)
    assert apply_status(before, row, statuses) == after


def test_single_ref_rejects_several_statuses() -> None:
    with pytest.raises(StatusError):
        apply_status({}, association_named("kb-es"), {"a/x": "Pending", "b/y": "Pending"})


def test_status_map_and_read_back() -> None:
    statuses = status_map([(REF_A, "Established"), (REF_B, "Pending")])
    assert statuses == {"a/es1": "Established", "b/es2": "Pending"}
    status = apply_status(None, association_named("agent-es"), statuses)
    assert current_statuses(status, association_named("agent-es")) == statuses
    single = apply_status(None, association_named("beat-es"), {"a/es1": "Established"})
    assert current_statuses(single, association_named("beat-es")) == {"": "Established"}
    assert current_statuses(None, association_named("beat-es")) == {}


@pytest.mark.parametrize(
    ("statuses", "established", "requeue", "text"),
    [
        ({}, True, False, ""),
        ({"": "Established"}, True, False, "Established"),
        ({"b/y": "Pending", "a/x": "Established"}, False, True, "a/x: Established, b/y: Pending"),
        ({"a/x": "Failed"}, False, False, "a/x: Failed"),
    ],
)
def test_summaries(statuses: dict[str, Any], established: bool, requeue: bool, text: str) -> None:
    assert all_established(statuses) is established
    assert needs_requeue(statuses) is requeue
    assert describe(statuses) == text


@pytest.mark.parametrize(
    ("patch", "first"),
    [
        pytest.param({}, False, id="nothing-to-write"),
        pytest.param({"association.k8s.elastic.co/es-conf": None}, False, id="conf-removed"),
        pytest.param({"association.k8s.elastic.co/es-conf": "{}"}, True, id="conf-set"),
        pytest.param(
            {"association.k8s.elastic.co/es-conf": "{}", "stale-conf": None},
            True,
            id="set-and-removed",
        ),
    ],
)
def test_a_ref_reads_established_only_once_its_conf_is_written(
    patch: dict[str, str | None], first: bool
) -> None:
    assert confs_before_status(patch) is first
