"""Objects as stored: defaults of built-in kinds, metadata rules, generation, subresources."""

from __future__ import annotations

from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import (
    MERGE_PATCH,
    STRATEGIC_PATCH,
    apps,
    config_map,
    core,
    deployment,
    generation,
    grouped,
    only,
    pod,
    service,
    stateful_set,
)
from tests.conformance.registry import check


@check(
    "objects-defaults-workloads", "Defaults of Deployments, StatefulSets, DaemonSets, ReplicaSets"
)
async def _defaults_workloads(run: Run) -> None:
    # replicas 0 and an unknown node selector: the objects stay as the API server stored them.
    dep = deployment("d", replicas=0)
    await run.call(
        "create deployment",
        "POST",
        apps(run, "deployments"),
        body=dep,
        project=only("spec", "metadata.generation", "metadata.labels"),
    )
    sts = stateful_set("s", replicas=0)
    await run.call(
        "create statefulset",
        "POST",
        apps(run, "statefulsets"),
        body=sts,
        project=only("spec", "metadata.generation"),
    )
    ds = deployment("ds")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"cf-none": "none"}
    await run.call(
        "create daemonset",
        "POST",
        apps(run, "daemonsets"),
        body=ds,
        project=only("spec", "metadata.generation"),
    )
    rs = deployment("rs", replicas=0)
    rs["kind"] = "ReplicaSet"
    await run.call(
        "create replicaset",
        "POST",
        apps(run, "replicasets"),
        body=rs,
        project=only("spec", "metadata.generation"),
    )


@check(
    "objects-defaults-core", "Defaults of Pods, Services, Secrets, ServiceAccounts, PVCs, Leases"
)
async def _defaults_core(run: Run) -> None:
    unscheduled = pod("p")
    unscheduled["spec"]["nodeName"] = "cf-no-such-node"
    await run.call(
        "create pod", "POST", core(run, "pods"), body=unscheduled, project=only("spec", "status")
    )
    await run.call(
        "create service",
        "POST",
        core(run, "services"),
        body=service("svc"),
        project=only("spec", "status"),
    )
    await run.call(
        "create headless service",
        "POST",
        core(run, "services"),
        body=service("headless", clusterIP="None"),
        project=only("spec", "status"),
    )
    await run.call(
        "create secret",
        "POST",
        core(run, "secrets"),
        body={"metadata": {"name": "s"}, "stringData": {"a": "b"}},
    )
    await run.call(
        "create serviceaccount",
        "POST",
        core(run, "serviceaccounts"),
        body={"metadata": {"name": "sa"}},
    )
    await run.call(
        "create pvc",
        "POST",
        core(run, "persistentvolumeclaims"),
        body={
            "metadata": {"name": "pvc"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "none",
            },
        },
        project=only("spec", "status"),
    )
    await run.call(
        "create lease",
        "POST",
        grouped(run, "coordination.k8s.io/v1", "leases"),
        body={
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15},
        },
    )
    await run.call(
        "create configmap without data",
        "POST",
        core(run, "configmaps"),
        body={"metadata": {"name": "empty"}},
    )


