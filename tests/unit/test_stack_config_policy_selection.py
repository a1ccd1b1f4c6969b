"""Which StackConfigPolicies a change to an Elasticsearch or Kibana wakes (the row's selection
watch): the policies that target it by namespace rule and ``resourceSelector``."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.controllers import SelectionContext
from stackflow.controllers.stackconfigpolicy import (
    STACK_CONFIG_POLICY_CONTROLLER,
    policy_selects,
)

OPERATOR_NAMESPACE = "elastic-system"
CONTEXT = SelectionContext(operator_namespace=OPERATOR_NAMESPACE, namespace_labels={})


def _policy(namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": "p"}, "spec": spec}


def _target(kind: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": "t", "labels": labels}}


ON = {"resourceSelector": {"matchLabels": {"policy": "on"}}}


@pytest.mark.parametrize(
    ("policy", "target", "selects"),
    [
        # The operator namespace's policy targets any namespace; another only its own.
        (_policy(OPERATOR_NAMESPACE, ON), _target("Elasticsearch", "a", {"policy": "on"}), True),
        (_policy("a", ON), _target("Elasticsearch", "a", {"policy": "on"}), True),
        (_policy("b", ON), _target("Elasticsearch", "a", {"policy": "on"}), False),
        (_policy(OPERATOR_NAMESPACE, ON), _target("Kibana", "a", {"policy": "on"}), True),
        (_policy(OPERATOR_NAMESPACE, ON), _target("Elasticsearch", "a", {}), False),
        # No selector: every resource the namespace rule allows.
        (_policy("a", {}), _target("Kibana", "a", {}), True),
        # A policy its reconcile cannot read picks nothing: the policy reports its own error.
        (
            _policy("a", {"resourceSelector": {"matchLabels": {"bad key!": "x"}}}),
            _target("Elasticsearch", "a", {}),
            False,
        ),
        (_policy("a", {"weight": "heavy"}), _target("Elasticsearch", "a", {}), False),
    ],
)
def test_a_resource_wakes_the_policies_that_target_it(
    policy: dict[str, Any], target: dict[str, Any], selects: bool
) -> None:
    assert policy_selects(policy, target, CONTEXT) is selects


def test_the_row_selects_elasticsearch_and_kibana() -> None:
    kinds = sorted(selection.kind.kind for selection in STACK_CONFIG_POLICY_CONTROLLER.selections)
    assert kinds == ["Elasticsearch", "Kibana"]
