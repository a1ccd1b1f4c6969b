"""Namespace lifecycle: what a new namespace holds, Terminating, content removal, finalize."""

from __future__ import annotations

from tests.conformance.harness import Run
from tests.conformance.kube import MERGE_PATCH, config_map, core, names, wait_for
from tests.conformance.registry import check


@check("namespace-create", "A created namespace: spec, status, the name label", namespace=False)
async def _create(run: Run) -> None:
    run.delete_on_cleanup(f"/api/v1/namespaces/{run.ns}")
    await run.call(
        "create",
        "POST",
        "/api/v1/namespaces",
        body={
            "metadata": {
                "name": run.ns,
                "labels": {"kubernetes.io/metadata.name": "wrong", "a": "b"},
            }
        },
    )
    await run.call(
        "relabel the name label",
        "PATCH",
        f"/api/v1/namespaces/{run.ns}",
        body={"metadata": {"labels": {"kubernetes.io/metadata.name": None}}},
        content_type=MERGE_PATCH,
        project=lambda body: body["metadata"].get("labels"),
    )
    await run.call(
        "spec.finalizers cannot change through an update",
        "PATCH",
        f"/api/v1/namespaces/{run.ns}",
        body={"spec": {"finalizers": []}},
        content_type=MERGE_PATCH,
        project=lambda body: body.get("spec"),
    )


@check(
    "namespace-contents", "What a fresh namespace holds (ServiceAccount default, kube-root-ca.crt)"
)
async def _contents(run: Run) -> None:
    async def populated() -> bool:
        accounts = await run.request("GET", core(run, "serviceaccounts"))
        maps = await run.request("GET", core(run, "configmaps"))
        # The real server's controllers fill a namespace within seconds; kubesim's never do.
        return run.is_kubesim or (bool(names(accounts.body)) and bool(names(maps.body)))

    await run.eventually(populated, what="the namespace's default objects")
    await run.call("serviceaccounts", "GET", core(run, "serviceaccounts"), project=names)
    await run.call("configmaps", "GET", core(run, "configmaps"), project=names)


@check(
    "namespace-terminating",
    "Deleting a namespace: Terminating, conditions, 409 on repeat, content gone",
)
async def _terminating(run: Run) -> None:
    await run.ok(
        "POST", core(run, "configmaps"), body=config_map("held", finalizers=["example.com/hold"])
    )
    await run.ok("POST", core(run, "secrets"), body={"metadata": {"name": "s"}})
    await run.call(
        "delete",
        "DELETE",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda body: {
            "kind": body.get("kind"),
            "phase": body.get("status", {}).get("phase"),
            "spec": body.get("spec"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
        },
    )
    await run.call(
        "delete again",
        "DELETE",
        f"/api/v1/namespaces/{run.ns}",
        # The namespace controller's conditions arrive whenever it gets to them.
        project=lambda body: {
            "kind": body.get("kind"),
            "phase": body.get("status", {}).get("phase"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
        },
    )

    def conditions_set(obj: dict[str, object]) -> bool:
        status = obj.get("status")
        return isinstance(status, dict) and any(
            c.get("type") == "NamespaceFinalizersRemaining" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )

    namespace = await wait_for(
        run,
        f"/api/v1/namespaces/{run.ns}",
        conditions_set,
        what="the namespace controller reporting the held finalizer",
    )
    run.fact(
        "conditions",
        sorted(
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in namespace["status"].get("conditions") or []
        ),
    )
    await run.gone(core(run, "secrets", "s"), what="the secret removed by the namespace controller")
    await run.call(
        "create while terminating",
        "POST",
        core(run, "secrets"),
        body={"metadata": {"name": "late"}},
    )
    await run.call(
        "update while terminating",
        "PATCH",
        core(run, "configmaps", "held"),
        body={"data": {"k": "still allowed"}},
        content_type=MERGE_PATCH,
        project=lambda body: body.get("data"),
    )
    await run.ok(
        "PATCH",
        core(run, "configmaps", "held"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    await run.gone(f"/api/v1/namespaces/{run.ns}", what="the namespace")
    run.fact("namespace gone", True)


@check(
    "namespace-finalize",
    "The finalize subresource; a namespace without finalizers goes at once",
    namespace=False,
)
async def _finalize(run: Run) -> None:
    run.delete_on_cleanup(f"/api/v1/namespaces/{run.ns}")
    created = await run.ok("POST", "/api/v1/namespaces", body={"metadata": {"name": run.ns}})
    body = created.object()
    body["spec"] = {"finalizers": []}
    await run.call(
        "finalize",
        "PUT",
        f"/api/v1/namespaces/{run.ns}/finalize",
        body=body,
        project=lambda answer: {"spec": answer.get("spec"), "status": answer.get("status")},
    )
    await run.call(
        "delete",
        "DELETE",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda answer: {
            "kind": answer.get("kind"),
            "phase": answer.get("status", {}).get("phase"),
        },
    )
    # The first DELETE marks it; without the `kubernetes` finalizer no controller finishes it.
    await run.call(
        "still there",
        "GET",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda answer: {
            "phase": answer.get("status", {}).get("phase"),
            "spec": answer.get("spec"),
        },
    )
    await run.call(
        "delete again",
        "DELETE",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda answer: {"kind": answer.get("kind")},
    )
    await run.gone(f"/api/v1/namespaces/{run.ns}", what="the finalized namespace")
    run.fact("gone", True)
