"""The RBAC authorizer behind kubesim's SubjectAccessReviews, decided as the real API server does."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.rbac import (
    Attributes,
    Decision,
    Policy,
    aggregated_rules,
    answered_review,
    authorize,
    review_error,
    rule_allows,
    unknown_spec_fields,
)

SA = "system:serviceaccount:src:reader"


def role(namespace: str, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name}, "rules": list(rules)}


def cluster_role(name: str, *rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, **extra.pop("metadata", {})}, "rules": list(rules), **extra}


def binding(
    name: str, ref_kind: str, ref_name: str, *subjects: dict[str, Any], namespace: str = ""
) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name},
        "subjects": list(subjects),
    }


def account(name: str, namespace: str = "") -> dict[str, Any]:
    subject = {"kind": "ServiceAccount", "name": name}
    return {**subject, "namespace": namespace} if namespace else subject


def rule(
    verbs: list[str],
    resources: list[str],
    groups: tuple[str, ...] = ("",),
    names: tuple[str, ...] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiGroups": list(groups), "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = list(names)
    return out


def get(resource: str, *, namespace: str = "dst", name: str = "", **more: str) -> Attributes:
    return Attributes(
        user=SA, verb="get", namespace=namespace, resource=resource, name=name, **more
    )


READ_SECRET = role("dst", "read", rule(["get"], ["secrets"], names=("s1",)))
POLICY = Policy(
    roles=[READ_SECRET, role("dst", "all", rule(["*"], ["*"], groups=("*",)))],
    cluster_roles=[
        cluster_role(
            "view-es", rule(["get", "list"], ["elasticsearches"], ("elasticsearch.k8s.elastic.co",))
        ),
        cluster_role("status", rule(["patch"], ["*/status"], ("*",))),
        cluster_role("metrics", {"nonResourceURLs": ["/metrics", "/healthz/*"], "verbs": ["get"]}),
    ],
    role_bindings=[
        binding(
            "rb",
            "Role",
            "read",
            {"kind": "User", "name": "x"},
            account("reader", "src"),
            namespace="dst",
        ),
        binding("rb-local", "ClusterRole", "view-es", account("local"), namespace="dst"),
        binding("rb-missing", "Role", "gone", {"kind": "User", "name": "ghost"}, namespace="dst"),
    ],
    cluster_role_bindings=[
        binding("crb-group", "ClusterRole", "status", {"kind": "Group", "name": "ops"}),
        binding("crb-metrics", "ClusterRole", "metrics", {"kind": "User", "name": "prom"}),
        binding("crb-nons", "ClusterRole", "view-es", account("reader")),
        binding("crb-missing", "ClusterRole", "nope", {"kind": "User", "name": "ghost"}),
    ],
)


@pytest.mark.parametrize(
    ("attributes", "decision"),
    [
        pytest.param(
            get("secrets", name="s1"),
            Decision(
                True,
                'RBAC: allowed by RoleBinding "rb/dst" of Role "read" to ServiceAccount "reader/src"',
            ),
            id="RoleBinding to a ServiceAccount of another namespace",
        ),
        pytest.param(get("secrets", name="s2"), Decision(False), id="resourceNames restrict"),
        pytest.param(get("secrets"), Decision(False), id="resourceNames need a name"),
        pytest.param(
            get("secrets", namespace="src", name="s1"), Decision(False), id="other namespace"
        ),
        pytest.param(
            get("secrets", namespace="", name="s1"), Decision(False), id="cluster-wide request"
        ),
        pytest.param(
            Attributes(user=SA, verb="list", namespace="dst", resource="secrets", name="s1"),
            Decision(False),
            id="verb not granted",
        ),
        pytest.param(
            Attributes(
                user="system:serviceaccount:dst:local",
                verb="get",
                namespace="dst",
                api_group="elasticsearch.k8s.elastic.co",
                resource="elasticsearches",
                name="es",
            ),
            Decision(
                True,
                'RBAC: allowed by RoleBinding "rb-local/dst" of ClusterRole "view-es" to ServiceAccount "local/dst"',
            ),
            id="RoleBinding to a ClusterRole, subject namespace defaults to the binding's",
        ),
        pytest.param(
            Attributes(
                user="system:serviceaccount:other:local",
                verb="get",
                namespace="dst",
                api_group="elasticsearch.k8s.elastic.co",
                resource="elasticsearches",
            ),
            Decision(False),
            id="same ServiceAccount name in another namespace",
        ),
        pytest.param(
            Attributes(
                user=SA,
                verb="get",
                namespace="dst",
                api_group="elasticsearch.k8s.elastic.co",
                resource="elasticsearches",
            ),
            Decision(False),
            id="ServiceAccount subject without namespace in a ClusterRoleBinding is nobody",
        ),
        pytest.param(
            Attributes(
                user="u",
                groups=("ops",),
                verb="patch",
                api_group="apps",
                resource="deployments",
                subresource="status",
            ),
            Decision(
                True,
                'RBAC: allowed by ClusterRoleBinding "crb-group" of ClusterRole "status" to Group "ops"',
            ),
            id="ClusterRoleBinding to a group, */subresource",
        ),
        pytest.param(
            Attributes(
                user="u", groups=("ops",), verb="patch", api_group="apps", resource="deployments"
            ),
            Decision(False),
            id="*/status is not the resource itself",
        ),
        pytest.param(
            Attributes(
                user="ops",
                verb="patch",
                api_group="apps",
                resource="deployments",
                subresource="status",
            ),
            Decision(False),
            id="a user named like a group is not in it",
        ),
        pytest.param(
            Attributes(
                user=SA,
                groups=("system:serviceaccounts", "system:authenticated"),
                verb="patch",
                resource="pods",
                subresource="status",
            ),
            Decision(False),
            id="groups are only those the review lists",
        ),
        pytest.param(
            Attributes(user="someone", groups=("system:masters",), verb="delete", resource="nodes"),
            Decision(True),
            id="system:masters is allowed before RBAC, with no reason",
        ),
        pytest.param(
            Attributes(
                user=SA,
                verb="delete",
                namespace="dst",
                api_group="apps",
                resource="deployments",
                subresource="scale",
            ),
            Decision(False),
            id="a role nobody binds grants nothing",
        ),
        pytest.param(
            Attributes(user="prom", resource_request=False, verb="get", path="/healthz/ready"),
            Decision(
                True,
                'RBAC: allowed by ClusterRoleBinding "crb-metrics" of ClusterRole "metrics" to User "prom"',
            ),
            id="non-resource URL prefix",
        ),
        pytest.param(
            Attributes(user="prom", resource_request=False, verb="get", path="/healthz"),
            Decision(False),
            id="a prefix/* does not match the bare prefix",
        ),
        pytest.param(
            Attributes(user="prom", verb="get", resource="metrics"),
            Decision(False),
            id="non-resource rules grant no resource",
        ),
        pytest.param(
            Attributes(user="ghost", verb="get", namespace="dst", resource="pods"),
            Decision(
                False,
                'rbac: RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
                'role.rbac.authorization.k8s.io "gone" not found]',
            ),
            id="missing roles are the denial's reason",
        ),
        pytest.param(
            Attributes(user="ghost", verb="get", resource="pods"),
            Decision(False, 'rbac: RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'),
            id="a cluster-wide request visits no RoleBinding",
        ),
    ],
)
def test_authorize(attributes: Attributes, decision: Decision) -> None:
    assert authorize(attributes, POLICY) == decision


def test_the_first_binding_that_allows_is_named_and_earlier_errors_are_dropped() -> None:
    policy = Policy(
        roles=[role("dst", "all", rule(["*"], ["*"], groups=("*",)))],
        role_bindings=[binding("a", "Role", "all", account("reader", "src"), namespace="dst")],
        cluster_role_bindings=[
            binding("z", "ClusterRole", "missing", {"kind": "User", "name": SA})
        ],
    )
    assert authorize(get("pods"), policy) == Decision(
        True, 'RBAC: allowed by RoleBinding "a/dst" of Role "all" to ServiceAccount "reader/src"'
    )


@pytest.mark.parametrize(
    ("policy_rule", "attributes", "allowed"),
    [
        (rule(["get"], ["pods"]), Attributes(verb="get", resource="pods"), True),
        (rule(["*"], ["pods"]), Attributes(verb="watch", resource="pods"), True),
        (rule(["get"], ["pods"]), Attributes(verb="get", resource="pods", api_group="apps"), False),
        (
            rule(["get"], ["pods"], groups=("*",)),
            Attributes(verb="get", resource="pods", api_group="x"),
            True,
        ),
        (
            rule(["get"], ["pods/log"]),
            Attributes(verb="get", resource="pods", subresource="log"),
            True,
        ),
        (rule(["get"], ["pods/log"]), Attributes(verb="get", resource="pods"), False),
        (
            rule(["get"], ["pods"]),
            Attributes(verb="get", resource="pods", subresource="log"),
            False,
        ),
        (rule(["get"], ["*"]), Attributes(verb="get", resource="pods", subresource="log"), True),
        (
            rule(["get"], ["*/log"]),
            Attributes(verb="get", resource="pods", subresource="log"),
            True,
        ),
        (
            rule(["get"], ["*/log"]),
            Attributes(verb="get", resource="pods", subresource="exec"),
            False,
        ),
        (
            rule(["get"], ["pods"], names=("a", "b")),
            Attributes(verb="get", resource="pods", name="b"),
            True,
        ),
        (
            rule(["get"], ["pods"], names=("a",)),
            Attributes(verb="get", resource="pods", name="c"),
            False,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["*"]},
            Attributes(resource_request=False, verb="get", path="/x"),
            True,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/x"]},
            Attributes(resource_request=False, verb="get", path="/x/y"),
            False,
        ),
        (
            {"verbs": ["get"], "nonResourceURLs": ["/x*"]},
            Attributes(resource_request=False, verb="get", path="/xy"),
            True,
        ),
        (
            rule(["get"], ["*"], groups=("*",)),
            Attributes(resource_request=False, verb="get", path="/x"),
            False,
        ),
    ],
)
def test_rule_allows(policy_rule: dict[str, Any], attributes: Attributes, allowed: bool) -> None:
    assert rule_allows(attributes, policy_rule) is allowed


def test_attributes_come_from_the_spec_as_they_are() -> None:
    spec = {
        "user": SA,
        "groups": ["g"],
        "resourceAttributes": {
            "namespace": "n",
            "verb": "get",
            "group": "apps",
            "version": "v1",
            "resource": "deployments",
            "subresource": "scale",
            "name": "d",
        },
    }
    assert Attributes.from_spec(spec) == Attributes(
        user=SA,
        groups=("g",),
        verb="get",
        namespace="n",
        api_group="apps",
        resource="deployments",
        subresource="scale",
        name="d",
    )
    assert Attributes.from_spec(
        {"groups": ["g"], "nonResourceAttributes": {"path": "/p", "verb": "get"}}
    ) == Attributes(groups=("g",), resource_request=False, verb="get", path="/p")


_EXACTLY_ONE = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
_USER = 'spec.user: Invalid value: "": at least one of user or group must be specified'


@pytest.mark.parametrize(
    ("review", "self_review", "message"),
    [
        ({"spec": {"user": "u", "resourceAttributes": {"verb": "get"}}}, False, None),
        ({"spec": {"groups": ["g"], "nonResourceAttributes": {"path": "/"}}}, False, None),
        ({"metadata": {}, "spec": {"resourceAttributes": {}}}, True, None),
        (
            {"spec": {}},
            False,
            f'.authorization.k8s.io "" is invalid: [spec: Invalid value: null: {_EXACTLY_ONE}, {_USER}]',
        ),
        (
            {
                "spec": {
                    "resourceAttributes": {},
                    "nonResourceAttributes": {"path": "/x", "verb": "get"},
                }
            },
            True,
            f'.authorization.k8s.io "" is invalid: spec: Invalid value: {{"Path":"/x","Verb":"get"}}: {_EXACTLY_ONE}',
        ),
        (
            {"metadata": {"generateName": "x-"}, "spec": {"user": "u", "resourceAttributes": {}}},
            False,
            '.authorization.k8s.io "" is invalid: metadata: Invalid value: {"generateName":"x-"}: must be empty',
        ),
    ],
)
def test_review_error(review: dict[str, Any], self_review: bool, message: str | None) -> None:
    error = review_error(review, self_review=self_review)
    if message is None:
        assert error is None
        return
    assert error is not None
    status = error.to_status()
    assert (status["code"], status["reason"], status["message"]) == (422, "Invalid", message)
    assert status["details"]["group"] == "authorization.k8s.io"
    assert "kind" not in status["details"]
    assert "name" not in status["details"]


def test_the_answer_is_the_spec_re_encoded_with_the_decision() -> None:
    review = {
        "metadata": {},
        "spec": {
            "user": SA,
            "groups": [],
            "resourceAttributes": {
                "name": "s",
                "resource": "secrets",
                "verb": "get",
                "subresource": "",
            },
        },
        "status": {"allowed": True, "denied": True},
    }
    assert answered_review(review, Decision(False), self_review=False) == {
        "metadata": {},
        "spec": {
            "resourceAttributes": {"verb": "get", "resource": "secrets", "name": "s"},
            "user": SA,
        },
        "status": {"allowed": False},
    }
    assert answered_review(review, Decision(True, "why"), self_review=True)["status"] == {
        "allowed": True,
        "reason": "why",
    }


def test_unknown_spec_fields() -> None:
    review = {"spec": {"user": "u", "foo": 1, "resourceAttributes": {"verb": "get", "bar": 2}}}
    assert unknown_spec_fields(review, self_review=False) == [
        "spec.foo",
        "spec.resourceAttributes.bar",
    ]
    assert unknown_spec_fields(review, self_review=True) == [
        "spec.user",
        "spec.foo",
        "spec.resourceAttributes.bar",
    ]


def test_aggregated_rules() -> None:
    read = rule(["get"], ["pods"])
    write = rule(["create"], ["pods"])
    roles = [
        cluster_role("b", write, read, metadata={"labels": {"agg": "yes"}}),
        cluster_role("a", read, metadata={"labels": {"agg": "yes", "tier": "x"}}),
        cluster_role("c", rule(["delete"], ["pods"]), metadata={"labels": {"agg": "no"}}),
    ]
    aggregate = cluster_role(
        "all",
        rule(["stale"], ["x"]),
        metadata={"labels": {"agg": "yes"}},
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]},
    )
    assert aggregated_rules(aggregate, [*roles, aggregate]) == [read, write]
    expressions = {
        "clusterRoleSelectors": [
            {"matchExpressions": [{"key": "agg", "operator": "In", "values": ["no"]}]}
        ]
    }
    assert aggregated_rules({**aggregate, "aggregationRule": expressions}, roles) == [
        rule(["delete"], ["pods"])
    ]
    assert aggregated_rules(roles[0], roles) is None
