"""Access reviews: SubjectAccessReviews decided by RBAC from the stored roles and bindings.

The real server's RBAC authorizer reads its roles and bindings from informer caches, so a binding
just created may not count yet: on the real server a check first waits until every review it
expects to be allowed is (kubesim decides from its store at once). The users the reviews ask about
are this check's own (its namespace's ServiceAccounts, token-suffixed names), and no review lists
a group the real server's bootstrap bindings grant anything to (``system:authenticated``,
``system:serviceaccounts``), since kubesim holds no bootstrap policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import grouped
from tests.conformance.registry import check

RBAC = "rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SELF_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


_GET_ES = {"group": "elasticsearch.k8s.elastic.co", "resource": "elasticsearches", "verb": "get"}


def _rule(
    resources: list[str], verbs: list[str], groups: tuple[str, ...] = ("",), **extra: Any
) -> dict[str, Any]:
    return {"apiGroups": list(groups), "resources": resources, "verbs": verbs, **extra}


def _binding(name: str, kind: str, role: str, *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": list(subjects),
    }


def _resource(user: str, *, groups: Sequence[str] = (), **attributes: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceAttributes": attributes, "user": user}
    if groups:
        spec["groups"] = list(groups)
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def _answer(body: Any) -> Any:
    """The answered review with its metadata minus managedFields: the real server's metadata
    holds only those (kubesim keeps none, the `*` row), so both compare as ``{}``."""
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        return body
    meta = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
    return {**body, "metadata": meta}


async def _create_cluster_scoped(run: Run, plural: str, body: dict[str, Any]) -> None:
    path = grouped(run, RBAC, plural, namespaced=False)
    await run.ok("POST", path, body=body)
    run.delete_on_cleanup(f"{path}/{body['metadata']['name']}")


async def _until_allowed(run: Run, reviews: dict[str, dict[str, Any]]) -> None:
    """On the real server, wait until the authorizer's caches hold what the reviews need."""
    if run.is_kubesim:
        return

    async def allowed() -> bool:
        for body in reviews.values():
            answer = await run.request("POST", REVIEWS, body=body)
            status = answer.body.get("status") if isinstance(answer.body, dict) else None
            if not isinstance(status, dict) or not status.get("allowed"):
                return False
        return True

    await run.eventually(allowed, what="the RBAC authorizer seeing the new bindings")


