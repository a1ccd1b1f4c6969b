"""The 25 conformance checks of the kubesim specification (§12), as scenarios run on both servers.

Where the specification looks at kubesim's request log or at a fresh cluster, the scenario looks
at what a client can see on a shared cluster instead (the named default namespaces, the check's own
namespace, its own labels).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    config_map,
    core,
    event_summary,
    generation,
    install_crd,
    names,
    rv,
    wait_for,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check

DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


def _aggregated_entries(body: Any, wanted: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The aggregated-discovery entries of the wanted ``group → resources`` (as served)."""
    out: dict[str, Any] = {}
    for item in (body or {}).get("items") or []:
        group = item.get("metadata", {}).get("name", "")
        if group not in wanted:
            continue
        for version in item.get("versions") or []:
            for resource in version.get("resources") or []:
                if resource.get("resource") in wanted[group]:
                    # Subresources keyed by name: a missing one is its own difference.
                    entry = dict(resource)
                    entry["subresources"] = {
                        sub.get("subresource"): sub for sub in resource.get("subresources") or []
                    }
                    out[f"{group}/{version.get('version')}/{resource['resource']}"] = entry
    return out


@check("spec-01-kubectl-get-namespaces", "§12.1: kubectl get ns, aggregated discovery")
async def _kubectl_get_namespaces(run: Run) -> None:
    await run.kubectl("kubectl get ns", "get", "namespaces", *DEFAULT_NAMESPACES)
    core_discovery = await run.call(
        "GET /api (aggregated)",
        "GET",
        "/api",
        accept=AGGREGATED,
        project=lambda body: _aggregated_entries(
            body, {"": ("configmaps", "namespaces", "pods", "secrets", "services", "events")}
        ),
    )
    run.fact("/api answered aggregated", core_discovery.headers.get("content-type"))
    await run.call(
        "GET /apis (aggregated)",
        "GET",
        "/apis",
        accept=AGGREGATED,
        project=lambda body: _aggregated_entries(
            body,
            {
                "apps": ("deployments", "statefulsets"),
                "apiextensions.k8s.io": ("customresourcedefinitions",),
                "coordination.k8s.io": ("leases",),
            },
        ),
    )


@check("spec-02-list-namespaces", "§12.2: namespace LIST resourceVersions, /version")
async def _list_namespaces(run: Run) -> None:
    listed = await run.request("GET", "/api/v1/namespaces")
    body = listed.object()
    list_rv = int(body["metadata"]["resourceVersion"])
    items = [item for item in body["items"] if item["metadata"]["name"] in DEFAULT_NAMESPACES]
    run.record(
        "list namespaces",
        listed,
        project=lambda _body: {"defaults": sorted(names({"items": items}))},
    )
    run.fact(
        "every item resourceVersion <= list resourceVersion",
        all(int(item["metadata"]["resourceVersion"]) <= list_rv for item in body["items"]),
    )
    run.fact("list kind", {"kind": body.get("kind"), "apiVersion": body.get("apiVersion")})
    version = await run.request("GET", "/version/")
    info = version.object()
    run.fact(
        "GET /version/",
        {
            "status": version.status,
            "keys": sorted(info),
            "major": info.get("major"),
            "minor": info.get("minor"),
            "gitVersion starts with v1.": str(info.get("gitVersion", "")).startswith("v1."),
        },
    )


@check("spec-03-create-twice", "§12.3: 409 AlreadyExists on a duplicate create")
async def _create_twice(run: Run) -> None:
    await run.call("create", "POST", core(run, "configmaps"), body=config_map("x"))
    await run.call("create again", "POST", core(run, "configmaps"), body=config_map("x"))


@check("spec-04-create-in-missing-namespace", "§12.4: 404 for a missing namespace", namespace=False)
async def _create_in_missing_namespace(run: Run) -> None:
    await run.call(
        "create",
        "POST",
        f"/api/v1/namespaces/{run.ns}/configmaps",
        body=config_map("x"),
    )


