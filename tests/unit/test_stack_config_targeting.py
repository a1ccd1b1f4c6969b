"""Which policies target an Elasticsearch or a Kibana (the resourceSelector and the policy's
namespace), and their merge order by weight."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.scope.selector import SelectorError
from stackflow.stack.policies.stack_config.merge import MergeConflictError
from stackflow.stack.policies.stack_config.policy import Policy, parse_policy, selector_problem
from stackflow.stack.policies.stack_config.targeting import Target, policies_for, targets
from tests.unit.stack_config_policies import OPERATOR, policy, policy_obj

ES_A = Target("elasticsearch", "team-a", "es", {"env": "prod"})

# (policy namespace, selector, target, targets?)
TARGETING: list[tuple[str, dict[str, Any], Target, bool]] = [
    (OPERATOR, {}, ES_A, True),
    ("team-a", {}, ES_A, True),
    ("team-b", {}, ES_A, False),
    (OPERATOR, {"matchLabels": {"env": "prod"}}, ES_A, True),
    (OPERATOR, {"matchLabels": {"env": "dev"}}, ES_A, False),
    (
        "team-a",
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "qa"]}]},
        ES_A,
        True,
    ),
    ("team-a", {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, ES_A, False),
]


@pytest.mark.parametrize(("namespace", "selector", "target", "expected"), TARGETING)
def test_targeting(
    namespace: str, selector: dict[str, Any], target: Target, expected: bool
) -> None:
    subject = policy(namespace, "p", resourceSelector=selector)
    assert targets(subject, target, operator_namespace=OPERATOR) is expected


def test_an_unusable_selector_is_named() -> None:
    obj = policy_obj("ns", "p", {"resourceSelector": {"matchLabels": {"bad key!": "x"}}})
    with pytest.raises(SelectorError):
        parse_policy(obj)
    assert selector_problem(obj) is not None
    assert selector_problem(policy_obj("ns", "p", {})) is None


# (policies, names in merge order, or the conflict message)
ORDERING: list[tuple[list[Policy], list[str] | str]] = [
    ([], []),
    ([policy(OPERATOR, "low", 10), policy("team-a", "high", 100)], ["low", "high"]),
    ([policy("team-a", "high", 100), policy(OPERATOR, "low", 10)], ["low", "high"]),
    # A policy of another namespace does not target the cluster, so it cannot conflict.
    ([policy("team-b", "other", 0), policy("team-a", "mine", 0)], ["mine"]),
    (
        [policy(OPERATOR, "one", 5), policy("team-a", "two", 5)],
        'merge conflict: policies "team-a/two" and "elastic-system/one" have the same weight 5',
    ),
    (
        [policy(OPERATOR, "a"), policy(OPERATOR, "b")],
        'merge conflict: policies "elastic-system/b" and "elastic-system/a" have the same weight 0',
    ),
]


@pytest.mark.parametrize(("policies", "expected"), ORDERING)
def test_policies_by_weight(policies: list[Policy], expected: list[str] | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(MergeConflictError) as raised:
            policies_for(ES_A, policies, operator_namespace=OPERATOR)
        assert str(raised.value) == expected
        return
    ordered = policies_for(ES_A, policies, operator_namespace=OPERATOR)
    assert [p.name for p in ordered] == expected
