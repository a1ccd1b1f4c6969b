"""Admission webhooks (reference §8): matching tables and calls against a real HTTPS webhook server."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.admission_match import (
    WebhookCallError,
    denial_error,
    label_selector_matches,
    read_verdict,
    rule_matches,
    webhook_applies,
)
from tests.kubesim.admission_requests import CONFIG_MAP, admission_request


def _rule(**changes: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "operations": ["CREATE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["configmaps"],
    }
    rule.update(changes)
    return rule


# ---------------------------------------------------------------- pure matching


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {}, True),
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
    ],
)
def test_label_selector(
    selector: dict[str, Any] | None, labels: dict[str, str], expected: bool
) -> None:
    assert label_selector_matches(selector, labels) is expected


@pytest.mark.parametrize(
    ("rule", "request_changes", "expected"),
    [
        (_rule(), {}, True),
        (_rule(operations=["*"]), {"operation": "DELETE"}, True),
        (_rule(operations=["UPDATE"]), {}, False),
        (_rule(apiGroups=["*"], apiVersions=["*"]), {"group": "apps"}, True),
        (_rule(apiGroups=["apps"]), {}, False),
        (_rule(resources=["*"]), {}, True),
        (_rule(resources=["*"]), {"subresource": "status"}, False),
        (_rule(resources=["*/*"]), {"subresource": "status"}, True),
        (_rule(resources=["configmaps/status"]), {"subresource": "status"}, True),
        (_rule(resources=["configmaps/status"]), {}, False),
        (_rule(resources=["*/scale"]), {"subresource": "scale"}, True),
        (_rule(resources=["*/scale"]), {"subresource": "status"}, False),
        (_rule(resources=["secrets"]), {}, False),
        (_rule(scope="Namespaced"), {}, True),
        (_rule(scope="Cluster"), {}, False),
        (_rule(scope="Cluster"), {"namespaced": False}, True),
        (_rule(scope="*"), {"namespaced": False}, True),
    ],
)
def test_rule_matching(
    rule: dict[str, Any], request_changes: dict[str, Any], expected: bool
) -> None:
    assert rule_matches(rule, admission_request(**request_changes), exact=False) is expected


@pytest.mark.parametrize(("match_policy", "expected"), [("Exact", False), ("Equivalent", True)])
def test_match_policy_versions(match_policy: str, expected: bool) -> None:
    webhook = {"rules": [_rule(apiVersions=["v2"])], "matchPolicy": match_policy}
    assert webhook_applies(webhook, admission_request()) is expected


NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "ns", "labels": {"env": "dev"}},
}
prod_only = {"matchLabels": {"env": "prod"}}


@pytest.mark.parametrize(
    ("extra", "request_changes", "expected"),
    [
        ({"namespaceSelector": prod_only}, {}, True),
        ({"namespaceSelector": prod_only}, {"namespace_labels": {"env": "dev"}}, False),
        # Cluster-scoped objects other than Namespaces are never exempted by a namespaceSelector.
        (
            {"namespaceSelector": prod_only},
            {"namespaced": False, "namespace": "", "namespace_labels": None},
            True,
        ),
        # A Namespace is selected on its own labels.
        (
            {"namespaceSelector": prod_only},
            {
                "namespaced": False,
                "plural": "namespaces",
                "kind": "Namespace",
                "obj": NAMESPACE,
                "namespace_labels": {"env": "dev"},
            },
            False,
        ),
        ({"objectSelector": {"matchLabels": {"app": "web"}}}, {}, True),
        ({"objectSelector": {"matchLabels": {"app": "db"}}}, {}, False),
        # New or old object matching is enough.
        (
            {"objectSelector": {"matchLabels": {"app": "db"}}},
            {"operation": "UPDATE", "old_obj": {"metadata": {"labels": {"app": "db"}}}},
            True,
        ),
        (
            {"objectSelector": {"matchLabels": {"app": "web"}}},
            {"operation": "DELETE", "obj": None, "old_obj": CONFIG_MAP},
            True,
        ),
        ({"objectSelector": {}}, {"operation": "DELETE", "obj": None, "old_obj": None}, True),
        ({"matchConditions": [{"name": "never", "expression": "false"}]}, {}, True),
        # admissionregistration objects are never sent to webhooks.
        (
            {},
            {"group": "admissionregistration.k8s.io", "plural": "validatingwebhookconfigurations"},
            False,
        ),
    ],
)
def test_webhook_applies(
    extra: dict[str, Any], request_changes: dict[str, Any], expected: bool
) -> None:
    rule = _rule(apiGroups=["*"], apiVersions=["*"], resources=["*"], operations=["*"])
    webhook = {"name": "w.example.com", "rules": [rule], **extra}
    assert webhook_applies(webhook, admission_request(**request_changes)) is expected


@pytest.mark.parametrize(
    ("body", "mutating", "why"),
    [
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
            False,
            "webhook response was absent",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": "other", "allowed": True},
            },
            False,
            'expected response.uid="u1", got "other"',
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1beta1",
                "kind": "AdmissionReview",
                "response": {"uid": "u1", "allowed": True},
            },
            False,
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": "u1",
                    "allowed": True,
                    "patchType": "JSONPatch",
                    "patch": "W10=",
                },
            },
            False,
            "validating webhook may not return response.patch",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": "u1", "allowed": True, "patch": "W10="},
            },
            True,
            "webhook returned response.patch but not response.patchType",
        ),
    ],
)
def test_bad_answers_are_call_failures(body: dict[str, Any], mutating: bool, why: str) -> None:
    with pytest.raises(WebhookCallError) as raised:
        read_verdict(body, uid="u1", mutating=mutating)
    assert raised.value.reason == f"received invalid webhook response: {why}"


@pytest.mark.parametrize(
    ("status", "code", "reason", "message"),
    [
        (
            {"code": 403, "reason": "Forbidden", "message": "nope"},
            403,
            "Forbidden",
            'admission webhook "w" denied the request: nope',
        ),
        (
            {"code": 200, "message": "nope"},
            400,
            "",
            'admission webhook "w" denied the request: nope',
        ),
        (
            {"reason": "NotAllowed"},
            400,
            "NotAllowed",
            'admission webhook "w" denied the request: NotAllowed',
        ),
        ({}, 400, "", 'admission webhook "w" denied the request without explanation'),
    ],
)
def test_denial_mapping(status: dict[str, Any], code: int, reason: str, message: str) -> None:
    error = denial_error("w", status)
    assert (error.code, error.reason, error.message) == (code, reason, message)
    assert error.to_status()["status"] == "Failure"