@check("spec-05-stale-update", "§12.5: 409 Conflict on a stale PUT, 422 on a CR PUT without RV")
async def _stale_update(run: Run) -> None:
    created = await run.call("create", "POST", core(run, "configmaps"), body=config_map("x"))
    stale = created.object()
    await run.call(
        "update",
        "PUT",
        core(run, "configmaps", "x"),
        body={**stale, "data": {"k": "v2"}},
    )
    await run.call(
        "update with the stale resourceVersion",
        "PUT",
        core(run, "configmaps", "x"),
        body={**stale, "data": {"k": "v3"}},
    )
    await install_crd(run, widget_crd(run))
    await run.call("create widget", "POST", widgets(run), body=widget(run, "w1"))
    await run.call(
        "PUT widget without resourceVersion",
        "PUT",
        widgets(run, "w1"),
        body=widget(run, "w1", {"size": 2}),
    )


@check(
    "spec-06-strategic-patch-no-op", "§12.6: SMP keeps keys and bumps RV; a no-op patch does not"
)
async def _strategic_patch_no_op(run: Run) -> None:
    created = await run.call("create", "POST", core(run, "configmaps"), body=config_map("x"))
    patched = await run.call(
        "strategic patch",
        "PATCH",
        core(run, "configmaps", "x"),
        body={"data": {"k2": "v2"}},
        content_type=STRATEGIC_PATCH,
    )
    run.fact("patch changed the resourceVersion", rv(patched) != rv(created))
    # The root-CA publisher may write kube-root-ca.crt into the fresh namespace at any moment.
    stream = await run.watch(
        core(run, "configmaps"),
        {"resourceVersion": rv(patched), "fieldSelector": "metadata.name!=kube-root-ca.crt"},
    )
    repeated = await run.call(
        "same patch again",
        "PATCH",
        core(run, "configmaps", "x"),
        body={"data": {"k2": "v2"}},
        content_type=STRATEGIC_PATCH,
    )
    run.fact("no-op patch kept the resourceVersion", rv(repeated) == rv(patched))
    await run.ok("POST", core(run, "configmaps"), body=config_map("marker"))
    events = await stream.events_until(
        lambda event: event.get("object", {}).get("metadata", {}).get("name") == "marker"
    )
    run.fact("events after the first patch", [event_summary(event) for event in events])


@check("spec-07-custom-object-patch-types", "§12.7: a CR dict patch sent as json-patch is a 400")
async def _custom_object_patch_types(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    created = await run.call("create", "POST", widgets(run), body=widget(run, "w1"))
    await run.call(
        "patch as json-patch (CustomObjectsApi default)",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"size": 2}},
        content_type=JSON_PATCH,
    )
    merged = await run.call(
        "patch as merge-patch",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"size": 2}},
        content_type=MERGE_PATCH,
    )
    run.fact("generation grew by one", (generation(created), generation(merged)))


