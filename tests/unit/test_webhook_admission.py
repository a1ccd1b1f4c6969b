"""ECK's validating webhooks as pure decisions: one row per webhook, the pre-check, bad bodies."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from stackflow.kube.decoding import MAX_OBJECT_DEPTH
from stackflow.webhooks.admission import WEBHOOKS, WEBHOOKS_BY_PATH, review, review_bytes

MANAGED = "managed"


def is_managed(namespace: str) -> bool:
    return namespace == MANAGED


def admission_review(
    obj: object, *, operation: str = "CREATE", namespace: str = MANAGED
) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "uid-1", "operation": operation, "namespace": namespace, "object": obj},
    }


def resource(kind: str, spec: dict[str, Any], *, name: str = "sample") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": MANAGED}, "spec": spec}


VALID_ES = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]}
LONG_NAME = "n" * 37
VALID_AUTOSCALER = {
    "elasticsearchRef": {"name": "es"},
    "policies": [{"name": "p", "roles": ["data"], "resources": {"nodeCount": {"max": 3}}}],
}
VALID_AUTOOPS = {
    "version": "9.2.1",
    "autoOpsRef": {"secretName": "autoops"},
    "resourceSelector": {"matchLabels": {"autoops": "on"}},
}

# (path, object, allowed, fragment of the denial message)
ROWS: list[tuple[str, dict[str, Any], bool, str]] = [
    (
        "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch",
        resource("Elasticsearch", VALID_ES),
        True,
        "",
    ),
    (
        "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch",
        resource("Elasticsearch", {**VALID_ES, "version": "7.0.0"}),
        False,
        'Elasticsearch.elasticsearch.k8s.elastic.co "sample" is invalid: '
        'spec.version: Invalid value: "7.0.0": unsupported version',
    ),
    (
        "/validate-elasticsearch-k8s-elastic-co-v1beta1-elasticsearch",
        resource("Elasticsearch", {"version": "8.15.0"}),
        False,
        "spec.nodeSets: Required value: at least one node set is required",
    ),
    (
        "/validate-kibana-k8s-elastic-co-v1-kibana",
        resource("Kibana", {"version": "8.15.0", "count": 1}),
        True,
        "",
    ),
    (
        "/validate-kibana-k8s-elastic-co-v1beta1-kibana",
        resource("Kibana", {"version": "8.15.0"}, name=LONG_NAME),
        False,
        f'metadata.name: Invalid value: "{LONG_NAME}": name exceeds maximum allowed length of 36',
    ),
    (
        "/validate-apm-k8s-elastic-co-v1-apmserver",
        resource(
            "ApmServer", {"version": "8.15.0", "config": {"a": 1}, "configRef": {"secretName": "s"}}
        ),
        False,
        "Specify at most one of [config, configRef], not both",
    ),
    (
        "/validate-apm-k8s-elastic-co-v1beta1-apmserver",
        resource("ApmServer", {"version": "8.15.0"}),
        True,
        "",
    ),
    (
        "/validate-enterprisesearch-k8s-elastic-co-v1-enterprisesearch",
        resource("EnterpriseSearch", {"version": "9.0.0"}),
        False,
        "spec.version",
    ),
    (
        "/validate-enterprisesearch-k8s-elastic-co-v1beta1-enterprisesearch",
        resource("EnterpriseSearch", {"version": "8.15.0"}),
        True,
        "",
    ),
    (
        "/validate-beat-k8s-elastic-co-v1beta1-beat",
        resource(
            "Beat",
            {"version": "8.15.0", "type": "filebeat", "daemonSet": {}, "deployment": {}},
        ),
        False,
        "Specify either daemonSet or deployment, not both",
    ),
    (
        "/validate-agent-k8s-elastic-co-v1alpha1-agent",
        resource(
            "Agent", {"version": "8.15.0", "mode": "fleet", "config": {"a": 1}, "deployment": {}}
        ),
        False,
        "remove config, it can't be set in the fleet mode",
    ),
    (
        "/validate-logstash-k8s-elastic-co-v1alpha1-logstash",
        resource("Logstash", {"version": "8.0.0"}),
        False,
        'spec.version: Invalid value: "8.0.0"',
    ),
    (
        "/validate-ems-k8s-elastic-co-v1alpha1-mapsservers",
        resource(
            "ElasticMapsServer",
            {"version": "8.15.0", "elasticsearchRef": {"name": "a", "secretName": "b"}},
        ),
        False,
        "specify name or secretName, not both",
    ),
    (
        "/validate-epr-k8s-elastic-co-v1alpha1-packageregistry",
        resource("PackageRegistry", {"version": "8.15.0"}),
        True,
        "",
    ),
    (
        "/validate-autoscaling-k8s-elastic-co-v1alpha1-elasticsearchautoscaler",
        resource("ElasticsearchAutoscaler", VALID_AUTOSCALER),
        True,
        "",
    ),
    (
        "/validate-autoscaling-k8s-elastic-co-v1alpha1-elasticsearchautoscaler",
        resource(
            "ElasticsearchAutoscaler",
            {**VALID_AUTOSCALER, "policies": [{"name": "p", "roles": ["data"]}]},
        ),
        False,
        'ElasticsearchAutoscaler.autoscaling.k8s.elastic.co "sample" is invalid: '
        "spec.policies[0].resources.nodeCount.max: Required value: max node count is required",
    ),
    (
        "/validate-scp-k8s-elastic-co-v1alpha1-stackconfigpolicies",
        resource("StackConfigPolicy", {"kibana": {"config": {"a": 1}}}),
        True,
        "",
    ),
    (
        "/validate-scp-k8s-elastic-co-v1alpha1-stackconfigpolicies",
        resource("StackConfigPolicy", {}),
        False,
        'StackConfigPolicy.stackconfigpolicy.k8s.elastic.co "sample" is invalid: spec: Required '
        "value: One out of Elasticsearch or Kibana settings is mandatory, both must not be empty",
    ),
    (
        "/validate-autoops-k8s-elastic-co-v1alpha1-autoopsagentpolicies",
        resource("AutoOpsAgentPolicy", VALID_AUTOOPS),
        True,
        "",
    ),
    (
        "/validate-autoops-k8s-elastic-co-v1alpha1-autoopsagentpolicies",
        resource("AutoOpsAgentPolicy", {**VALID_AUTOOPS, "version": "9.1.0"}),
        False,
        'AutoOpsAgentPolicy.autoops.k8s.elastic.co "sample" is invalid: spec.version: Invalid '
        'value: "9.1.0": unsupported version: version 9.1.0 is lower than the lowest supported '
        "version of 9.2.1",
    ),
]


def test_every_webhook_has_a_row() -> None:
    assert {path for path, *_ in ROWS} == set(WEBHOOKS_BY_PATH)
    assert len(WEBHOOKS_BY_PATH) == len(WEBHOOKS) == 16


@pytest.mark.parametrize(("path", "obj", "is_allowed", "message"), ROWS)
def test_rules_per_kind(path: str, obj: dict[str, Any], is_allowed: bool, message: str) -> None:
    answer = review(path, admission_review(obj), is_managed)
    response = answer.body["response"]
    assert answer.status == 200
    assert response["uid"] == "uid-1"
    assert response["allowed"] is is_allowed
    if not is_allowed:
        assert response["status"]["code"] == 403
        assert message in response["status"]["message"]


@pytest.mark.parametrize(("path", "obj", "is_allowed", "message"), [r for r in ROWS if not r[2]])
def test_unmanaged_namespaces_are_allowed_untouched(
    path: str, obj: dict[str, Any], is_allowed: bool, message: str
) -> None:
    answer = review(path, admission_review(obj, namespace="elsewhere"), is_managed)
    assert answer.body["response"] == {"uid": "uid-1", "allowed": True}


def test_the_namespace_falls_back_to_the_object() -> None:
    path, obj, *_ = ROWS[1]
    body = admission_review(obj)
    del body["request"]["namespace"]
    assert review(path, body, is_managed).body["response"]["allowed"] is False


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT"])
def test_only_create_and_update_are_validated(operation: str) -> None:
    path, obj, *_ = ROWS[1]
    answer = review(path, admission_review(obj, operation=operation), is_managed)
    assert answer.body["response"]["allowed"] is True


def test_update_is_validated() -> None:
    path, obj, *_ = ROWS[1]
    answer = review(path, admission_review(obj, operation="UPDATE"), is_managed)
    assert answer.body["response"]["allowed"] is False


def test_several_problems_are_listed_together() -> None:
    obj = resource("Elasticsearch", {"version": "7.0.0"}, name=LONG_NAME)
    message = review(ROWS[0][0], admission_review(obj), is_managed).body["response"]["status"][
        "message"
    ]
    assert message.startswith(
        f'Elasticsearch.elasticsearch.k8s.elastic.co "{LONG_NAME}" is invalid: ['
    )
    assert message.count("Invalid value") + message.count("Required value") == 3


def test_agent_fleet_without_policy_is_allowed_with_a_warning() -> None:
    obj = resource("Agent", {"version": "8.15.0", "mode": "fleet", "deployment": {}})
    response = review(
        "/validate-agent-k8s-elastic-co-v1alpha1-agent", admission_review(obj), is_managed
    ).body["response"]
    assert response["allowed"] is True
    assert response["warnings"][0].startswith("spec.policyID: ")


ES_PATH = ROWS[0][0]

MALFORMED: list[tuple[str, bytes, str]] = [
    (ES_PATH, b"{not json", "the body is not JSON"),
    (ES_PATH, b"[]", "the body is not a JSON object"),
    (ES_PATH, json.dumps({"kind": "AdmissionReview"}).encode(), "expected an AdmissionReview"),
    (
        ES_PATH,
        json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
        "has no request",
    ),
    (
        ES_PATH,
        json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}
        ).encode(),
        "has no uid",
    ),
    (
        ES_PATH,
        json.dumps(admission_review("not an object")).encode(),
        "has no object",
    ),
    (
        ES_PATH,
        json.dumps(admission_review(resource("Kibana", {}))).encode(),
        "validates Elasticsearch, not 'Kibana'",
    ),
    (
        "/validate-nothing",
        json.dumps(admission_review(ROWS[0][1])).encode(),
        "no validating webhook",
    ),
    (ES_PATH, b"\xff\xfe", "the body is not JSON"),
]


@pytest.mark.parametrize(("path", "raw", "message"), MALFORMED)
def test_malformed_bodies_are_a_400_review(path: str, raw: bytes, message: str) -> None:
    answer = review_bytes(path, raw, is_managed)
    assert answer.status == 400
    assert answer.body["apiVersion"] == "admission.k8s.io/v1"
    assert answer.body["kind"] == "AdmissionReview"
    assert answer.body["response"]["allowed"] is False
    assert answer.body["response"]["status"]["code"] == 400
    assert message in answer.body["response"]["status"]["message"]


def test_webhook_names_are_ecks() -> None:
    names = {webhook.name for webhook in WEBHOOKS}
    assert "elastic-es-validation-v1.k8s.elastic.co" in names
    assert "elastic-kb-validation-v1beta1.k8s.elastic.co" in names


ES_PATH = "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch"
TOO_DEEP = (
    'Elasticsearch.elasticsearch.k8s.elastic.co "sample" is invalid: '
    f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep"
)


def deep_review_bytes(depth: int) -> bytes:
    """An AdmissionReview of an Elasticsearch whose config nests ``depth`` levels (written out:
    json.dumps would recurse)."""
    spec = {**VALID_ES, "nodeSets": [{"name": "default", "count": 1, "config": "__CONFIG__"}]}
    text = json.dumps(admission_review(resource("Elasticsearch", spec)))
    return text.replace('"__CONFIG__"', '{"a":' * depth + "1" + "}" * depth).encode()


@pytest.mark.parametrize("depth", [MAX_OBJECT_DEPTH + 10, 1500, 20000])
def test_an_object_nested_too_deep_is_denied_naming_the_field(depth: int) -> None:
    answer = review_bytes(ES_PATH, deep_review_bytes(depth), is_managed)
    assert answer.status == 200
    assert answer.body["response"]["allowed"] is False
    assert answer.body["response"]["uid"] == "uid-1"
    assert answer.body["response"]["status"]["message"] == TOO_DEEP


def test_an_object_just_within_the_depth_limit_is_judged_by_the_rules() -> None:
    # object(1) > status(2) > ... > the innermost map (MAX_OBJECT_DEPTH): exactly the limit.
    deep_status: dict[str, Any] = {"leaf": True}
    for _ in range(MAX_OBJECT_DEPTH - 2):
        deep_status = {"a": deep_status}
    obj = {**resource("Elasticsearch", VALID_ES), "status": deep_status}
    answer = review(ES_PATH, admission_review(obj), is_managed)
    assert answer.body["response"]["allowed"] is True
    answer = review(ES_PATH, admission_review({**obj, "status": {"a": deep_status}}), is_managed)
    assert answer.body["response"]["status"]["message"].endswith(
        f"is invalid: status.a.a.a: nested more than {MAX_OBJECT_DEPTH} levels deep"
    )


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"kind": "Elasticsearch", "metadata": "sample", "spec": VALID_ES},
            "metadata: Invalid value: str: must be an object",
        ),
        (
            {"kind": "Elasticsearch", "metadata": {"name": "sample"}, "spec": ["x"]},
            "spec: Invalid value: list: must be an object",
        ),
        (
            {"kind": "Elasticsearch", "metadata": {"name": "sample"}, "status": 3},
            "status: Invalid value: int: must be an object",
        ),
    ],
)
def test_a_wrong_shaped_object_is_denied_naming_the_field(obj: object, message: str) -> None:
    answer = review(ES_PATH, admission_review(obj), is_managed)
    assert answer.status == 200
    assert answer.body["response"]["allowed"] is False
    assert answer.body["response"]["status"]["message"].endswith(f"is invalid: {message}")


def test_a_rule_that_fails_denies_the_object_instead_of_failing_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def tripping(_kind: str, obj: Any) -> list[tuple[str, str]]:
        return [("spec.x", obj["spec"]["nodeSets"]["missing"])]

    webhook = WEBHOOKS_BY_PATH[ES_PATH]
    monkeypatch.setitem(WEBHOOKS_BY_PATH, ES_PATH, dataclasses.replace(webhook, rules=tripping))
    answer = review(ES_PATH, admission_review(resource("Elasticsearch", VALID_ES)), is_managed)
    assert answer.status == 200
    assert answer.body["response"]["allowed"] is False
    message = answer.body["response"]["status"]["message"]
    assert "spec: Invalid value: the object cannot be validated (TypeError" in message
