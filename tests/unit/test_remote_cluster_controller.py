"""The remote-cluster controller row: a second row over Elasticsearch, its CA-copy owners and
its references (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.controllers import CONTROLLERS, FlipStrategy, Gate
from stackflow.controllers.remoteclusters import (
    REMOTE_CLUSTER_CONTROLLER,
    declared_remotes,
    remote_ca_owners,
)
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName


def test_it_shares_the_elasticsearch_primary_with_its_own_workflows() -> None:
    same_kind = [c.name for c in CONTROLLERS if c.primary == REMOTE_CLUSTER_CONTROLLER.primary]
    refs = {
        CONTROLLERS.named(name).ref(namespace="ns", name="es").workflow_id for name in same_kind
    }

    assert same_kind == ["elasticsearch", "license", "remotecluster"]
    assert len(refs) == len(same_kind)
    assert (REMOTE_CLUSTER_CONTROLLER.gate, REMOTE_CLUSTER_CONTROLLER.flip) == (
        Gate.NONE,
        FlipStrategy.CONTROLLER,
    )
    assert [child.label_selector for child in REMOTE_CLUSTER_CONTROLLER.children] == [
        "common.k8s.elastic.co/type=remote-ca"
    ]


def _copy(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns-a", "name": "x", "labels": labels}}


_LABELS = {
    "common.k8s.elastic.co/type": "remote-ca",
    "elasticsearch.k8s.elastic.co/cluster-name": "a",
    "elasticsearch.k8s.elastic.co/remote-cluster-name": "b",
    "elasticsearch.k8s.elastic.co/remote-cluster-namespace": "ns-b",
}


@pytest.mark.parametrize(
    ("labels", "owners"),
    [
        pytest.param(
            _LABELS, (NamespacedName("ns-a", "a"), NamespacedName("ns-b", "b")), id="both-sides"
        ),
        pytest.param(
            {
                **_LABELS,
                "elasticsearch.k8s.elastic.co/remote-cluster-namespace": "ns-a",
                "elasticsearch.k8s.elastic.co/remote-cluster-name": "a",
            },
            (NamespacedName("ns-a", "a"),),
            id="itself-once",
        ),
        pytest.param({"common.k8s.elastic.co/type": "remote-ca"}, (), id="unlabelled"),
    ],
)
def test_a_remote_ca_copy_wakes_the_cluster_holding_it_and_the_peer(
    labels: dict[str, str], owners: tuple[NamespacedName, ...]
) -> None:
    assert remote_ca_owners(_copy(labels)) == owners


def test_references_are_the_declared_remotes_once_each() -> None:
    es = {
        "metadata": {"namespace": "ns-a", "name": "a"},
        "spec": {
            "remoteClusters": [
                {"name": "one", "elasticsearchRef": {"name": "b", "namespace": "ns-b"}},
                {"name": "two", "elasticsearchRef": {"name": "b", "namespace": "ns-b"}},
                {"name": "local", "elasticsearchRef": {"name": "c"}},
            ]
        },
    }
    es_kind = REMOTE_CLUSTER_CONTROLLER.primary

    assert declared_remotes(es) == [
        ObjectKey.of(es_kind, namespace="ns-b", name="b"),
        ObjectKey.of(es_kind, namespace="ns-a", name="c"),
    ]
