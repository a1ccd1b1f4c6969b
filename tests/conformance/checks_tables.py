"""Server-side printing: ``as=Table`` columns and cells for the built-in kinds and custom resources."""

from __future__ import annotations

from typing import Any

from tests.conformance.harness import TABLE_ACCEPT, Run
from tests.conformance.kube import (
    apps,
    config_map,
    container,
    core,
    deployment,
    grouped,
    install_crd,
    pod,
    service,
    stateful_set,
    wait_for,
    widget,
    widget_crd,
    widgets,
)
from tests.conformance.registry import check

LABEL = {"cf": "table"}


async def table(run: Run, step: str, path: str, **query: str) -> None:
    """Record the Table of ``path`` (selected by the check's label unless a query is given)."""
    await run.call(
        step,
        "GET",
        path,
        accept=TABLE_ACCEPT,
        query=query or {"labelSelector": "cf=table"},
    )


def _labelled(body: dict[str, Any]) -> dict[str, Any]:
    body.setdefault("metadata", {}).setdefault("labels", {}).update(LABEL)
    return body


def _ready_pod(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@check("table-pods", "Table of Pods: Ready, Status, Restarts, IP, Node columns", pods=True)
async def _pods(run: Run) -> None:
    await run.ok("POST", core(run, "pods"), body=_labelled(pod("p1")))
    await wait_for(run, core(run, "pods", "p1"), _ready_pod, what="pod p1 ready")
    await table(run, "pods", core(run, "pods"))
    await table(run, "one pod", core(run, "pods", "p1"), includeObject="None")


@check("table-deployments", "Table of Deployments and their ReplicaSets", pods=True)
async def _deployments(run: Run) -> None:
    await run.ok("POST", apps(run, "deployments"), body=_labelled(deployment("d1")))
    await wait_for(
        run,
        apps(run, "deployments", "d1"),
        lambda obj: (obj.get("status") or {}).get("readyReplicas") == 1,
        what="deployment d1 ready",
    )
    await table(run, "deployments", apps(run, "deployments"))
    await table(run, "replicasets", apps(run, "replicasets"), labelSelector="app=d1")


@check("table-statefulsets", "Table of StatefulSets", pods=True)
async def _stateful_sets(run: Run) -> None:
    await run.ok("POST", apps(run, "statefulsets"), body=_labelled(stateful_set("s1")))
    await wait_for(
        run,
        apps(run, "statefulsets", "s1"),
        lambda obj: (obj.get("status") or {}).get("readyReplicas") == 1,
        what="statefulset s1 ready",
    )
    await table(run, "statefulsets", apps(run, "statefulsets"))


@check("table-daemonsets", "Table of DaemonSets (columns; counts depend on the nodes)")
async def _daemon_sets(run: Run) -> None:
    body = _labelled(deployment("ds1"))
    body["kind"] = "DaemonSet"
    body["spec"].pop("replicas")
    body["spec"]["template"]["spec"]["nodeSelector"] = {"cf-none": "none"}
    await run.ok("POST", apps(run, "daemonsets"), body=body)
    await table(run, "daemonsets", apps(run, "daemonsets"))


@check("table-services", "Table of Services: Type, Cluster-IP, External-IP, Port(s), Selector")
async def _services(run: Run) -> None:
    await run.ok("POST", core(run, "services"), body=_labelled(service("svc1")))
    await run.ok(
        "POST",
        core(run, "services"),
        body=_labelled(
            service(
                "svc2",
                type="NodePort",
                ports=[{"port": 80, "nodePort": 30999 - int(run.token[:2], 16) % 50}],
            )
        ),
    )
    await run.ok(
        "POST",
        core(run, "services"),
        body=_labelled(service("headless", clusterIP="None")),
    )
    await run.ok(
        "POST",
        core(run, "services"),
        body=_labelled(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "external"},
                "spec": {"type": "ExternalName", "externalName": "example.com"},
            }
        ),
    )
    await table(run, "services", core(run, "services"))


