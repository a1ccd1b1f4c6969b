"""The ``/scale`` subresource (§4.8): the ``autoscaling/v1`` Scale view of an object and its writes."""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from kubesim import errors, request
from kubesim.backend import Backend
from kubesim.meta import strip_type_meta
from kubesim.request import ResourcePath
from kubesim.resource_type import ResourceType
from kubesim.responses import json_response
from kubesim.write_request import apply_patch_document, context
from kubesim.writes import admit


def _json_path_steps(path: str) -> list[str]:
    return [s for s in path.strip().lstrip(".").split(".") if s]


def read_path(obj: dict[str, Any], path: str) -> Any:
    """The value at a simple JSONPath like ``.spec.replicas`` (None when absent)."""
    node: Any = obj
    for step in _json_path_steps(path):
        if not isinstance(node, dict):
            return None
        node = node.get(step)
    return node


def write_path(obj: dict[str, Any], path: str, *, value: Any) -> None:
    """Set the value at a simple JSONPath, creating intermediate objects."""
    steps = _json_path_steps(path)
    node = obj
    for step in steps[:-1]:
        child = node.get(step)
        if not isinstance(child, dict):
            child = {}
            node[step] = child
        node = child
    node[steps[-1]] = value


def selector_text(selector: Any) -> str:
    """A ``metav1.LabelSelector`` object (or an already rendered string) as selector text."""
    if isinstance(selector, str):
        return selector
    if not isinstance(selector, dict):
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        if operator == "In":
            parts.append(f"{key} in ({values})")
        elif operator == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def scale_of(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale view of an object (§4.8)."""
    assert rt.scale is not None
    meta = obj.get("metadata") or {}
    scale_meta = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    status: dict[str, Any] = {"replicas": read_path(obj, rt.scale.status_replicas_path) or 0}
    if rt.scale.label_selector_path:
        selector = selector_text(read_path(obj, rt.scale.label_selector_path))
        if selector:
            status["selector"] = selector
    replicas = read_path(obj, rt.scale.spec_replicas_path) or 0
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        # ScaleSpec.replicas is omitempty: zero replicas is an empty spec.
        "spec": {"replicas": replicas} if replicas else {},
        "status": status,
    }


async def handle_scale(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """GET/PUT/PATCH of ``/scale``: reads and writes the replicas path of the object."""
    assert path.name is not None
    assert rt.scale is not None
    live = backend.store.get(rt, path.namespace, path.name)
    if req.method == "GET":
        return json_response(scale_of(rt, live))
    ctx = context(req, rt, operation="UPDATE")
    raw = await req.read()
    if req.method == "PUT":
        wanted = request.decode_object_body(raw, req.headers.get("Content-Type"))
    elif req.method == "PATCH":
        kind = request.media_type(req.headers.get("Content-Type"))
        if kind not in (request.JSON_PATCH, request.MERGE_PATCH, request.STRATEGIC_PATCH):
            raise errors.unsupported_media_type(
                kind, [request.JSON_PATCH, request.MERGE_PATCH, request.STRATEGIC_PATCH]
            )
        # A Scale has no merge-keyed lists, so strategic merge is a merge patch here.
        kind = request.MERGE_PATCH if kind == request.STRATEGIC_PATCH else kind
        wanted = apply_patch_document(scale_of(rt, live), raw, kind=kind, rt=rt)
    else:
        raise errors.method_not_allowed()
    if not isinstance(wanted, dict):
        raise errors.bad_request("a Scale object is required")
    # An omitted replicas is the Go zero value (the field is omitempty).
    replicas = (wanted.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            group="autoscaling",
            kind="Scale",
            name=path.name,
            causes=[
                errors.Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
        )
    updated = copy.deepcopy(live)
    write_path(updated, rt.scale.spec_replicas_path, value=replicas)
    wanted_rv = (wanted.get("metadata") or {}).get("resourceVersion")
    if wanted_rv:
        updated.setdefault("metadata", {})["resourceVersion"] = wanted_rv
    updated, _ = await admit(
        backend, rt, ctx=ctx, new=updated, old=live, name=path.name, subresource="scale"
    )
    stored = backend.store.update(
        rt,
        strip_type_meta(updated),
        namespace=path.namespace,
        name=path.name,
        dry_run=ctx.dry_run,
    )
    return json_response(scale_of(rt, stored))