@check("rbac-subject-access-reviews", "SubjectAccessReviews allowed and denied by RBAC bindings")
async def _subject_access_reviews(run: Run) -> None:
    other = f"{run.ns}-other"
    reader = f"system:serviceaccount:{other}:reader"
    local = f"system:serviceaccount:{run.ns}:local"
    operator = run.name("operator")
    cluster_role = run.name("sar-view")
    group = run.name("sar-group")
    await run.ok("POST", "/api/v1/namespaces", body={"metadata": {"name": other}})
    run.delete_on_cleanup(f"/api/v1/namespaces/{other}")

    await run.ok(
        "POST",
        grouped(run, RBAC, "roles"),
        body={
            "metadata": {"name": "read-s1"},
            "rules": [
                _rule(["secrets"], ["get"], resourceNames=["s1"]),
                _rule(["deployments/scale"], ["update"], ("apps",)),
            ],
        },
    )
    await run.ok(
        "POST",
        grouped(run, RBAC, "rolebindings"),
        body=_binding(
            "reader",
            "Role",
            "read-s1",
            {"kind": "User", "name": run.name("nobody")},
            {"kind": "ServiceAccount", "name": "reader", "namespace": other},
        ),
    )
    await _create_cluster_scoped(
        run,
        "clusterroles",
        {
            "metadata": {"name": cluster_role},
            "rules": [
                _rule(["elasticsearches"], ["get", "list"], ("elasticsearch.k8s.elastic.co",)),
                _rule(["*/status"], ["patch"], ("*",)),
                {"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]},
            ],
        },
    )
    # A ServiceAccount subject without a namespace is one of the RoleBinding's namespace.
    await run.ok(
        "POST",
        grouped(run, RBAC, "rolebindings"),
        body=_binding(
            "local", "ClusterRole", cluster_role, {"kind": "ServiceAccount", "name": "local"}
        ),
    )
    await _create_cluster_scoped(
        run,
        "clusterrolebindings",
        _binding(
            operator,
            "ClusterRole",
            cluster_role,
            {"kind": "Group", "name": group},
            {"kind": "User", "name": operator},
        ),
    )
    allowed = {
        "allowed by RoleBinding": _resource(
            reader, namespace=run.ns, verb="get", resource="secrets", name="s1"
        ),
        "allowed by RoleBinding, subresource": _resource(
            reader,
            namespace=run.ns,
            verb="update",
            group="apps",
            resource="deployments",
            subresource="scale",
            name="d",
        ),
        "allowed by RoleBinding of a ClusterRole": _resource(
            local, namespace=run.ns, name="es", **_GET_ES
        ),
        "allowed by ClusterRoleBinding": _resource(operator, namespace=other, name="es", **_GET_ES),
        "allowed by ClusterRoleBinding to a group, */subresource": _resource(
            "someone",
            groups=(group,),
            verb="patch",
            group="apps",
            resource="deployments",
            subresource="status",
        ),
    }
    await _until_allowed(run, allowed)
    for step, body in allowed.items():
        await run.call(step, "POST", REVIEWS, project=_answer, body=body)

    denied = {
        "denied in another namespace": _resource(
            reader, namespace=other, verb="get", resource="secrets", name="s1"
        ),
        "denied: resourceNames": _resource(
            reader, namespace=run.ns, verb="get", resource="secrets", name="s2"
        ),
        "denied: no name for resourceNames": _resource(
            reader, namespace=run.ns, verb="get", resource="secrets"
        ),
        "denied: the resource without its subresource": _resource(
            reader, namespace=run.ns, verb="update", group="apps", resource="deployments"
        ),
        "denied: a cluster-wide request": _resource(reader, verb="get", resource="secrets"),
        "denied: ServiceAccount of another namespace": _resource(
            f"system:serviceaccount:{other}:local", namespace=run.ns, name="es", **_GET_ES
        ),
        "denied: a user named like the group": _resource(
            group, verb="patch", group="apps", resource="deployments", subresource="status"
        ),
    }
    for step, body in denied.items():
        await run.call(step, "POST", REVIEWS, project=_answer, body=body)

    await run.call(
        "non-resource URL",
        "POST",
        REVIEWS,
        project=_answer,
        body={
            "spec": {
                "groups": [group],
                "nonResourceAttributes": {"path": "/healthz/etcd", "verb": "get"},
            }
        },
    )
    await run.call(
        "non-resource URL prefix is not the bare path",
        "POST",
        REVIEWS,
        project=_answer,
        body={
            "spec": {
                "groups": [group],
                "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
            }
        },
    )
    await run.call(
        "system:masters",
        "POST",
        REVIEWS,
        project=_answer,
        body=_resource("anyone", groups=("system:masters",), verb="delete", resource="nodes"),
    )


@check("rbac-missing-role", "A binding to a missing role: the denial names it")
async def _missing_role(run: Run) -> None:
    ghost = run.name("ghost")
    await _create_cluster_scoped(
        run,
        "clusterrolebindings",
        _binding(ghost, "ClusterRole", run.name("absent"), {"kind": "User", "name": ghost}),
    )
    body = _resource(ghost, verb="get", resource="pods")

    async def reported() -> bool:
        answer = await run.request("POST", REVIEWS, body=body)
        return isinstance(answer.body, dict) and bool(answer.body.get("status", {}).get("reason"))

    await run.eventually(reported, what="the RBAC authorizer seeing the binding")
    await run.call(
        "denied with the missing role as reason", "POST", REVIEWS, project=_answer, body=body
    )


@check("rbac-review-requests", "Malformed reviews, self reviews, and what a review URL serves")
async def _review_requests(run: Run) -> None:
    await run.call("no attributes, no user", "POST", REVIEWS, project=_answer, body={"spec": {}})
    await run.call(
        "both attributes",
        "POST",
        REVIEWS,
        project=_answer,
        body={
            "spec": {
                "user": "u",
                "resourceAttributes": {"verb": "get", "resource": "pods"},
                "nonResourceAttributes": {"path": "/x", "verb": "get"},
            }
        },
    )
    await run.call(
        "groups without a user, empty fields, a client status",
        "POST",
        REVIEWS,
        project=_answer,
        query={"dryRun": "All"},
        body={
            "spec": {
                "user": "",
                "groups": ["g"],
                "extra": {"k": ["v"]},
                "uid": "1",
                "resourceAttributes": {"verb": "get", "resource": "pods", "subresource": ""},
            },
            "status": {"allowed": True, "reason": "because"},
        },
    )
    # The real server prints the metadata with its managedFields (and their time): only the
    # shape of the error is compared.
    for step, path, spec in (
        ("metadata must be empty", REVIEWS, {"user": "u", "resourceAttributes": {}}),
        ("self review metadata must be empty", SELF_REVIEWS, {"resourceAttributes": {}}),
    ):
        named = await run.request(
            "POST", path, body={"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": spec}
        )
        run.fact(
            step,
            {
                "status": named.status,
                "causes": [
                    (cause.get("field"), cause.get("message", "").endswith(": must be empty"))
                    for cause in (named.body or {}).get("details", {}).get("causes", [])
                ],
            },
        )
    await run.call(
        "self review",
        "POST",
        SELF_REVIEWS,
        project=_answer,
        body={"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}},
    )
    await run.call(
        "self review without attributes", "POST", SELF_REVIEWS, project=_answer, body={"spec": {}}
    )
    await run.call("list reviews", "GET", REVIEWS)
    await run.call("get a review", "GET", f"{REVIEWS}/x")
    await run.call("delete a review", "DELETE", f"{REVIEWS}/x")


@check("rbac-aggregated-clusterrole", "An aggregated ClusterRole gathers rules and grants them")
async def _aggregated(run: Run) -> None:
    label = {f"cf{run.token}.example.com/aggregate": "true"}
    aggregate = run.name("aggregate")
    user = run.name("alice")
    for base, resource in (("reads-secrets", "secrets"), ("reads-pods", "pods")):
        await _create_cluster_scoped(
            run,
            "clusterroles",
            {
                "metadata": {"name": run.name(base), "labels": label},
                "rules": [_rule([resource], ["get"]), _rule(["pods"], ["get"])],
            },
        )
    await _create_cluster_scoped(
        run,
        "clusterroles",
        {
            "metadata": {"name": aggregate},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]},
        },
    )
    await _create_cluster_scoped(
        run,
        "clusterrolebindings",
        _binding(aggregate, "ClusterRole", aggregate, {"kind": "User", "name": user}),
    )
    path = grouped(run, RBAC, "clusterroles", aggregate, namespaced=False)

    async def gathered() -> bool:
        answer = await run.request("GET", path)
        return isinstance(answer.body, dict) and len(answer.body.get("rules") or []) == 2

    await run.eventually(gathered, what="the aggregation controller writing the rules")
    await run.call("aggregated rules", "GET", path, project=lambda body: body.get("rules"))
    secrets = _resource(user, namespace=run.ns, verb="get", resource="secrets", name="s")
    await _until_allowed(run, {"secrets": secrets})
    await run.call(
        "allowed by the aggregated ClusterRole", "POST", REVIEWS, project=_answer, body=secrets
    )
    await run.call(
        "not gathered",
        "POST",
        REVIEWS,
        project=_answer,
        body=_resource(user, namespace=run.ns, verb="list", resource="secrets"),
    )