@check("table-secrets-configmaps", "Tables of Secrets, ConfigMaps and ServiceAccounts")
async def _secrets_and_config_maps(run: Run) -> None:
    await run.ok(
        "POST",
        core(run, "secrets"),
        body=_labelled({"metadata": {"name": "s1"}, "stringData": {"a": "1", "b": "2"}}),
    )
    await run.ok(
        "POST",
        core(run, "secrets"),
        body=_labelled(
            {
                "metadata": {"name": "tls"},
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": "", "tls.key": ""},
            }
        ),
    )
    await run.ok(
        "POST", core(run, "configmaps"), body=_labelled(config_map("c1", {"a": "1", "b": "2"}))
    )
    await run.ok(
        "POST",
        core(run, "configmaps"),
        body=_labelled({"metadata": {"name": "c2"}, "binaryData": {"bin": "AAE="}}),
    )
    await run.ok(
        "POST", core(run, "serviceaccounts"), body=_labelled({"metadata": {"name": "sa1"}})
    )
    await table(run, "secrets", core(run, "secrets"))
    await table(run, "configmaps", core(run, "configmaps"))
    await table(run, "serviceaccounts", core(run, "serviceaccounts"))


@check("table-namespaces-nodes", "Tables of Namespaces and Nodes")
async def _namespaces_and_nodes(run: Run) -> None:
    await table(run, "namespaces", "/api/v1/namespaces", fieldSelector=f"metadata.name={run.ns}")
    nodes = await run.request("GET", "/api/v1/nodes", accept=TABLE_ACCEPT)
    body = nodes.object()
    columns = [column["name"] for column in body.get("columnDefinitions", [])]

    def cells(row: dict[str, Any]) -> dict[str, Any]:
        # Version, addresses and OS fields describe how each cluster's nodes were set up.
        named = dict(zip(columns, row["cells"], strict=False))
        return {name: named.get(name) for name in ("Name", "Status", "Roles")}

    run.record(
        "nodes",
        nodes,
        project=lambda table_body: {
            "columnDefinitions": table_body.get("columnDefinitions"),
            "first row": cells(table_body["rows"][0]) if table_body.get("rows") else None,
        },
    )


@check("table-events", "Table of Events (core/v1 and events.k8s.io/v1)")
async def _events(run: Run) -> None:
    await run.ok("POST", core(run, "configmaps"), body=config_map("x"))
    event = {
        "metadata": {"name": "x.1", "labels": LABEL},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "x",
            "namespace": run.ns,
        },
        "reason": "Tested",
        "message": "a message  ",
        "type": "Normal",
        "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:01:00Z",
        "source": {"component": "conformance", "host": "here"},
    }
    await run.ok("POST", core(run, "events"), body=event)
    await table(run, "events", core(run, "events"))
    await table(run, "events.k8s.io events", grouped(run, "events.k8s.io/v1", "events"))


