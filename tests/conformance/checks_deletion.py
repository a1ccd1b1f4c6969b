"""Deletions that wait for someone: a Pod on a Node whose kubelet never answers (graceful
deletion), and PersistentVolumeClaims that a scheduled Pod still uses (PVC protection).

The Node of these checks carries the external-kubelet annotation (kubesim then deletes its Pods
gracefully, as the real server deletes every Pod) and no kwok annotation, so on the real control
plane no kubelet runs it either: nothing confirms a deletion but the check itself.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from tests.conformance.harness import Run
from tests.conformance.kube import (
    MERGE_PATCH,
    apps,
    core,
    pod,
    rv,
    stateful_set,
    wait_for,
)
from tests.conformance.registry import check

#: The annotation of a Node run by an external kubelet (kubesim/store_kinds.py).
EXTERNAL_KUBELET = {"stackflow.dev/kubelet": "external"}
#: How long the real controllers get to act before a check records that they did not.
QUIET_SECONDS = 3.0


async def _node_without_kubelet(run: Run) -> str:
    """A Node nobody runs; on cleanup its Pods are force-deleted, then it goes."""
    name = run.name("ext")
    await run.ok(
        "POST", "/api/v1/nodes", body={"metadata": {"name": name, "annotations": EXTERNAL_KUBELET}}
    )
    run.delete_on_cleanup(f"/api/v1/nodes/{name}")

    async def force_delete_pods() -> None:
        listed = await run.request("GET", core(run, "pods"))
        for item in listed.object().get("items") or [] if listed.ok else []:
            if (item.get("spec") or {}).get("nodeName") == name:
                await run.request(
                    "DELETE",
                    core(run, "pods", item["metadata"]["name"]),
                    query={"gracePeriodSeconds": "0"},
                )

    run.on_cleanup(force_delete_pods)
    return name


def _deletion(body: Any) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "kind": body.get("kind"),
        "deleting": bool(meta.get("deletionTimestamp")),
        "deletionGracePeriodSeconds": meta.get("deletionGracePeriodSeconds"),
        "generation": meta.get("generation"),
        "phase": (body.get("status") or {}).get("phase"),
    }


def _seconds(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").timestamp()


async def _let_controllers_act(run: Run) -> None:
    """kubesim: settle; the real server: give its controllers a few seconds."""
    await run.settle()
    if not run.is_kubesim:
        await asyncio.sleep(QUIET_SECONDS)


@check(
    "pod-graceful-deletion",
    "A Pod on a Node without a kubelet: DELETE marks it for its grace period, a repeat or a "
    "longer period changes nothing, a shorter one moves the mark, grace 0 removes it",
    pods=True,
)
async def _graceful(run: Run) -> None:
    node = await _node_without_kubelet(run)
    body = pod("p")
    body["spec"]["nodeName"] = node
    body["spec"]["terminationGracePeriodSeconds"] = 45
    created = (await run.ok("POST", core(run, "pods"), body=body)).object()
    stream = await run.watch(
        core(run, "pods"),
        {
            "resourceVersion": created["metadata"]["resourceVersion"],
            "fieldSelector": "metadata.name=p",
        },
    )
    path = core(run, "pods", "p")
    first = await run.call("delete", "DELETE", path, project=_deletion)
    marked = first.metadata()["deletionTimestamp"]
    ahead = _seconds(marked) - _seconds(created["metadata"]["creationTimestamp"])
    run.fact("marked the grace period ahead", 44 <= ahead <= 60)
    await _let_controllers_act(run)
    still = await run.call("still there", "GET", path, project=_deletion)
    run.fact("nothing changed it meanwhile", rv(still) == rv(first))
    again = await run.call("delete again", "DELETE", path, project=_deletion)
    run.fact("a repeated delete writes nothing", rv(again) == rv(first))
    longer = await run.call(
        "delete with a longer grace period",
        "DELETE",
        path,
        query={"gracePeriodSeconds": "90"},
        project=_deletion,
    )
    run.fact("a longer grace period writes nothing", rv(longer) == rv(first))
    shorter = await run.call(
        "delete with a shorter grace period",
        "DELETE",
        path,
        query={"gracePeriodSeconds": "10"},
        project=_deletion,
    )
    run.fact(
        "the mark moved back by the difference",
        _seconds(marked) - _seconds(shorter.metadata()["deletionTimestamp"]),
    )
    await run.call(
        "confirm with grace 0",
        "DELETE",
        path,
        body={
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": created["metadata"]["uid"]},
        },
        project=_deletion,
    )
    await run.gone(path, what="the confirmed pod")
    events = await stream.events_until(lambda event: event.get("type") == "DELETED")
    run.fact(
        "watch events",
        [
            (
                event.get("type"),
                bool(event["object"]["metadata"].get("deletionTimestamp")),
                event["object"]["metadata"].get("deletionGracePeriodSeconds"),
            )
            for event in events
        ],
    )


def _claim(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def _using(body: dict[str, Any], claim: str) -> dict[str, Any]:
    body["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return body


def _claim_state(body: Any) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "kind": body.get("kind"),
        "deleting": bool(meta.get("deletionTimestamp")),
        "finalizers": meta.get("finalizers"),
    }


@check(
    "pvc-protection",
    "A deleted claim stays Terminating with kubernetes.io/pvc-protection while a scheduled Pod "
    "names it, also a Succeeded one; a claim only an unscheduled Pod names goes",
    pods=True,
)
async def _pvc_protection(run: Run) -> None:
    claims = core(run, "persistentvolumeclaims")
    for name in ("data", "logs", "spare"):
        await run.ok("POST", claims, body=_claim(name))
    await run.ok("POST", core(run, "pods"), body=_using(pod("user"), "data"))
    await wait_for(
        run,
        core(run, "pods", "user"),
        lambda obj: (obj.get("status") or {}).get("phase") == "Running",
        what="the pod using the claim running",
    )
    node = await _node_without_kubelet(run)
    done = _using(pod("done"), "logs")
    done["spec"]["nodeName"] = node
    await run.ok("POST", core(run, "pods"), body=done)
    await run.call(
        "report the pod Succeeded",
        "PATCH",
        core(run, "pods", "done", sub="status"),
        body={"status": {"phase": "Succeeded"}},
        content_type=MERGE_PATCH,
        project=lambda body: (body.get("status") or {}).get("phase"),
    )
    waiting = _using(pod("waiting"), "spare")
    waiting["spec"]["schedulerName"] = "nobody"
    await run.ok("POST", core(run, "pods"), body=waiting)

    for name in ("data", "logs", "spare"):
        await run.call(f"delete claim {name}", "DELETE", f"{claims}/{name}", project=_claim_state)
    await run.gone(f"{claims}/spare", what="the claim only an unscheduled pod names")
    await _let_controllers_act(run)
    for name in ("data", "logs"):
        await run.call(
            f"claim {name} while its pod is there", "GET", f"{claims}/{name}", project=_claim_state
        )

    await run.call(
        "delete the succeeded pod", "DELETE", core(run, "pods", "done"), project=_deletion
    )
    await run.gone(core(run, "pods", "done"), what="the succeeded pod")
    await run.gone(f"{claims}/logs", what="the claim of the succeeded pod")
    run.fact("claim logs gone with its pod", True)
    # kwok's and kubesim's kubelets confirm at once (the grace period differs: kubesim's own
    # pods are deleted as for 0); the claim goes once the pod has.
    await run.call(
        "delete the running pod",
        "DELETE",
        core(run, "pods", "user"),
        project=lambda body: body.get("kind"),
    )
    await run.gone(core(run, "pods", "user"), what="the running pod")
    await run.gone(f"{claims}/data", what="the claim of the running pod")
    run.fact("claim data gone with its pod", True)


@check(
    "pvc-namespace-statefulset",
    "A namespace holding a StatefulSet with its Pods and claims goes entirely",
    pods=True,
)
async def _namespace_with_claims(run: Run) -> None:
    sts = stateful_set("s", replicas=2)
    sts["spec"]["volumeClaimTemplates"] = [_claim("data")]
    await run.ok("POST", apps(run, "statefulsets"), body=sts)
    await wait_for(
        run,
        apps(run, "statefulsets", "s"),
        lambda obj: (obj.get("status") or {}).get("readyReplicas") == 2,
        what="the StatefulSet ready",
    )
    await run.call(
        "claims",
        "GET",
        core(run, "persistentvolumeclaims"),
        project=lambda body: sorted(
            (item["metadata"]["name"], item["metadata"].get("finalizers"))
            for item in body.get("items") or []
        ),
    )
    await run.call(
        "delete the namespace",
        "DELETE",
        f"/api/v1/namespaces/{run.ns}",
        project=lambda body: (body.get("status") or {}).get("phase"),
    )
    await run.gone(core(run, "persistentvolumeclaims", "data-s-1"), what="the claims")
    await run.gone(f"/api/v1/namespaces/{run.ns}", what="the namespace")
    run.fact("namespace gone", True)
