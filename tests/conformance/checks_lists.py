"""LIST: selectors, pagination, list bodies, deletecollection, and discovery documents."""

from __future__ import annotations

from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import (
    apps,
    config_map,
    core,
    deployment,
    install_crd,
    names,
    pod,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check


@check(
    "list-body",
    "A LIST body: kind, apiVersion, metadata; built-in items lack TypeMeta, CR items have it",
)
async def _list_body(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x", labels={"cf": "l"}))
    await run.call("list configmaps", "GET", core(run, "configmaps"), query={"labelSelector": "cf"})
    await install_crd(run, widget_crd(run))
    await run.ok("POST", widgets(run), body=widget(run, "w1"))
    await run.call("list widgets", "GET", widgets(run))
    await run.call("get configmap", "GET", core(run, "configmaps", "x"))


@check("list-pagination-selected", "limit/continue with a label selector: no remainingItemCount")
async def _pagination_selected(run: Run) -> None:
    for index in range(4):
        await run.ok(
            "POST", core(run, "configmaps"), body=config_map(f"c{index}", labels={"cf": "page"})
        )
    token = ""
    for page in range(1, 4):
        query = {"limit": "3", "labelSelector": "cf=page"}
        if token:
            query["continue"] = token
        answer = await run.call(
            f"page {page}",
            "GET",
            core(run, "configmaps"),
            query=query,
            project=lambda body: {"names": names(body), "metadata": body.get("metadata")},
        )
        token = str(answer.object().get("metadata", {}).get("continue") or "")
        if not token:
            break


@check("list-field-selectors", "Field selectors of Pods, Secrets, Events and Namespaces", pods=True)
async def _kind_field_selectors(run: Run) -> None:
    await run.ok("POST", core(run, "secrets"), body={"metadata": {"name": "o"}, "type": "Opaque"})
    await run.ok(
        "POST",
        core(run, "secrets"),
        body={
            "metadata": {"name": "t"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
    )
    await run.call(
        "secrets type=kubernetes.io/tls",
        "GET",
        core(run, "secrets"),
        query={"fieldSelector": "type=kubernetes.io/tls"},
        project=names,
    )
    unscheduled = pod("p1")
    unscheduled["spec"]["nodeName"] = "cf-no-such-node"
    await run.ok("POST", core(run, "pods"), body=unscheduled)
    for selector in (
        "spec.nodeName=cf-no-such-node",
        "status.phase=Pending",
        "status.phase!=Pending",
    ):
        await run.call(
            f"pods {selector}",
            "GET",
            core(run, "pods"),
            query={"fieldSelector": selector},
            project=names,
        )
    await run.call(
        "pods unsupported field",
        "GET",
        core(run, "pods"),
        query={"fieldSelector": "spec.restartPolicy=Always"},
    )
    await run.ok("POST", core(run, "configmaps"), body=config_map("target"))
    event = {
        "metadata": {"name": "target.1"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "target",
            "namespace": run.ns,
        },
        "reason": "Tested",
        "message": "m",
        "type": "Warning",
    }
    await run.ok("POST", core(run, "events"), body=event)
    for selector in (
        f"involvedObject.name=target,involvedObject.namespace={run.ns},involvedObject.kind=ConfigMap",
        "type=Warning",
        "reason=Other",
    ):
        await run.call(
            f"events {selector}",
            "GET",
            core(run, "events"),
            query={"fieldSelector": selector},
            project=names,
        )
    await run.call(
        "namespaces by name and phase",
        "GET",
        "/api/v1/namespaces",
        query={"fieldSelector": f"metadata.name={run.ns},status.phase=Active"},
        project=names,
    )
    await install_crd(run, widget_crd(run))
    await run.call(
        "custom objects unsupported field",
        "GET",
        widgets(run),
        query={"fieldSelector": "spec.size=1"},
    )
    await run.call(
        "all-namespace list by namespace",
        "GET",
        "/api/v1/secrets",
        query={"fieldSelector": f"metadata.namespace={run.ns},type=Opaque"},
        project=names,
    )


@check("list-label-selector-syntax", "Label selector syntax: ==, !=, exists, !, gt/lt, bad values")
async def _label_selector_syntax(run: Run) -> None:
    for name, labels in {
        "one": {"n": "1", "cf": "s"},
        "five": {"n": "5", "cf": "s"},
        "none": {"cf": "s"},
    }.items():
        await run.ok("POST", core(run, "configmaps"), body=config_map(name, labels=labels))
    for selector in ("cf,n==1", "cf,n!=1", "cf,!n", "cf,n>2", "cf,n<2", "cf , n in ( 1 , 5 )"):
        await run.call(
            f"select {selector}",
            "GET",
            core(run, "configmaps"),
            query={"labelSelector": selector},
            project=lambda body: sorted(names(body)),
        )
    for selector in ("n>x", "bad key!", "n=bad value!", "n in ()", "=x"):
        await run.call(
            f"invalid {selector}", "GET", core(run, "configmaps"), query={"labelSelector": selector}
        )


@check("list-deletecollection", "DELETE on a collection with a label selector")
async def _delete_collection(run: Run) -> None:
    for name, value in (("a", "yes"), ("b", "yes"), ("c", "no")):
        await run.ok("POST", core(run, "configmaps"), body=config_map(name, labels={"cf": value}))
    await run.call(
        "deletecollection",
        "DELETE",
        core(run, "configmaps"),
        query={"labelSelector": "cf=yes"},
        project=lambda body: {"kind": body.get("kind"), "items": sorted(names(body))},
    )
    await run.call(
        "left",
        "GET",
        core(run, "configmaps"),
        query={"labelSelector": "cf"},
        project=lambda body: sorted(names(body)),
    )


@check(
    "list-delete-answers",
    "DELETE answers: Status for most kinds, the object for pods and namespaces",
    pods=True,
)
async def _delete_answers(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    await run.call("delete configmap", "DELETE", core(run, "configmaps", "x"))
    unscheduled = pod("p")
    unscheduled["spec"]["nodeName"] = "cf-no-such-node"
    await run.ok("POST", core(run, "pods"), body=unscheduled)
    await run.call(
        "delete pod",
        "DELETE",
        core(run, "pods", "p"),
        query={"gracePeriodSeconds": "0"},
        project=lambda body: {
            "kind": body.get("kind"),
            "deletionTimestamp": body.get("metadata", {}).get("deletionTimestamp"),
            "deletionGracePeriodSeconds": body.get("metadata", {}).get(
                "deletionGracePeriodSeconds"
            ),
        },
    )
    await run.ok("POST", core(run, "serviceaccounts"), body={"metadata": {"name": "sa"}})
    await run.call(
        "delete serviceaccount",
        "DELETE",
        core(run, "serviceaccounts", "sa"),
        project=lambda body: {
            "kind": body.get("kind"),
            "name": body.get("metadata", {}).get("name"),
        },
    )
    await run.ok("POST", apps(run, "deployments"), body=deployment("d"))
    await run.call("delete deployment", "DELETE", apps(run, "deployments", "d"))
    await install_crd(run, widget_crd(run))
    await run.ok("POST", widgets(run), body=widget(run, "w"))
    await run.call("delete widget", "DELETE", widgets(run, "w"))


def _discovery_entries(body: Any, resources: tuple[str, ...]) -> dict[str, Any]:
    """The APIResourceList entries of ``resources`` and their subresources, keyed by name."""
    return {
        entry["name"]: entry
        for entry in (body or {}).get("resources") or []
        if entry.get("name", "").split("/")[0] in resources
    }


@check(
    "discovery-legacy",
    "Legacy discovery: /api, /api/v1, /apis/apps/v1, a CRD group",
    namespace=True,
)
async def _discovery_legacy(run: Run) -> None:
    await run.call(
        "GET /api",
        "GET",
        "/api",
        project=lambda body: {
            key: value for key, value in body.items() if key != "serverAddressByClientCIDRs"
        },
    )
    await run.call(
        "GET /api/v1",
        "GET",
        "/api/v1",
        project=lambda body: {
            "kind": body.get("kind"),
            "groupVersion": body.get("groupVersion"),
            "resources": _discovery_entries(
                body, ("configmaps", "namespaces", "pods", "secrets", "services")
            ),
        },
    )
    await run.call(
        "GET /apis/apps/v1",
        "GET",
        "/apis/apps/v1",
        project=lambda body: {
            "kind": body.get("kind"),
            "groupVersion": body.get("groupVersion"),
            "resources": _discovery_entries(body, ("deployments", "statefulsets", "replicasets")),
        },
    )
    await run.call("GET /apis/apps", "GET", "/apis/apps")
    await install_crd(run, widget_crd(run))
    await run.call("GET /apis/<crd group>", "GET", f"/apis/{run.group}")
    await run.call("GET /apis/<crd group>/v1", "GET", f"/apis/{run.group}/v1")
    aggregated = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    )
    await run.call(
        "aggregated CRD group",
        "GET",
        "/apis",
        accept=aggregated,
        project=lambda body: [
            item
            for item in body.get("items") or []
            if item.get("metadata", {}).get("name") == run.group
        ],
    )
