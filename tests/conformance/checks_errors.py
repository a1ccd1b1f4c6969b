"""Error answers: the metav1.Status bodies of 400, 403, 404, 405, 409, 415, 422 and 504."""

from __future__ import annotations

from tests.conformance.harness import Run
from tests.conformance.kube import (
    JSON_PATCH,
    MERGE_PATCH,
    config_map,
    core,
    install_crd,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check


@check("errors-404", "404 NotFound: missing object, unknown resource, unknown path and group")
async def _not_found(run: Run) -> None:
    await run.call("missing object", "GET", core(run, "configmaps", "nope"))
    await run.call("missing object delete", "DELETE", core(run, "configmaps", "nope"))
    await run.call("unknown resource", "GET", core(run, "nopes"))
    await run.call("unknown group", "GET", "/apis/nope.example.com/v1/nopes")
    await run.call("unknown group discovery", "GET", "/apis/nope.example.com")
    await run.call("unknown path", "GET", "/nope")
    await run.call("namespaced kind by a cluster path", "GET", "/api/v1/configmaps/x")
    await run.call("unknown subresource", "GET", core(run, "configmaps", "x", sub="nope"))
    await install_crd(run, widget_crd(run))
    await run.call("missing custom object", "GET", widgets(run, "nope"))


@check("errors-405", "405 MethodNotAllowed for verbs a resource does not offer")
async def _method_not_allowed(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    await run.call("PUT on a collection", "PUT", core(run, "configmaps"), body=config_map("x"))
    await run.call("POST to an object", "POST", core(run, "configmaps", "x"), body=config_map("x"))
    await run.call(
        "PATCH on a collection", "PATCH", core(run, "configmaps"), body={}, content_type=MERGE_PATCH
    )
    await run.call("deletecollection of namespaces", "DELETE", "/api/v1/namespaces")


@check("errors-409", "409 AlreadyExists and Conflict bodies (stale RV, precondition, generateName)")
async def _conflicts(run: Run) -> None:
    created = await run.call("create", "POST", core(run, "configmaps"), body=config_map("x"))
    await run.call("duplicate", "POST", core(run, "configmaps"), body=config_map("x"))
    body = created.object()
    body["metadata"]["resourceVersion"] = "1"
    await run.call("stale update", "PUT", core(run, "configmaps", "x"), body=body)
    await run.call(
        "stale patch",
        "PATCH",
        core(run, "configmaps", "x"),
        body={"metadata": {"resourceVersion": "1"}, "data": {"k": "v2"}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "delete with a wrong uid precondition",
        "DELETE",
        core(run, "configmaps", "x"),
        body={"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}},
    )
    await run.call(
        "delete with a stale resourceVersion precondition",
        "DELETE",
        core(run, "configmaps", "x"),
        body={"preconditions": {"resourceVersion": "1"}},
    )


@check("errors-400", "400 BadRequest: bad JSON, namespace and name mismatch, kind mismatch")
async def _bad_requests(run: Run) -> None:
    await run.call(
        "malformed JSON",
        "POST",
        core(run, "configmaps"),
        raw=b"{nope",
        content_type="application/json",
    )
    await run.call(
        "JSON array body",
        "POST",
        core(run, "configmaps"),
        raw=b"[]",
        content_type="application/json",
    )
    await run.call(
        "namespace mismatch",
        "POST",
        core(run, "configmaps"),
        body=config_map("x", namespace="other"),
    )
    await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    await run.call("name mismatch", "PUT", core(run, "configmaps", "x"), body=config_map("y"))
    await run.call(
        "kind mismatch",
        "POST",
        core(run, "configmaps"),
        body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
    )
    await run.call(
        "apiVersion mismatch",
        "POST",
        core(run, "configmaps"),
        body={"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "s"}},
    )
    await run.call(
        "json patch that is not a list",
        "PATCH",
        core(run, "configmaps", "x"),
        body={"data": {"k": "v"}},
        content_type=JSON_PATCH,
    )
    await run.call(
        "bad boolean query parameter",
        "GET",
        core(run, "secrets"),
        query={"watch": "maybe", "timeoutSeconds": "1"},
    )
    await run.call(
        "bad limit",
        "GET",
        core(run, "configmaps"),
        query={"limit": "ten"},
    )
    await install_crd(run, widget_crd(run))
    await run.call(
        "custom object without kind",
        "POST",
        widgets(run),
        body={"apiVersion": f"{run.group}/v1", "metadata": {"name": "w"}},
    )


@check("errors-415", "415 UnsupportedMediaType: unknown body and patch types")
async def _unsupported_media_types(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    await run.call(
        "patch as text/plain",
        "PATCH",
        core(run, "configmaps", "x"),
        raw=b'{"data":{}}',
        content_type="text/plain",
    )
    await run.call(
        "create as text/plain",
        "POST",
        core(run, "configmaps"),
        raw=b'{"metadata":{"name":"y"}}',
        content_type="text/plain",
    )
    await run.call(
        "create as xml",
        "POST",
        core(run, "configmaps"),
        raw=b"<configmap/>",
        content_type="application/xml",
    )


@check("errors-422", "422 Invalid: names, generateName, finalizers, ownerReferences, causes")
async def _invalid(run: Run) -> None:
    await run.call("no name", "POST", core(run, "configmaps"), body={"metadata": {}, "data": {}})
    await run.call("invalid name", "POST", core(run, "configmaps"), body=config_map("Not_Valid"))
    await run.call("too long name", "POST", core(run, "configmaps"), body=config_map("x" * 254))
    await run.call(
        "invalid namespace name",
        "POST",
        "/api/v1/namespaces",
        body={"metadata": {"name": "a.b"}},
    )
    await run.call(
        "invalid label",
        "POST",
        core(run, "configmaps"),
        body=config_map("y", labels={"bad key!": "bad value!"}),
    )
    await run.call(
        "two controller owner references",
        "POST",
        core(run, "configmaps"),
        body=config_map(
            "z",
            ownerReferences=[
                {"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": u, "controller": True}
                for n, u in (("a", "u1"), ("b", "u2"))
            ],
        ),
    )
    await run.call(
        "owner reference without uid",
        "POST",
        core(run, "configmaps"),
        body=config_map(
            "o", ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": ""}]
        ),
    )
    await run.call(
        "invalid data key",
        "POST",
        core(run, "configmaps"),
        body=config_map("d", {"bad key": "v"}),
    )
    await run.call(
        "resourceVersionMatch without resourceVersion",
        "GET",
        core(run, "configmaps"),
        query={"resourceVersionMatch": "NotOlderThan"},
    )
    await run.call(
        "sendInitialEvents on a list",
        "GET",
        core(run, "configmaps"),
        query={"sendInitialEvents": "true"},
    )
    await run.call(
        "invalid dryRun",
        "POST",
        core(run, "configmaps"),
        query={"dryRun": "Some"},
        body=config_map("dry"),
    )
    await run.call(
        "invalid fieldValidation",
        "POST",
        core(run, "configmaps"),
        query={"fieldValidation": "Loose"},
        body=config_map("fv"),
    )
    created = await run.ok("POST", core(run, "configmaps"), body=config_map("imm"))
    body = created.object()
    body["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    await run.call("change the uid", "PUT", core(run, "configmaps", "imm"), body=body)
    await run.call(
        "json patch test failing",
        "PATCH",
        core(run, "configmaps", "imm"),
        body=[{"op": "test", "path": "/data/k", "value": "other"}],
        content_type=JSON_PATCH,
    )
    await run.call(
        "json patch removing a missing path",
        "PATCH",
        core(run, "configmaps", "imm"),
        body=[{"op": "remove", "path": "/data/nope"}],
        content_type=JSON_PATCH,
    )


@check("errors-504-and-list-rv", "LIST resourceVersion semantics: 0, Exact, too large (504)")
async def _list_resource_versions(run: Run) -> None:
    created = await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    current = created.metadata()["resourceVersion"]
    for step, query in (
        ("resourceVersion=0", {"resourceVersion": "0"}),
        (
            "the current RV, NotOlderThan",
            {"resourceVersion": current, "resourceVersionMatch": "NotOlderThan"},
        ),
        ("a future RV", {"resourceVersion": "999999999"}),
        (
            "a future RV, NotOlderThan",
            {"resourceVersion": "999999999", "resourceVersionMatch": "NotOlderThan"},
        ),
        ("a malformed RV", {"resourceVersion": "abc"}),
        ("resourceVersion=0, Exact", {"resourceVersion": "0", "resourceVersionMatch": "Exact"}),
    ):
        await run.call(
            f"list with {step}",
            "GET",
            core(run, "configmaps"),
            query={**query, "labelSelector": "cf"},
            project=lambda body: {"kind": body.get("kind"), "items": len(body.get("items") or [])},
        )
    await run.call(
        "get with resourceVersion=0",
        "GET",
        core(run, "configmaps", "x"),
        query={"resourceVersion": "0"},
        project=lambda body: body["metadata"]["name"],
    )


@check(
    "errors-403-immortal-namespaces",
    "403 Forbidden for deleting default, kube-system, kube-public",
    namespace=False,
)
async def _immortal_namespaces(run: Run) -> None:
    for name in ("default", "kube-system", "kube-public"):
        await run.call(
            f"delete {name}", "DELETE", f"/api/v1/namespaces/{name}", query={"dryRun": "All"}
        )


@check("errors-dry-run", "dryRun=All creates, updates and deletes nothing")
async def _dry_run(run: Run) -> None:
    await run.call(
        "dry-run create",
        "POST",
        core(run, "configmaps"),
        query={"dryRun": "All"},
        body=config_map("x"),
    )
    await run.call("get after dry-run create", "GET", core(run, "configmaps", "x"))
    created = await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    await run.call(
        "dry-run patch",
        "PATCH",
        core(run, "configmaps", "x"),
        query={"dryRun": "All"},
        body={"data": {"k": "dry"}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "dry-run delete",
        "DELETE",
        core(run, "configmaps", "x"),
        query={"dryRun": "All"},
    )
    after = await run.call("get after dry runs", "GET", core(run, "configmaps", "x"))
    run.fact(
        "resourceVersion unchanged by dry runs",
        after.metadata().get("resourceVersion") == created.metadata().get("resourceVersion"),
    )
    await install_crd(run, widget_crd(run))
    await run.call(
        "dry-run create of a custom object",
        "POST",
        widgets(run),
        query={"dryRun": "All"},
        body=widget(run, "w"),
    )
