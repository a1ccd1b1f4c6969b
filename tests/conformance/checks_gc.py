"""Garbage collection in the three propagation modes, with ConfigMap owners and with workloads.

On the real server the kube-controller-manager's garbage collector does the work, in kubesim its
simulated collector; both are awaited by polling.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import MERGE_PATCH, apps, config_map, core, deployment, wait_for
from tests.conformance.registry import check


def _owned_by(*owners: dict[str, Any], block: bool = False) -> list[dict[str, Any]]:
    refs = []
    for owner in owners:
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
        }
        if block:
            ref["blockOwnerDeletion"] = True
        refs.append(ref)
    return refs


async def _parent(run: Run, name: str) -> dict[str, Any]:
    return (await run.ok("POST", core(run, "configmaps"), body=config_map(name))).object()


async def _child(
    run: Run, name: str, *owners: dict[str, Any], block: bool = False, **meta: Any
) -> None:
    await run.ok(
        "POST",
        core(run, "configmaps"),
        body=config_map(name, ownerReferences=_owned_by(*owners, block=block), **meta),
    )


async def _owner_refs(run: Run, name: str) -> Any:
    answer = await run.request("GET", core(run, "configmaps", name))
    return (
        [ref["name"] for ref in answer.metadata().get("ownerReferences") or []]
        if answer.ok
        else answer.status
    )


@check(
    "gc-background", "Background deletion: dependents with no live owner go, others lose the ref"
)
async def _background(run: Run) -> None:
    parent = await _parent(run, "parent")
    other = await _parent(run, "other")
    await _child(run, "only-child", parent)
    await _child(run, "shared-child", parent, other)
    await _child(
        run,
        "grandchild",
        {
            "metadata": {
                "name": "only-child",
                "uid": (await run.ok("GET", core(run, "configmaps", "only-child"))).metadata()[
                    "uid"
                ],
            }
        },
    )
    await run.call(
        "delete the parent",
        "DELETE",
        core(run, "configmaps", "parent"),
        body={"propagationPolicy": "Background"},
    )
    await run.gone(core(run, "configmaps", "grandchild"), what="the grandchild collected")
    await run.gone(core(run, "configmaps", "only-child"), what="the only child collected")

    async def shared_released() -> bool:
        owners: Any = await _owner_refs(run, "shared-child")
        return bool(owners == ["other"])

    await run.eventually(shared_released, what="the shared child losing the dangling reference")
    run.fact("shared child's owners", await _owner_refs(run, "shared-child"))


@check("gc-foreground", "Foreground deletion: the owner waits for blocking dependents, then goes")
async def _foreground(run: Run) -> None:
    parent = await _parent(run, "parent")
    await _child(run, "blocking", parent, block=True, finalizers=["example.com/hold"])
    await _child(run, "loose", parent)
    deleted = await run.call(
        "delete in the foreground",
        "DELETE",
        core(run, "configmaps", "parent"),
        body={"propagationPolicy": "Foreground"},
        project=lambda body: {
            "kind": body.get("kind"),
            "finalizers": body["metadata"].get("finalizers"),
            "deleting": bool(body["metadata"].get("deletionTimestamp")),
        },
    )
    run.fact("delete answered the object", deleted.object().get("kind"))
    await run.gone(core(run, "configmaps", "loose"), what="the loose dependent collected")
    await wait_for(
        run,
        core(run, "configmaps", "blocking"),
        lambda obj: bool(obj["metadata"].get("deletionTimestamp")),
        what="the blocking dependent marked for deletion",
    )
    await run.call(
        "owner while blocked",
        "GET",
        core(run, "configmaps", "parent"),
        project=lambda body: {"finalizers": body["metadata"].get("finalizers")},
    )
    await run.call(
        "add a finalizer to the deleting owner",
        "PATCH",
        core(run, "configmaps", "parent"),
        body={"metadata": {"finalizers": ["foregroundDeletion", "example.com/late"]}},
        content_type=MERGE_PATCH,
    )
    await run.ok(
        "PATCH",
        core(run, "configmaps", "blocking"),
        body={"metadata": {"finalizers": None}},
        content_type=MERGE_PATCH,
    )
    await run.gone(core(run, "configmaps", "parent"), what="the foreground owner")
    run.fact("owner gone after the blocking dependent", True)


@check("gc-orphan", "Orphan deletion: the owner's reference leaves every dependent, which stays")
async def _orphan(run: Run) -> None:
    parent = await _parent(run, "parent")
    await _child(run, "a", parent, block=True)
    await _child(run, "b", parent)
    deleted = await run.call(
        "delete orphaning",
        "DELETE",
        core(run, "configmaps", "parent"),
        body={"propagationPolicy": "Orphan"},
        project=lambda body: {
            "kind": body.get("kind"),
            "finalizers": body.get("metadata", {}).get("finalizers"),
        },
    )
    run.fact("delete answered", deleted.status)
    await run.gone(core(run, "configmaps", "parent"), what="the orphaning owner")
    run.fact("dependents after", {name: await _owner_refs(run, name) for name in ("a", "b")})
    await _parent(run, "p2")
    p2 = (await run.ok("GET", core(run, "configmaps", "p2"))).object()
    await _child(run, "c", p2)
    await run.ok(
        "PATCH",
        core(run, "configmaps", "p2"),
        body={"metadata": {"finalizers": ["orphan"]}},
        content_type=MERGE_PATCH,
    )
    await run.call(
        "delete an owner carrying the orphan finalizer",
        "DELETE",
        core(run, "configmaps", "p2"),
        project=lambda body: body.get("kind"),
    )
    await run.gone(core(run, "configmaps", "p2"), what="the owner with the orphan finalizer")
    run.fact("its dependent after", await _owner_refs(run, "c"))


@check("gc-deployment", "Deployment → ReplicaSet → Pods; cascading delete in each mode", pods=True)
async def _deployment_cascade(run: Run) -> None:
    for mode in ("Background", "Foreground", "Orphan"):
        name = f"d-{mode.lower()}"
        await run.ok("POST", apps(run, "deployments"), body=deployment(name, replicas=2))
        await wait_for(
            run,
            apps(run, "deployments", name),
            lambda obj: (obj.get("status") or {}).get("readyReplicas") == 2,
            what=f"deployment {name} ready",
        )
        replica_sets = await run.ok(
            "GET", apps(run, "replicasets"), query={"labelSelector": f"app={name}"}
        )
        [replica_set] = replica_sets.object()["items"]
        rs_name = replica_set["metadata"]["name"]
        run.fact(
            f"{mode}: the ReplicaSet's controller reference",
            [
                (ref["kind"], ref["name"], ref.get("controller"), ref.get("blockOwnerDeletion"))
                for ref in replica_set["metadata"]["ownerReferences"]
            ],
        )
        pods = await run.ok("GET", core(run, "pods"), query={"labelSelector": f"app={name}"})
        run.fact(
            f"{mode}: pod owners",
            sorted(
                (ref["kind"], ref.get("controller"), ref.get("blockOwnerDeletion"))
                for item in pods.object()["items"]
                for ref in item["metadata"]["ownerReferences"]
            ),
        )
        await run.call(
            f"{mode}: delete",
            "DELETE",
            apps(run, "deployments", name),
            body={"propagationPolicy": mode},
            project=lambda body: body.get("kind"),
        )
        await run.gone(apps(run, "deployments", name), what=f"deployment {name}")
        if mode == "Orphan":
            rs = await run.ok("GET", apps(run, "replicasets", rs_name))
            run.fact(
                "Orphan: the ReplicaSet stays without owner", rs.metadata().get("ownerReferences")
            )
            await run.ok(
                "DELETE",
                apps(run, "replicasets", rs_name),
                body={"propagationPolicy": "Background"},
            )
        else:
            await run.gone(apps(run, "replicasets", rs_name), what=f"replicaset of {name}")

        async def no_pods(name: str = name) -> bool:
            listed = await run.request(
                "GET", core(run, "pods"), query={"labelSelector": f"app={name}"}
            )
            return listed.ok and not listed.object()["items"]

        await run.eventually(no_pods, what=f"pods of {name} gone")
        run.fact(f"{mode}: everything collected", True)
