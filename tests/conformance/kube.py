"""Paths, bodies and small helpers the checks share."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from tests.conformance.harness import Answer, CheckError, Run

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def core(run: Run, plural: str, name: str | None = None, *, sub: str | None = None) -> str:
    """A namespaced core/v1 path in the run's namespace."""
    path = f"/api/v1/namespaces/{run.ns}/{plural}"
    if name is not None:
        path += f"/{name}"
    if sub is not None:
        path += f"/{sub}"
    return path


def apps(run: Run, plural: str, name: str | None = None, *, sub: str | None = None) -> str:
    """A namespaced apps/v1 path in the run's namespace."""
    path = f"/apis/apps/v1/namespaces/{run.ns}/{plural}"
    if name is not None:
        path += f"/{name}"
    if sub is not None:
        path += f"/{sub}"
    return path


def grouped(
    run: Run,
    group_version: str,
    plural: str,
    name: str | None = None,
    *,
    sub: str | None = None,
    namespaced: bool = True,
) -> str:
    """A path under ``/apis/<group_version>`` (in the run's namespace when ``namespaced``)."""
    path = f"/apis/{group_version}"
    if namespaced:
        path += f"/namespaces/{run.ns}"
    path += f"/{plural}"
    if name is not None:
        path += f"/{name}"
    if sub is not None:
        path += f"/{sub}"
    return path


def config_map(name: str, data: Mapping[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    """A ConfigMap body."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **meta},
        "data": dict(data if data is not None else {"k": "v"}),
    }


def container(name: str = "app", image: str = "nginx:1.27", **extra: Any) -> dict[str, Any]:
    """A container of a pod template."""
    return {"name": name, "image": image, **extra}


def pod(name: str, **meta: Any) -> dict[str, Any]:
    """A Pod with one container."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [container()]},
    }


def deployment(
    name: str, *, replicas: int = 1, containers: list[Any] | None = None
) -> dict[str, Any]:
    """A Deployment selecting ``app=<name>``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers or [container()]},
            },
        },
    }


def stateful_set(name: str, *, replicas: int = 1) -> dict[str, Any]:
    """A StatefulSet selecting ``app=<name>``."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container()]},
            },
        },
    }


def service(name: str, **spec: Any) -> dict[str, Any]:
    """A ClusterIP Service on port 80."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec},
    }


WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "green", "blue"]},
                "replicas": {"type": "integer"},
                "mode": {"type": "string", "default": "fast"},
                "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "ready": {"type": "boolean"},
                "replicas": {"type": "integer"},
                "selector": {"type": "string"},
            },
        },
    },
}


def widget_crd(run: Run, **version_extra: Any) -> dict[str, Any]:
    """A namespaced ``Widget`` CRD in the run's own group (status and scale subresources)."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
    }
    version.update(version_extra)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{run.group}"},
        "spec": {
            "group": run.group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wd"],
            },
            "versions": [version],
        },
    }


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def install_crd(run: Run, crd: dict[str, Any], *, step: str | None = None) -> Answer:
    """Create a CRD (deleted when the check ends) and wait until its resource is served."""
    name = crd["metadata"]["name"]
    run.delete_on_cleanup(f"{CRD_PATH}/{name}")
    if step is None:
        answer = await run.ok("POST", CRD_PATH, body=crd)
    else:
        answer = await run.call(step, "POST", CRD_PATH, body=crd)
        if not answer.ok:
            raise CheckError(f"CRD {name} not created: {answer.body!r:.300}")
    group = crd["spec"]["group"]
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("served"))
    plural = crd["spec"]["names"]["plural"]
    scope = crd["spec"]["scope"]

    async def served() -> bool:
        crd_now = await run.request("GET", f"{CRD_PATH}/{name}")
        conditions = (crd_now.object().get("status") or {}).get("conditions") or []
        if not any(
            c.get("type") == "Established" and c.get("status") == "True" for c in conditions
        ):
            return False
        listing = f"/apis/{group}/{version}"
        if scope == "Namespaced":
            listing += f"/namespaces/{run.ns}"
        return (await run.request("GET", f"{listing}/{plural}")).ok

    await run.eventually(served, what=f"CRD {name} served")
    return answer


def widget(
    run: Run, name: str, spec: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """A Widget body."""
    body: dict[str, Any] = {
        "apiVersion": f"{run.group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": dict(spec if spec is not None else {"size": 1}),
    }
    body.update(extra)
    return body


def widgets(run: Run, name: str | None = None, *, sub: str | None = None) -> str:
    """The run's Widget path."""
    return grouped(run, f"{run.group}/v1", "widgets", name, sub=sub)


def rv(answer: Answer) -> str:
    """``metadata.resourceVersion`` of an answer."""
    return str(answer.metadata().get("resourceVersion", ""))


def generation(answer: Answer) -> Any:
    """``metadata.generation`` of an answer (None when absent)."""
    return answer.metadata().get("generation")


def names(body: Any) -> list[str]:
    """The item names of a list body."""
    if not isinstance(body, dict):
        return []
    return [item["metadata"]["name"] for item in body.get("items") or []]


def only(*paths: str) -> Callable[[Any], Any]:
    """A projection keeping the given dotted paths of a body (missing ones are left out)."""

    def project(body: Any) -> Any:
        out: dict[str, Any] = {}
        for path in paths:
            found, value = lookup(body, path)
            if found:
                out[path] = value
        return out

    return project


def lookup(body: Any, path: str) -> tuple[bool, Any]:
    """``(found, value)`` of a dotted path (``metadata.labels``, ``items.0.metadata``)."""
    current = body
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def event_summary(event: Mapping[str, Any]) -> dict[str, Any]:
    """A watch event as ``{type, name, …}``: the fields a watch check compares."""
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    summary: dict[str, Any] = {"type": event.get("type"), "kind": obj.get("kind")}
    if event.get("type") == "ERROR":
        summary.update(
            {"code": obj.get("code"), "reason": obj.get("reason"), "message": obj.get("message")}
        )
    elif event.get("type") == "BOOKMARK":
        summary["annotations"] = meta.get("annotations")
        summary["has_rv"] = bool(meta.get("resourceVersion"))
    else:
        summary["name"] = meta.get("name")
        summary["labels"] = meta.get("labels")
    return summary


async def wait_for(
    run: Run, path: str, ready: Callable[[dict[str, Any]], bool], *, what: str
) -> dict[str, Any]:
    """Poll GET ``path`` until ``ready`` accepts the object; the object."""
    seen: dict[str, Any] = {}

    async def check() -> bool:
        answer = await run.request("GET", path)
        if not answer.ok:
            return False
        seen.clear()
        seen.update(answer.object())
        return ready(seen)

    await run.eventually(check, what=what)
    return seen
