"""CustomResourceDefinitions: validation of the CRD, schema validation, defaulting, pruning,
status and scale subresources, deletion of a CRD with its objects."""

from __future__ import annotations

import copy

from tests.conformance.harness import Run
from tests.conformance.kube import (
    CRD_PATH,
    MERGE_PATCH,
    install_crd,
    only,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check


@check("crd-status", "A created CRD: accepted names, conditions, stored versions", namespace=True)
async def _crd_status(run: Run) -> None:
    crd = widget_crd(run)
    await install_crd(run, crd, step="create")
    await run.call(
        "established",
        "GET",
        f"{CRD_PATH}/widgets.{run.group}",
        project=lambda body: {
            "status": {
                "acceptedNames": body["status"].get("acceptedNames"),
                "storedVersions": body["status"].get("storedVersions"),
                "conditions": sorted(
                    (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                    for c in body["status"].get("conditions") or []
                ),
            },
            "spec": body.get("spec"),
        },
    )


@check(
    "crd-invalid",
    "CRD validation: name, scope, versions, storage, structural schema",
    namespace=False,
)
async def _crd_invalid(run: Run) -> None:
    base = widget_crd(run)

    async def attempt(step: str, crd: dict[str, object]) -> None:
        answer = await run.call(step, "POST", CRD_PATH, body=crd)
        if answer.ok:
            run.delete_on_cleanup(f"{CRD_PATH}/{crd['metadata']['name']}")  # type: ignore[index]

    wrong_name = copy.deepcopy(base)
    wrong_name["metadata"]["name"] = f"things.{run.group}"
    await attempt("name is not plural.group", wrong_name)
    bad_scope = copy.deepcopy(base)
    bad_scope["spec"]["scope"] = "Galaxy"
    await attempt("unknown scope", bad_scope)
    no_storage = copy.deepcopy(base)
    no_storage["spec"]["versions"][0]["storage"] = False
    await attempt("no storage version", no_storage)
    no_schema = copy.deepcopy(base)
    del no_schema["spec"]["versions"][0]["schema"]
    await attempt("no schema", no_schema)
    untyped = copy.deepcopy(base)
    untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "loose"
    ] = {"description": "no type"}
    await attempt("non-structural schema", untyped)
    no_kind = copy.deepcopy(base)
    del no_kind["spec"]["names"]["kind"]
    await attempt("no kind", no_kind)


@check("crd-validation", "Custom object validation against the schema: 422 with causes")
async def _crd_validation(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    for step, spec in (
        ("wrong type", {"size": "big"}),
        ("below minimum", {"size": 0}),
        ("above maximum", {"size": 11}),
        ("not in enum", {"color": "purple"}),
        ("too long and bad pattern", {"name": "ABCDEFGHIJ"}),
        ("too many items", {"tags": ["a", "b", "c"]}),
    ):
        await run.call(step, "POST", widgets(run), body=widget(run, f"w-{len(step)}", spec))
    several = await run.request(
        "POST", widgets(run), body=widget(run, "w-several", {"size": "big", "color": "purple"})
    )
    # The real server validates sibling properties in Go map order: compare causes as a set.
    body = several.object()
    run.fact(
        "several errors",
        {
            "status": several.status,
            "reason": body.get("reason"),
            "causes": sorted(
                (c.get("field"), c.get("reason"), c.get("message"))
                for c in (body.get("details") or {}).get("causes") or []
            ),
            "message starts": str(body.get("message", "")).split(": [")[0],
        },
    )
    await run.call(
        "spec of the wrong type",
        "POST",
        widgets(run),
        body={
            "apiVersion": f"{run.group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w-s"},
            "spec": "x",
        },
    )


@check("crd-defaulting-pruning", "Defaults applied, unknown fields pruned (Warn, Strict, Ignore)")
async def _defaulting_and_pruning(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    body = widget(run, "w1", {"size": 1, "bogus": True, "free": {"anything": {"goes": 1}}})
    body["extra"] = "top-level"
    body["metadata"]["bogusMeta"] = "x"
    await run.call("create (fieldValidation Warn by default)", "POST", widgets(run), body=body)
    strict = copy.deepcopy(body)
    strict["metadata"]["name"] = "w2"
    await run.call(
        "create with Strict", "POST", widgets(run), body=strict, query={"fieldValidation": "Strict"}
    )
    ignored = copy.deepcopy(body)
    ignored["metadata"]["name"] = "w3"
    await run.call(
        "create with Ignore",
        "POST",
        widgets(run),
        body=ignored,
        query={"fieldValidation": "Ignore"},
    )
    await run.call(
        "merge patch adding an unknown field",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"unknown": 1, "mode": None}},
        content_type=MERGE_PATCH,
    )


@check("crd-subresources", "Status and scale subresources of a custom resource")
async def _subresources(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await run.ok("POST", widgets(run), body=widget(run, "w1", {"size": 1, "replicas": 2}))
    await run.call(
        "status update through the main endpoint is ignored",
        "PATCH",
        widgets(run, "w1"),
        body={"status": {"replicas": 5}},
        content_type=MERGE_PATCH,
        project=only("status", "metadata.generation"),
    )
    status = await run.ok("GET", widgets(run, "w1", sub="status"))
    body = status.object()
    body["status"] = {"replicas": 2, "selector": "app=w1"}
    body["spec"] = {"size": 9}
    await run.call("PUT status", "PUT", widgets(run, "w1", sub="status"), body=body)
    await run.call("GET scale", "GET", widgets(run, "w1", sub="scale"))
    await run.call(
        "PATCH scale",
        "PATCH",
        widgets(run, "w1", sub="scale"),
        body={"spec": {"replicas": 4}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "object after scaling",
        "GET",
        widgets(run, "w1"),
        project=only("spec", "metadata.generation"),
    )
    await run.call("unknown subresource", "GET", widgets(run, "w1", sub="nope"))


@check("crd-deletion", "Deleting a CRD removes its objects and stops serving it", namespace=True)
async def _crd_deletion(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await run.ok("POST", widgets(run), body=widget(run, "w1"))
    await run.call(
        "delete the CRD",
        "DELETE",
        f"{CRD_PATH}/widgets.{run.group}",
        project=lambda body: {
            "finalizers": body["metadata"].get("finalizers"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
            "Terminating": [
                (c.get("type"), c.get("status"))
                for c in (body.get("status") or {}).get("conditions") or []
                if c.get("type") == "Terminating"
            ],
        },
    )
    await run.gone(f"{CRD_PATH}/widgets.{run.group}", what="the CRD")
    await run.call("list after", "GET", widgets(run))
