"""Fuzzing a StackConfigPolicy past its validation: parsed, its variables substituted, merged.

The policy reconcile validates the object, parses it (substituting ``spec.variablesFrom``'s
values) and merges every policy that targets a cluster or a Kibana. Validation refuses what it
knows; the parse may refuse a selector (``SelectorError``) and the merge a conflict
(``MergeConflictError``), both ``ValueError`` with a message. Anything else is a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stackflow.stack.policies.stack_config.merge import merge_elasticsearch, merge_kibana
from stackflow.stack.policies.stack_config.policy import Policy, parse_policy
from stackflow.stack.policies.validation import validate_stack_config_policy
from tests.unit.fuzz.strategies import FUZZ_SETTINGS, HOSTILE_STRINGS, objects_of

POLICIES = objects_of(
    "stackconfigpolicy.k8s.elastic.co",
    "stackconfigpolicies",
    "StackConfigPolicy",
    "v1alpha1",
    fuzz=False,
)
#: The values of ``spec.variablesFrom``'s Secrets: names the settings may use as ``${name}``.
VARIABLES = st.dictionaries(
    st.sampled_from(["a", "b", "host", "port"]), HOSTILE_STRINGS, max_size=3
)


def parsed_or_refused(obj: Mapping[str, Any], variables: Mapping[str, str]) -> Policy | None:
    """The policy the reconcile would merge, or None when it refuses the object (with a message)."""
    if validate_stack_config_policy(obj):
        return None
    try:
        return parse_policy(obj, variables)
    except ValueError as error:
        refusal = str(error)
    assert refusal.strip()
    return None


def merged_or_refused(policies: list[Policy]) -> None:
    """Both merges of ``policies`` end as settings or as a conflict with a message."""
    for merge in (merge_elasticsearch, merge_kibana):
        try:
            merge(policies)
        except ValueError as error:
            refusal = str(error)
        else:
            refusal = "merged"
        assert refusal.strip()


@FUZZ_SETTINGS
@given(st.lists(POLICIES, min_size=1, max_size=2), VARIABLES)
def test_any_valid_policy_parses_and_merges_or_is_refused(
    objects: list[dict[str, Any]], variables: dict[str, str]
) -> None:
    policies = [
        policy for obj in objects if (policy := parsed_or_refused(obj, variables)) is not None
    ]
    if policies:
        merged_or_refused(policies)