@check(
    "objects-metadata", "Metadata rules: generateName, immutable fields, creationTimestamp, labels"
)
async def _metadata_rules(run: Run) -> None:
    generated = await run.call(
        "create with generateName",
        "POST",
        core(run, "configmaps"),
        body={"metadata": {"generateName": "gen-"}, "data": {"k": "v"}},
    )
    name = generated.metadata().get("name", "")
    run.substitutions[name] = "gen-<generated>"
    run.fact("generated name shape", (len(name), name.startswith("gen-")))
    created = await run.call(
        "create with server fields set",
        "POST",
        core(run, "configmaps"),
        body=config_map(
            "x",
            uid="00000000-0000-0000-0000-000000000001",
            creationTimestamp="2020-01-01T00:00:00Z",
            generation=7,
            selfLink="/nope",
        ),
    )
    body = created.object()
    body["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
    body["metadata"]["labels"] = {"a": "b"}
    updated = await run.call(
        "update with another creationTimestamp", "PUT", core(run, "configmaps", "x"), body=body
    )
    run.fact(
        "creationTimestamp kept",
        updated.metadata().get("creationTimestamp") == created.metadata().get("creationTimestamp"),
    )
    body = updated.object()
    body["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    await run.call(
        "set deletionTimestamp by update", "PUT", core(run, "configmaps", "x"), body=body
    )
    unconditional = config_map("x", {"k": "unconditional"})
    await run.call(
        "unconditional update (no resourceVersion)",
        "PUT",
        core(run, "configmaps", "x"),
        body=unconditional,
    )
    await run.call(
        "create with a resourceVersion",
        "POST",
        core(run, "configmaps"),
        body=config_map("rv", resourceVersion="5"),
    )


@check("objects-generation", "metadata.generation per kind: spec, annotations, status, deletion")
async def _generation_rules(run: Run) -> None:
    dep = await run.ok("POST", apps(run, "deployments"), body=deployment("d", replicas=0))
    steps: list[tuple[str, dict[str, Any]]] = [
        ("label", {"metadata": {"labels": {"a": "b"}}}),
        ("annotate", {"metadata": {"annotations": {"a": "b"}}}),
        ("spec", {"spec": {"replicas": 0, "minReadySeconds": 3}}),
    ]
    previous = generation(dep)
    for step, document in steps:
        answer = await run.ok(
            "PATCH", apps(run, "deployments", "d"), body=document, content_type=STRATEGIC_PATCH
        )
        run.fact(f"deployment {step}", (previous, generation(answer)))
        previous = generation(answer)
    sts = await run.ok("POST", apps(run, "statefulsets"), body=stateful_set("s", replicas=0))
    annotated = await run.ok(
        "PATCH",
        apps(run, "statefulsets", "s"),
        body={"metadata": {"annotations": {"a": "b"}}},
        content_type=MERGE_PATCH,
    )
    run.fact("statefulset annotate", (generation(sts), generation(annotated)))
    cm = await run.ok(
        "POST", core(run, "configmaps"), body=config_map("c", finalizers=["example.com/hold"])
    )
    run.fact("configmap generation", generation(cm))
    held = await run.ok(
        "POST",
        apps(run, "deployments"),
        body={
            **deployment("held", replicas=0),
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        },
    )
    deleting = await run.ok("DELETE", apps(run, "deployments", "held"))
    run.fact("deployment generation on deletion", (generation(held), generation(deleting)))
    for path in (apps(run, "deployments", "held"), core(run, "configmaps", "c")):
        await run.ok(
            "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
        )
    del cm


@check("objects-builtin-subresources", "Deployment /status and /scale, StatefulSet /scale")
async def _builtin_subresources(run: Run) -> None:
    await run.ok("POST", apps(run, "deployments"), body=deployment("d", replicas=0))
    await run.call("GET scale", "GET", apps(run, "deployments", "d", sub="scale"))
    scaled = await run.call(
        "PATCH scale",
        "PATCH",
        apps(run, "deployments", "d", sub="scale"),
        body={"spec": {"replicas": 0}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "PUT scale with a stale resourceVersion",
        "PUT",
        apps(run, "deployments", "d", sub="scale"),
        body={**scaled.object(), "metadata": {**scaled.metadata(), "resourceVersion": "1"}},
    )
    status = await run.ok("GET", apps(run, "deployments", "d", sub="status"))
    body = status.object()
    body["status"] = {"observedGeneration": 1, "conditions": [{"type": "Cf", "status": "True"}]}
    body["spec"]["replicas"] = 5
    # Unconditional: the deployment controller writes the status too.
    del body["metadata"]["resourceVersion"]
    await run.call(
        "PUT status (spec ignored)",
        "PUT",
        apps(run, "deployments", "d", sub="status"),
        body=body,
        project=only("spec.replicas", "status.conditions", "metadata.generation"),
    )
    await run.ok("POST", apps(run, "statefulsets"), body=stateful_set("s", replicas=0))
    await run.call("statefulset scale", "GET", apps(run, "statefulsets", "s", sub="scale"))
    await run.ok("POST", core(run, "configmaps"), body=config_map("c"))
    await run.call(
        "configmap has no status subresource", "GET", core(run, "configmaps", "c", sub="status")
    )
