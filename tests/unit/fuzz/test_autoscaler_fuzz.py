"""Fuzzing an ElasticsearchAutoscaler past its validation: its policies' limits read.

The autoscaler reconcile validates the object, then reads each policy's limits
(``parse_policy_limits``, ``validate_policies``); what it cannot use is an
``AutoscalingSpecError`` (a ``ValueError`` with a message). Anything else is a crash.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given

from stackflow.stack.policies.autoscaling.spec import parse_policy_limits
from stackflow.stack.policies.autoscaling.validation import (
    validate_elasticsearch_autoscaler,
    validate_policies,
)
from tests.unit.fuzz.strategies import FUZZ_SETTINGS, objects_of

AUTOSCALERS = objects_of(
    "autoscaling.k8s.elastic.co",
    "elasticsearchautoscalers",
    "ElasticsearchAutoscaler",
    "v1alpha1",
    fuzz=False,
)


@FUZZ_SETTINGS
@given(AUTOSCALERS)
def test_any_valid_autoscaler_has_readable_limits_or_is_refused(autoscaler: dict[str, Any]) -> None:
    if validate_elasticsearch_autoscaler(autoscaler):
        return
    policies = autoscaler["spec"].get("policies") or []
    for message in validate_policies(policies):
        assert message.strip()
    for policy in policies:
        try:
            parse_policy_limits(policy)
        except ValueError as error:
            refusal = str(error)
        else:
            refusal = "read"
        assert refusal.strip()
