"""Table tests of the AutoOpsAgentPolicy controller row (stackflow.controllers.autoops)."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.controllers import CONTROLLERS, FlipStrategy, Gate, SelectionContext
from stackflow.controllers.autoops import (
    AUTOOPS_POLICY_CONTROLLER,
    ELASTICSEARCH,
    autoops_policy_owners,
    autoops_policy_references,
    autoops_policy_selects,
)
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS
from stackflow.stack.policies.autoops import api_key_secret_labels, cluster_object_labels


def _object(labels: dict[str, str], namespace: str = "ops") -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": "x", "labels": labels}}


LABELS = cluster_object_labels(
    policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
)


@pytest.mark.parametrize(
    ("child", "owners"),
    [
        (_object(LABELS), (NamespacedName("ops", "p"),)),
        (
            _object(
                api_key_secret_labels(
                    policy_namespace="ops", policy_name="p", es_namespace="prod", es_name="a"
                )
            ),
            (NamespacedName("ops", "p"),),
        ),
        # The labels name the policy's namespace, whatever the object's.
        (_object(LABELS, namespace="elsewhere"), (NamespacedName("ops", "p"),)),
        (_object({}), ()),
        (_object({"autoops.k8s.elastic.co/policy-name": "p"}), ()),
    ],
)
def test_an_agent_object_wakes_the_policy_its_labels_name(
    child: dict[str, Any], owners: tuple[NamespacedName, ...]
) -> None:
    assert autoops_policy_owners(child) == owners


@pytest.mark.parametrize(
    ("status", "references"),
    [
        (None, []),
        ({"phase": "Ready"}, []),
        (
            {
                "details": {
                    "prod/old": {"phase": "Skipped", "message": "too old"},
                    "dev/b": {"phase": "Error", "error": "boom"},
                    "nonsense": {"phase": "Error"},
                }
            },
            [
                ObjectKey.of(ELASTICSEARCH, namespace="dev", name="b"),
                ObjectKey.of(ELASTICSEARCH, namespace="prod", name="old"),
            ],
        ),
    ],
)
def test_the_policy_references_the_clusters_its_status_names(
    status: dict[str, Any] | None, references: list[ObjectKey]
) -> None:
    policy: dict[str, Any] = {"metadata": {"namespace": "ops", "name": "p"}}
    if status is not None:
        policy["status"] = status
    assert autoops_policy_references(policy) == references


def test_the_row() -> None:
    row = CONTROLLERS.named("autoopsagentpolicy")
    assert row is AUTOOPS_POLICY_CONTROLLER
    assert row.primary.kind == "AutoOpsAgentPolicy"
    assert row.gate is Gate.NONE
    assert row.flip is FlipStrategy.CONTROLLER
    assert row.local_step is False
    assert {watch.kind for watch in row.children} == {DEPLOYMENTS, CONFIGMAPS, SECRETS}
    assert {watch.label_selector for watch in row.children} == {
        "autoops.k8s.elastic.co/policy-name"
    }


def _policy(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": "ops", "name": "p"}, "spec": spec}


SELECT_ON = {"resourceSelector": {"matchLabels": {"autoops": "on"}}}


@pytest.mark.parametrize(
    ("policy", "cluster_labels", "namespace_labels", "selects"),
    [
        (_policy(SELECT_ON), {"autoops": "on"}, {}, True),
        (_policy(SELECT_ON), {"autoops": "off"}, {}, False),
        (_policy(SELECT_ON), {}, {}, False),
        # An empty resourceSelector picks every cluster, in any namespace.
        (_policy({}), {}, {}, True),
        (
            _policy({**SELECT_ON, "namespaceSelector": {"matchLabels": {"team": "a"}}}),
            {"autoops": "on"},
            {"team": "a"},
            True,
        ),
        (
            _policy({**SELECT_ON, "namespaceSelector": {"matchLabels": {"team": "a"}}}),
            {"autoops": "on"},
            {"team": "b"},
            False,
        ),
        # A selector the policy's reconcile cannot parse picks nothing (the policy reports it).
        (
            _policy({"resourceSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}),
            {"a": "1"},
            {},
            False,
        ),
    ],
)
def test_a_cluster_wakes_the_policies_whose_selectors_pick_it(
    policy: dict[str, Any],
    cluster_labels: dict[str, str],
    namespace_labels: dict[str, str],
    selects: bool,
) -> None:
    context = SelectionContext(
        operator_namespace="elastic-system", namespace_labels=namespace_labels
    )
    cluster = _object(cluster_labels, namespace="prod")
    assert autoops_policy_selects(policy, cluster, context) is selects


def test_the_row_selects_elasticsearch_clusters() -> None:
    (selection,) = AUTOOPS_POLICY_CONTROLLER.selections
    assert selection.kind == ELASTICSEARCH
    assert selection.selects is autoops_policy_selects


@pytest.mark.parametrize(
    ("spec", "references"),
    [
        ({}, []),
        (
            {"autoOpsRef": {"secretName": "conn"}, "configRef": {"secretName": "cfg"}},
            [
                ObjectKey.of(SECRETS, namespace="ops", name="conn"),
                ObjectKey.of(SECRETS, namespace="ops", name="cfg"),
            ],
        ),
        (
            {"autoOpsRef": {"secretName": "conn"}, "configRef": {"configMapName": "cfg"}},
            [
                ObjectKey.of(SECRETS, namespace="ops", name="conn"),
                ObjectKey.of(CONFIGMAPS, namespace="ops", name="cfg"),
            ],
        ),
    ],
)
def test_the_policy_references_its_connection_and_config_sources(
    spec: dict[str, Any], references: list[ObjectKey]
) -> None:
    policy = {"metadata": {"namespace": "ops", "name": "p"}, "spec": spec}
    assert autoops_policy_references(policy) == references
    assert {SECRETS, CONFIGMAPS} <= set(AUTOOPS_POLICY_CONTROLLER.reference_kinds)
