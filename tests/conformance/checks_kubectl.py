"""kubectl's own behaviour against each server: printed Tables, apply of a List, patch, scale."""

from __future__ import annotations

import json

from tests.conformance.harness import Run
from tests.conformance.kube import apps, config_map, core, deployment, wait_for
from tests.conformance.registry import check


def _ready(obj: dict[str, object]) -> bool:
    status = obj.get("status")
    return isinstance(status, dict) and status.get("readyReplicas") == status.get("replicas") == 2


@check("kubectl-get-pods", "kubectl get pods / deploy / all: the printed columns", pods=True)
async def _get_pods(run: Run) -> None:
    await run.ok("POST", apps(run, "deployments"), body=deployment("web", replicas=2))
    await wait_for(run, apps(run, "deployments", "web"), _ready, what="deployment web ready")

    async def pods_ready() -> bool:
        listed = await run.request("GET", core(run, "pods"), query={"labelSelector": "app=web"})
        items = listed.object().get("items") or []
        return len(items) == 2 and all(
            any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (p.get("status") or {}).get("conditions") or []
            )
            for p in items
        )

    await run.eventually(pods_ready, what="both pods ready")
    # Pod names carry the ReplicaSet's template hash and a random suffix: mask them.
    listed = await run.ok("GET", core(run, "pods"), query={"labelSelector": "app=web"})
    for index, item in enumerate(sorted(i["metadata"]["name"] for i in listed.object()["items"])):
        run.substitutions[item] = f"web-<pod{index}>"
    replica_sets = await run.ok("GET", apps(run, "replicasets"), query={"labelSelector": "app=web"})
    for item in replica_sets.object()["items"]:
        run.substitutions[item["metadata"]["name"]] = "web-<rs>"
    await run.kubectl("get pods", "get", "pods", f"--namespace={run.ns}", "-l", "app=web")
    await run.kubectl(
        "get pods -o wide", "get", "pods", f"--namespace={run.ns}", "-l", "app=web", "-o", "wide"
    )
    await run.kubectl("get deploy", "get", "deployments", f"--namespace={run.ns}")
    await run.kubectl(
        "get deploy -o wide", "get", "deployments", f"--namespace={run.ns}", "-o", "wide"
    )
    await run.kubectl("get rs", "get", "replicasets", f"--namespace={run.ns}")
    await run.kubectl("get all", "get", "all", f"--namespace={run.ns}", "-l", "app=web")


@check("kubectl-get-others", "kubectl get of ConfigMaps, Secrets, Services, Namespaces, Events")
async def _get_others(run: Run) -> None:
    await run.ok(
        "POST", core(run, "configmaps"), body=config_map("c1", {"a": "1"}, labels={"cf": "k"})
    )
    await run.ok(
        "POST",
        core(run, "secrets"),
        body={"metadata": {"name": "s1", "labels": {"cf": "k"}}, "stringData": {"a": "1"}},
    )
    await run.kubectl("get cm", "get", "configmaps", f"--namespace={run.ns}", "-l", "cf=k")
    await run.kubectl("get secrets", "get", "secrets", f"--namespace={run.ns}", "-l", "cf=k")
    await run.kubectl("get ns", "get", "namespace", run.ns)
    await run.kubectl("get missing", "get", "configmap", "nope", f"--namespace={run.ns}")
    await run.kubectl("get unknown kind", "get", "nopes", f"--namespace={run.ns}")
    await run.kubectl(
        "get cm -o name", "get", "cm", f"--namespace={run.ns}", "-l", "cf=k", "-o", "name"
    )
    await run.kubectl(
        "get cm -o jsonpath", "get", "cm", "c1", f"--namespace={run.ns}", "-o", "jsonpath={.data.a}"
    )


@check("kubectl-apply-list", "kubectl apply -f of a kind: List, as kubectl get -o yaml writes it")
async def _apply_list(run: Run) -> None:
    for name in ("a", "b"):
        await run.ok(
            "POST",
            core(run, "configmaps"),
            body=config_map(name, {"k": name}, labels={"cf": "list"}),
        )
    code, out, _err = await run.kubectl(
        None, "get", "configmaps", f"--namespace={run.ns}", "-l", "cf=list", "-o", "json"
    )
    listed = json.loads(out) if code == 0 else {}
    run.fact(
        "get -o json list", {"kind": listed.get("kind"), "apiVersion": listed.get("apiVersion")}
    )
    for item in listed.get("items", []):
        item["data"]["k"] = item["data"]["k"] + "-changed"
        item["metadata"]["name"] = item["metadata"]["name"] + "2"
        for volatile in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
            item["metadata"].pop(volatile, None)
    await run.kubectl(
        "apply -f list", "apply", f"--namespace={run.ns}", "-f", "-", stdin=json.dumps(listed)
    )
    await run.kubectl(
        "apply -f list again", "apply", f"--namespace={run.ns}", "-f", "-", stdin=json.dumps(listed)
    )
    await run.kubectl(
        "apply --server-side -f list",
        "apply",
        "--server-side",
        f"--namespace={run.ns}",
        "-f",
        "-",
        stdin=json.dumps(listed),
    )
    await run.kubectl(
        "get the applied",
        "get",
        "configmaps",
        "a2",
        "b2",
        f"--namespace={run.ns}",
        "-o",
        "jsonpath={.items[*].data.k}",
    )


@check(
    "kubectl-edit-verbs", "kubectl patch, scale, annotate, delete, create -f, replace", pods=True
)
async def _edit_verbs(run: Run) -> None:
    ns = f"--namespace={run.ns}"
    await run.kubectl(
        "create -f", "create", ns, "-f", "-", stdin=json.dumps(deployment("web", replicas=1))
    )
    await run.kubectl(
        "create -f again", "create", ns, "-f", "-", stdin=json.dumps(deployment("web", replicas=1))
    )
    await run.kubectl("scale", "scale", ns, "deployment/web", "--replicas=2")
    await run.kubectl(
        "patch strategic",
        "patch",
        ns,
        "deployment",
        "web",
        "-p",
        '{"metadata":{"labels":{"x":"1"}}}',
    )
    await run.kubectl(
        "patch merge",
        "patch",
        ns,
        "deployment",
        "web",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"y":"2"}}}',
    )
    await run.kubectl(
        "patch json",
        "patch",
        ns,
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/labels/x"}]',
    )
    await run.kubectl("annotate", "annotate", ns, "deployment", "web", "note=hello")
    await run.kubectl("label --overwrite missing", "label", ns, "deployment", "nope", "a=b")
    await run.kubectl(
        "get labels and replicas",
        "get",
        ns,
        "deployment",
        "web",
        "-o",
        "jsonpath={.metadata.labels} {.spec.replicas} {.metadata.annotations.note}",
    )
    await wait_for(run, apps(run, "deployments", "web"), _ready, what="deployment web scaled")
    await run.kubectl("rollout status", "rollout", "status", ns, "deployment/web", "--timeout=60s")
    await run.kubectl("delete", "delete", ns, "deployment", "web", "--timeout=60s")
    await run.kubectl("delete missing", "delete", ns, "configmap", "nope")
    await run.kubectl(
        "delete --ignore-not-found", "delete", ns, "configmap", "nope", "--ignore-not-found"
    )
