"""SubjectAccessReviews over HTTP: answered from the stored RBAC objects, never stored themselves."""

from __future__ import annotations

from typing import Any

from kubesim.testing import KubeSim
from tests.kubesim.http_calls import call
from tests.kubesim.protobuf_calls import KUBECTL_ACCEPT, PROTOBUF, require_catalog
from tests.kubesim.protobuf_calls import call as raw_call

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SELF_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
READER = "system:serviceaccount:src:reader"


async def create(sim: KubeSim, path: str, body: dict[str, Any]) -> None:
    status, answer, _headers = await call(sim, f"POST {path}", body=body)
    assert status == 201, answer


async def review(sim: KubeSim, spec: dict[str, Any], *, query: str = "") -> tuple[int, Any]:
    status, answer, _headers = await call(sim, f"POST {REVIEWS}{query}", body={"spec": spec})
    return status, answer


def get_secret(namespace: str, name: str, user: str = READER) -> dict[str, Any]:
    return {
        "user": user,
        "resourceAttributes": {
            "namespace": namespace,
            "verb": "get",
            "resource": "secrets",
            "name": name,
        },
    }


async def grant_secret_reading(sim: KubeSim) -> None:
    for namespace in ("src", "dst"):
        await create(sim, "/api/v1/namespaces", {"metadata": {"name": namespace}})
    await create(
        sim,
        f"{RBAC}/namespaces/dst/roles",
        {
            "metadata": {"name": "read"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "verbs": ["get"],
                    "resourceNames": ["s1"],
                }
            ],
        },
    )
    await create(
        sim,
        f"{RBAC}/namespaces/dst/rolebindings",
        {
            "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "src"}],
        },
    )


async def test_a_review_is_answered_from_the_stored_bindings(kubesim: KubeSim) -> None:
    await grant_secret_reading(kubesim)

    status, answer = await review(kubesim, get_secret("dst", "s1"))
    assert status == 201
    assert answer == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": get_secret("dst", "s1"),
        "status": {
            "allowed": True,
            "reason": 'RBAC: allowed by RoleBinding "rb/dst" of Role "read" to ServiceAccount '
            '"reader/src"',
        },
    }
    assert (await review(kubesim, get_secret("dst", "s2")))[1]["status"] == {"allowed": False}
    assert (await review(kubesim, get_secret("src", "s1")))[1]["status"] == {"allowed": False}


async def test_a_binding_change_changes_the_next_answer(kubesim: KubeSim) -> None:
    await grant_secret_reading(kubesim)
    status, _answer, _headers = await call(kubesim, f"DELETE {RBAC}/namespaces/dst/rolebindings/rb")
    assert status == 200
    assert (await review(kubesim, get_secret("dst", "s1")))[1]["status"] == {"allowed": False}

    await create(
        kubesim,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "secret-reader"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}],
        },
    )
    await create(
        kubesim,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "readers"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "secret-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "src"}],
        },
    )
    assert (await review(kubesim, get_secret("dst", "s9")))[1]["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "secret-reader" '
        'to ServiceAccount "reader/src"',
    }


async def test_reviews_are_answered_not_stored(kubesim: KubeSim) -> None:
    """The same review twice is two answers (no AlreadyExists), none with a name, uid or
    resourceVersion; dryRun changes nothing."""
    for query in ("?dryRun=All", "", ""):
        status, answer = await review(kubesim, get_secret("dst", "s1"), query=query)
        assert (status, answer["metadata"], answer["status"]) == (201, {}, {"allowed": False})


async def test_a_malformed_review_is_invalid(kubesim: KubeSim) -> None:
    status, answer = await review(kubesim, {})
    assert status == 422
    assert answer["message"] == (
        '.authorization.k8s.io "" is invalid: [spec: Invalid value: null: exactly one of '
        "nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid "
        'value: "": at least one of user or group must be specified]'
    )
    assert [cause["field"] for cause in answer["details"]["causes"]] == ["spec", "spec.user"]


async def test_unknown_spec_fields_follow_field_validation(kubesim: KubeSim) -> None:
    spec = {**get_secret("dst", "s1"), "foo": 1}
    status, answer = await review(kubesim, spec, query="?fieldValidation=Strict")
    assert (status, answer["message"]) == (400, 'strict decoding error: unknown field "spec.foo"')
    status, answer, headers = await call(kubesim, f"POST {REVIEWS}", body={"spec": spec})
    assert status == 201
    assert "foo" not in answer["spec"]
    assert headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'


async def test_a_self_review_is_allowed_as_for_a_privileged_client(kubesim: KubeSim) -> None:
    body = {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}}
    status, answer, _headers = await call(kubesim, f"POST {SELF_REVIEWS}", body=body)
    assert status == 201
    assert answer["kind"] == "SelfSubjectAccessReview"
    assert answer["status"] == {"allowed": True}
    status, answer, _headers = await call(kubesim, f"POST {SELF_REVIEWS}", body={"spec": {}})
    assert status == 422


async def test_reviews_have_no_object_urls_and_no_reads(kubesim: KubeSim) -> None:
    for request_line, status in [
        (f"GET {REVIEWS}", 405),
        (f"GET {REVIEWS}?watch=true", 405),
        (f"DELETE {REVIEWS}", 405),
        (f"GET {REVIEWS}/x", 404),
        (f"PUT {REVIEWS}/x", 404),
        (f"DELETE {SELF_REVIEWS}/x", 404),
    ]:
        answered, _answer, _headers = await call(kubesim, request_line, body={})
        assert (request_line, answered) == (request_line, status)


async def test_an_aggregated_cluster_role_grants_what_it_gathers(kubesim: KubeSim) -> None:
    def labelled(name: str, resource: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"aggregate-to-reader": "true"}},
            "rules": [{"apiGroups": [""], "resources": [resource], "verbs": ["get"]}],
        }

    await create(kubesim, f"{RBAC}/clusterroles", labelled("reads-secrets", "secrets"))
    await create(
        kubesim,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": "reader"},
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {"aggregate-to-reader": "true"}}]
            },
        },
    )
    await create(
        kubesim,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": "reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "reader",
            },
            "subjects": [{"kind": "User", "name": "alice"}],
        },
    )
    await create(kubesim, f"{RBAC}/clusterroles", labelled("reads-pods", "pods"))
    await kubesim.settle()

    _status, role, _headers = await call(kubesim, f"GET {RBAC}/clusterroles/reader")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    ]
    spec = {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}
    assert (await review(kubesim, spec))[1]["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "reader" of ClusterRole "reader" to User '
        '"alice"',
    }


async def test_a_protobuf_review_is_answered_in_protobuf(kubesim: KubeSim) -> None:
    catalog = require_catalog()
    await grant_secret_reading(kubesim)
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": get_secret("dst", "s1"),
    }
    status, content_type, raw = await raw_call(
        kubesim,
        "POST",
        REVIEWS,
        data=catalog.encode_object(body),
        content_type=PROTOBUF,
        accept=KUBECTL_ACCEPT,
    )
    assert (status, content_type) == (201, PROTOBUF)
    answer = catalog.decode_object(raw)
    assert answer["spec"] == get_secret("dst", "s1")
    assert answer["status"]["allowed"] is True