@check(
    "table-other-builtins",
    "Tables of Leases, PDBs, Endpoints, RBAC and webhook configurations",
)
async def _other_builtins(run: Run) -> None:
    await run.ok(
        "POST",
        grouped(run, "coordination.k8s.io/v1", "leases"),
        body=_labelled({"metadata": {"name": "l1"}, "spec": {"holderIdentity": "me"}}),
    )
    # No PersistentVolumeClaim here: the control plane's stand-in provisioner binds every
    # claim at its own pace, which a Table taken at once would catch half-way.
    await run.ok(
        "POST",
        grouped(run, "policy/v1", "poddisruptionbudgets"),
        body=_labelled(
            {
                "metadata": {"name": "pdb1"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
            }
        ),
    )
    await run.ok(
        "POST",
        core(run, "endpoints"),
        body=_labelled(
            {
                "metadata": {"name": "ep1"},
                "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
            }
        ),
    )
    await run.ok(
        "POST",
        grouped(run, "rbac.authorization.k8s.io/v1", "roles"),
        body=_labelled({"metadata": {"name": "r1"}, "rules": []}),
    )
    await run.ok(
        "POST",
        grouped(run, "rbac.authorization.k8s.io/v1", "rolebindings"),
        body=_labelled(
            {
                "metadata": {"name": "rb1"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"},
                "subjects": [
                    {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                    {"kind": "ServiceAccount", "name": "sa", "namespace": run.ns},
                ],
            }
        ),
    )
    for step, plural in (
        ("leases", "leases"),
        ("poddisruptionbudgets", "poddisruptionbudgets"),
        ("endpoints", "endpoints"),
        ("roles", "roles"),
        ("rolebindings", "rolebindings"),
    ):
        group_version = {
            "leases": "coordination.k8s.io/v1",
            "poddisruptionbudgets": "policy/v1",
            "roles": "rbac.authorization.k8s.io/v1",
            "rolebindings": "rbac.authorization.k8s.io/v1",
        }.get(plural)
        path = core(run, plural) if group_version is None else grouped(run, group_version, plural)
        await table(run, step, path)
    name = run.name("table")
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    run.delete_on_cleanup(f"{path}/{name}")
    await run.ok("POST", path, body={"metadata": {"name": name, "labels": LABEL}, "webhooks": []})
    await table(run, "validatingwebhookconfigurations", path, fieldSelector=f"metadata.name={name}")


@check("table-custom-resources", "Tables of custom resources: printer columns, Age, CRDs")
async def _custom_resources(run: Run) -> None:
    columns = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "description": "the color"},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    await install_crd(run, widget_crd(run, additionalPrinterColumns=columns))
    await run.ok("POST", widgets(run), body=widget(run, "w1", {"size": 3, "color": "red"}))
    await run.ok("POST", widgets(run), body=widget(run, "w2", {"size": 4}))
    await table(run, "widgets", widgets(run), includeObject="Object")
    await table(run, "widget", widgets(run, "w1"), includeObject="None")
    plain = widget_crd(run)
    plain["metadata"]["name"] = f"gadgets.{run.group}"
    plain["spec"]["names"] = {
        "plural": "gadgets",
        "singular": "gadget",
        "kind": "Gadget",
        "listKind": "GadgetList",
    }
    await install_crd(run, plain)
    await run.ok(
        "POST",
        grouped(run, f"{run.group}/v1", "gadgets"),
        body={"apiVersion": f"{run.group}/v1", "kind": "Gadget", "metadata": {"name": "g1"}},
    )
    await table(run, "gadgets (no printer columns)", grouped(run, f"{run.group}/v1", "gadgets"))
    await table(
        run,
        "customresourcedefinitions",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        fieldSelector=f"metadata.name=widgets.{run.group}",
    )


@check(
    "table-include-object", "Table rows with includeObject None, Metadata and Object; a Table watch"
)
async def _include_object(run: Run) -> None:
    created = await run.ok("POST", core(run, "configmaps"), body=_labelled(config_map("x")))
    for include in ("None", "Metadata", "Object"):
        await table(
            run,
            f"includeObject={include}",
            core(run, "configmaps"),
            labelSelector="cf",
            includeObject=include,
        )
    stream = await run.watch(
        core(run, "configmaps"),
        {"labelSelector": "cf", "resourceVersion": created.metadata()["resourceVersion"]},
        accept=TABLE_ACCEPT,
    )
    await run.ok("POST", core(run, "configmaps"), body=_labelled(config_map("y")))
    await run.ok("POST", core(run, "configmaps"), body=_labelled(config_map("z")))
    events = await stream.events_until(
        lambda event: any(
            row.get("object", {}).get("metadata", {}).get("name") == "z"
            for row in event.get("object", {}).get("rows") or []
        )
    )
    run.fact("table watch events", events)


@check(
    "table-pod-states", "Pod Table Status cells: pending, init containers, terminating", pods=True
)
async def _pod_states(run: Run) -> None:
    unschedulable = _labelled(pod("pending"))
    unschedulable["spec"]["nodeSelector"] = {"cf-nowhere": "nowhere"}
    await run.ok("POST", core(run, "pods"), body=unschedulable)
    gated = _labelled(pod("gated"))
    gated["spec"]["schedulingGates"] = [{"name": "example.com/gate"}]
    await run.ok("POST", core(run, "pods"), body=gated)
    two = _labelled(pod("two"))
    two["spec"]["containers"].append(container("side", "busybox:1"))
    two["spec"]["nodeSelector"] = {"cf-nowhere": "nowhere"}
    await run.ok("POST", core(run, "pods"), body=two)
    for name in ("pending", "gated", "two"):
        # The scheduler reports its verdict as a PodScheduled condition (kubesim's at once).
        await wait_for(
            run,
            core(run, "pods", name),
            lambda obj: any(
                c.get("type") == "PodScheduled"
                for c in (obj.get("status") or {}).get("conditions") or []
            ),
            what=f"pod {name} seen by the scheduler",
        )
    await run.call(
        "pods",
        "GET",
        core(run, "pods"),
        accept=TABLE_ACCEPT,
        query={"labelSelector": "cf=table"},
        project=lambda body: [row["cells"][:4] for row in body.get("rows") or []],
    )