@check("spec-08-custom-object-strategic-patch", "§12.8: strategic merge patch of a CR is a 415")
async def _custom_object_strategic_patch(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await run.ok("POST", widgets(run), body=widget(run, "w1"))
    await run.call(
        "strategic patch",
        "PATCH",
        widgets(run, "w1"),
        body={"spec": {"size": 2}},
        content_type=STRATEGIC_PATCH,
    )


@check(
    "spec-09-custom-object-create-status", "§12.9: status dropped on create, labels keep generation"
)
async def _custom_object_create_status(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await run.call(
        "create with status",
        "POST",
        widgets(run),
        body=widget(run, "w1", status={"ready": True}),
    )
    await run.call(
        "label it",
        "PATCH",
        widgets(run, "w1"),
        body={"metadata": {"labels": {"a": "b"}}},
        content_type=MERGE_PATCH,
    )


@check("spec-10-custom-object-status-patch", "§12.10: /status patch ignores spec, keeps generation")
async def _custom_object_status_patch(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    created = await run.call("create", "POST", widgets(run), body=widget(run, "w1"))
    patched = await run.call(
        "patch status",
        "PATCH",
        widgets(run, "w1", sub="status"),
        body={"spec": {"size": 5}, "status": {"ready": True}},
        content_type=MERGE_PATCH,
    )
    run.fact("status patch changed the resourceVersion", rv(patched) != rv(created))
    await run.call("get status", "GET", widgets(run, "w1", sub="status"))


@check("spec-11-label-selectors", "§12.11: set-based label selectors, a malformed one is a 400")
async def _label_selectors(run: Run) -> None:
    labels = {
        "a-db": {"env": "a", "tier": "db"},
        "a-web": {"env": "a", "tier": "web"},
        "b-none": {"env": "b"},
        "c-web": {"env": "c", "tier": "web"},
        "a-legacy": {"env": "a", "legacy": "true"},
        "unlabelled": {},
    }
    for name, label_set in labels.items():
        # `cf` marks the check's own objects (the namespace also holds kube-root-ca.crt).
        await run.ok(
            "POST", core(run, "configmaps"), body=config_map(name, labels={"cf": "s", **label_set})
        )
    for selector in ("env in (a,b),!legacy,tier!=db", "cf,env notin (a)", "tier", "env=a,tier=web"):
        await run.call(
            f"select {selector}",
            "GET",
            core(run, "configmaps"),
            query={"labelSelector": selector},
            project=lambda body: sorted(names(body)),
        )
    await run.call(
        "malformed selector",
        "GET",
        core(run, "configmaps"),
        query={"labelSelector": "env in (a"},
    )


@check(
    "spec-12-field-selectors", "§12.12: metadata.name field selector; unsupported field is a 400"
)
async def _field_selectors(run: Run) -> None:
    for name in ("x", "y"):
        await run.ok("POST", core(run, "configmaps"), body=config_map(name))
    await run.call(
        "select metadata.name=x",
        "GET",
        core(run, "configmaps"),
        query={"fieldSelector": "metadata.name=x"},
        project=names,
    )
    await run.call(
        "select metadata.name!=x",
        "GET",
        core(run, "configmaps"),
        query={"fieldSelector": "metadata.name!=x,metadata.name!=kube-root-ca.crt"},
        project=names,
    )
    await run.call(
        "unsupported field",
        "GET",
        core(run, "configmaps"),
        query={"fieldSelector": "spec.foo=x"},
    )


@check("spec-13-pagination", "§12.13: limit/continue/remainingItemCount; a garbage token is a 400")
async def _pagination(run: Run) -> None:
    # Secrets: a fresh namespace has none on either server (ConfigMaps get kube-root-ca.crt).
    for index in range(5):
        await run.ok(
            "POST",
            core(run, "secrets"),
            body={"metadata": {"name": f"s{index}"}, "stringData": {"k": "v"}},
        )
    seen: list[str] = []
    token = ""
    page = 0
    while True:
        page += 1
        query = {"limit": "2"}
        if token:
            query["continue"] = token
        answer = await run.call(
            f"page {page}",
            "GET",
            core(run, "secrets"),
            query=query,
            project=lambda body: {"names": names(body), "metadata": body.get("metadata")},
        )
        seen += names(answer.body)
        token = str(answer.object().get("metadata", {}).get("continue") or "")
        if not token or page > 5:
            break
    run.fact("every item exactly once", sorted(seen) == [f"s{i}" for i in range(5)])
    await run.call(
        "garbage continue token",
        "GET",
        core(run, "secrets"),
        query={"limit": "2", "continue": "garbage"},
    )


@check("spec-14-watch-sequence", "§12.14: ADDED, MODIFIED, DELETED from a list RV; timeoutSeconds")
async def _watch_sequence(run: Run) -> None:
    listed = await run.request("GET", core(run, "configmaps"), query={"labelSelector": "w=1"})
    list_rv = listed.object()["metadata"]["resourceVersion"]
    stream = await run.watch(
        core(run, "configmaps"),
        {"resourceVersion": list_rv, "timeoutSeconds": "3", "labelSelector": "w=1"},
    )
    await run.ok("POST", core(run, "configmaps"), body=config_map("x", labels={"w": "1"}))
    patched = await run.ok(
        "PATCH",
        core(run, "configmaps", "x"),
        body={"data": {"k": "v2"}},
        content_type=MERGE_PATCH,
    )
    await run.ok("DELETE", core(run, "configmaps", "x"))
    events = await stream.until_end(within=30)
    run.fact("events until the stream ended", [event_summary(event) for event in events])
    deleted = [event for event in events if event.get("type") == "DELETED"]
    run.fact(
        "DELETED carries a higher resourceVersion than the last update",
        bool(deleted)
        and int(deleted[0]["object"]["metadata"]["resourceVersion"]) > int(rv(patched)),
    )


@check("spec-15-watch-too-old", "§12.15: a watch from a resourceVersion the server no longer has")
async def _watch_too_old(run: Run) -> None:
    # Only a compacted storage makes an old resourceVersion reliably gone on the real server:
    # its watch cache replays whatever its window still holds (all of a young cluster's
    # history). Events have no watch cache there, so after a compaction a watch from RV 1 is
    # answered by etcd: expired. kubesim's history starts after its bootstrap.
    await run.compact()
    stream = await run.watch(core(run, "events"), {"resourceVersion": "1"})
    run.fact("watch status", stream.status)
    first = await stream.next_event(within=30)
    run.fact("first event", first)
    run.fact("stream ended after it", await stream.next_event(within=30) is None)


@check(
    "spec-16-watch-label-transitions", "§12.16: relabelled objects leave and enter a selector watch"
)
async def _watch_label_transitions(run: Run) -> None:
    created = await run.ok(
        "POST", core(run, "configmaps"), body=config_map("x", labels={"app": "a"})
    )
    stream = await run.watch(
        core(run, "configmaps"), {"labelSelector": "app=a", "resourceVersion": rv(created)}
    )
    for value in ("b", "a"):
        await run.ok(
            "PATCH",
            core(run, "configmaps", "x"),
            body={"metadata": {"labels": {"app": value}}},
            content_type=MERGE_PATCH,
        )
    events = await stream.events_until(lambda event: event.get("type") == "ADDED")
    run.fact("events", [event_summary(event) for event in events])


@check("spec-17-kubectl-wait", "§12.17: kubectl wait --for=jsonpath; streaming list with bookmark")
async def _kubectl_wait(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("demo", {"a": "1"}))
    await run.kubectl(
        "kubectl wait",
        "wait",
        "--for=jsonpath={.data.a}=1",
        "configmap/demo",
        f"--namespace={run.ns}",
        "--timeout=30s",
    )
    stream = await run.watch(
        core(run, "configmaps"),
        {
            "sendInitialEvents": "true",
            "resourceVersionMatch": "NotOlderThan",
            "allowWatchBookmarks": "true",
            "fieldSelector": "metadata.name=demo",
        },
    )
    events = await stream.events_until(lambda event: event.get("type") == "BOOKMARK")
    run.fact("streaming list", [event_summary(event) for event in events])


CM_YAML = """apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
data:
  a: "1"
"""

CM_YAML_UNKNOWN = """apiVersion: v1
kind: ConfigMap
metadata:
  name: demo2
data:
  a: "1"
bogus: true
"""


@check("spec-18-kubectl-apply-validation", "§12.18: kubectl apply with strict and no validation")
async def _kubectl_apply_validation(run: Run) -> None:
    await run.kubectl("apply", "apply", f"--namespace={run.ns}", "-f", "-", stdin=CM_YAML)
    await run.kubectl(
        "apply with an unknown field",
        "apply",
        f"--namespace={run.ns}",
        "-f",
        "-",
        stdin=CM_YAML_UNKNOWN,
    )
    await run.kubectl(
        "apply --validate=false",
        "apply",
        "--validate=false",
        f"--namespace={run.ns}",
        "-f",
        "-",
        stdin=CM_YAML_UNKNOWN,
    )
    await run.call(
        "stored object",
        "GET",
        core(run, "configmaps", "demo2"),
        project=lambda body: {key: body.get(key) for key in ("data", "bogus")},
    )


def _deployment_yaml(env_value: str, with_e: bool) -> str:
    env = ["        - name: A\n          value: '1'\n"]
    if with_e:
        env.append("        - name: E\n          value: '5'\n")
    env.append(f"        - name: F\n          value: '{env_value}'\n")
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep\nspec:\n  replicas: 1\n"
        "  selector:\n    matchLabels: {app: dep}\n  template:\n    metadata:\n"
        "      labels: {app: dep}\n    spec:\n      containers:\n      - name: app\n"
        "        image: nginx:1\n        env:\n" + "".join(env) + "      - name: side\n"
        "        image: busybox:1\n"
    )


@check("spec-19-kubectl-apply-deployment", "§12.19: a second kubectl apply is a correct SMP")
async def _kubectl_apply_deployment(run: Run) -> None:
    path = f"/apis/apps/v1/namespaces/{run.ns}/deployments/dep"
    await run.kubectl(
        "first apply",
        "apply",
        f"--namespace={run.ns}",
        "-f",
        "-",
        stdin=_deployment_yaml("5", True),
    )
    first = await run.ok("GET", path)
    await run.kubectl(
        "second apply",
        "apply",
        f"--namespace={run.ns}",
        "-f",
        "-",
        stdin=_deployment_yaml("6", False),
    )
    second = await run.call(
        "after the second apply",
        "GET",
        path,
        project=lambda body: [
            {"name": c.get("name"), "env": c.get("env")}
            for c in body["spec"]["template"]["spec"]["containers"]
        ],
    )
    run.fact("generation", (generation(first), generation(second)))


@check("spec-20-kubectl-label-namespace", "§12.20: kubectl label ns, then get ns -l")
async def _kubectl_label_namespace(run: Run) -> None:
    await run.kubectl("label", "label", "namespace", run.ns, f"team={run.token}")
    await run.kubectl("get -l", "get", "namespaces", "-l", f"team={run.token}", "-o", "name")


@check(
    "spec-21-kubectl-create-namespace",
    "§12.21: kubectl create namespace sends protobuf",
    namespace=False,
)
async def _kubectl_create_namespace(run: Run) -> None:
    run.delete_on_cleanup(f"/api/v1/namespaces/{run.ns}")
    await run.kubectl("create namespace", "create", "namespace", run.ns)
    await run.call(
        "namespace",
        "GET",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda body: {"spec": body.get("spec"), "status": body.get("status")},
    )


@check("spec-22-custom-object-finalizer", "§12.22: delete with a finalizer, add one, release it")
async def _custom_object_finalizer(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await run.call(
        "create",
        "POST",
        widgets(run),
        body=widget(run, "w1", metadata={"name": "w1", "finalizers": ["example.com/cleanup"]}),
    )
    stream = await run.watch(widgets(run), {"resourceVersion": "0"})
    await run.call("delete", "DELETE", widgets(run, "w1"))
    await run.call(
        "add a finalizer while deleting",
        "PATCH",
        widgets(run, "w1"),
        body={"metadata": {"finalizers": ["example.com/cleanup", "example.com/more"]}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "remove the finalizer",
        "PATCH",
        widgets(run, "w1"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    await run.call("get", "GET", widgets(run, "w1"))
    events = await stream.events_until(lambda event: event.get("type") == "DELETED")
    run.fact("events", [event_summary(event) for event in events])


async def _owner_and_child(run: Run, owner: str) -> dict[str, Any]:
    created = await run.ok("POST", widgets(run), body=widget(run, owner))
    uid = created.metadata()["uid"]
    child = config_map(
        f"{owner}-child",
        ownerReferences=[
            {
                "apiVersion": f"{run.group}/v1",
                "kind": "Widget",
                "name": owner,
                "uid": uid,
                "blockOwnerDeletion": True,
            }
        ],
    )
    await run.ok("POST", core(run, "configmaps"), body=child)
    return created.object()


@check(
    "spec-23-garbage-collection", "§12.23: Background, Orphan, Foreground deletion of a CR owner"
)
async def _garbage_collection(run: Run) -> None:
    await install_crd(run, widget_crd(run))
    await _owner_and_child(run, "bg")
    await run.call(
        "delete in the background",
        "DELETE",
        widgets(run, "bg"),
        body={"propagationPolicy": "Background"},
    )
    await run.gone(core(run, "configmaps", "bg-child"), what="the background dependent")
    run.fact("background dependent gone", True)

    await _owner_and_child(run, "orphan")
    await run.call(
        "delete orphaning", "DELETE", widgets(run, "orphan"), body={"propagationPolicy": "Orphan"}
    )
    await run.gone(widgets(run, "orphan"), what="the orphaning owner")
    await run.call(
        "orphaned dependent",
        "GET",
        core(run, "configmaps", "orphan-child"),
        project=lambda body: {"ownerReferences": body["metadata"].get("ownerReferences")},
    )

    await _owner_and_child(run, "fg")
    # The dependent holds the owner until the check releases it: the foreground state is stable.
    await run.ok(
        "PATCH",
        core(run, "configmaps", "fg-child"),
        body={"metadata": {"finalizers": ["example.com/hold"]}},
        content_type=MERGE_PATCH,
    )
    deleted = await run.call(
        "delete in the foreground",
        "DELETE",
        widgets(run, "fg"),
        body={"propagationPolicy": "Foreground"},
    )
    run.fact("owner finalizers", deleted.metadata().get("finalizers"))
    await wait_for(
        run,
        core(run, "configmaps", "fg-child"),
        lambda obj: bool(obj["metadata"].get("deletionTimestamp")),
        what="the foreground dependent marked for deletion",
    )
    await run.call(
        "owner while the dependent is held",
        "GET",
        widgets(run, "fg"),
        project=lambda body: {
            "finalizers": body["metadata"].get("finalizers"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
        },
    )
    await run.ok(
        "PATCH",
        core(run, "configmaps", "fg-child"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    await run.gone(widgets(run, "fg"), what="the foreground owner")
    run.fact("foreground owner gone after its dependent", True)


@check(
    "spec-24-namespace-termination", "§12.24: kubectl delete ns, 403 while terminating, immortal ns"
)
async def _namespace_termination(run: Run) -> None:
    await run.ok(
        "POST",
        core(run, "configmaps"),
        body=config_map("held", finalizers=["example.com/hold"]),
    )
    # kubectl deletes the namespace and waits; the held ConfigMap keeps it Terminating meanwhile.
    deleting = asyncio.create_task(
        run.kubectl("kubectl delete ns", "delete", "namespace", run.ns, "--timeout=90s")
    )
    await wait_for(
        run,
        core(run, "configmaps", "held"),
        lambda obj: bool(obj["metadata"].get("deletionTimestamp")),
        what="the namespace controller deleting the held ConfigMap",
    )
    await run.call(
        "namespace while terminating",
        "GET",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda body: {
            "phase": body.get("status", {}).get("phase"),
            "spec": body.get("spec"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
        },
    )
    await run.call(
        "create while terminating", "POST", core(run, "configmaps"), body=config_map("late")
    )
    await run.ok(
        "PATCH",
        core(run, "configmaps", "held"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    await deleting
    await run.call("namespace after", "GET", f"/api/v1/namespaces/{run.ns}")
    await run.kubectl("kubectl delete ns default", "delete", "namespace", "default")
