"""Write verbs of the HTTP layer: create, update, patch (and server-side apply), delete (§4.4-4.9).

Each verb decodes the request (:mod:`kubesim.write_request`), runs the admission webhooks around
the write (:func:`admit`) and lets the store apply every object rule. DELETE on a collection is
served by :mod:`kubesim.handlers`, ``/scale`` by :mod:`kubesim.scale`.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim import errors, request
from kubesim import patch as patching
from kubesim.admission_match import AdmissionRequest
from kubesim.backend import Backend
from kubesim.errors import success_status
from kubesim.meta import strip_type_meta
from kubesim.request import ResourcePath
from kubesim.resource_type import ResourceType
from kubesim.responses import json_response, object_response
from kubesim.write_request import (
    WriteContext,
    apply_patch_document,
    check_body_name,
    check_body_namespace,
    check_force_only_for_apply,
    context,
    delete_options,
    patch_type,
    require_verb,
    validate_fields,
)


async def read_body(req: web.Request) -> bytes:
    """The raw request body."""
    return await req.read()


async def create(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """POST to a collection: 201 with the stored object."""
    require_verb(rt, "create")
    ctx = context(req, rt, operation="CREATE")
    body = request.decode_object_body(await read_body(req), req.headers.get("Content-Type"))
    obj = request.check_type_meta(body, api_version=rt.api_version, kind=rt.kind, custom=rt.custom)
    check_body_namespace(obj, namespace=path.namespace, rt=rt)
    obj, warnings = validate_fields(rt, obj, ctx=ctx)
    obj, admission_warnings = await admit(backend, rt, ctx=ctx, new=obj, old=None, name="")
    stored = backend.store.create(
        rt, strip_type_meta(obj), namespace=path.namespace, dry_run=ctx.dry_run
    )
    return object_response(req, rt, obj=stored, status=201, warnings=warnings + admission_warnings)


async def update(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """PUT of a whole object (or of its status with ``subresource="status"``)."""
    require_verb(rt, "update")
    assert path.name is not None
    ctx = context(req, rt, operation="UPDATE")
    body = request.decode_object_body(await read_body(req), req.headers.get("Content-Type"))
    obj = request.check_type_meta(body, api_version=rt.api_version, kind=rt.kind, custom=rt.custom)
    check_body_namespace(obj, namespace=path.namespace, rt=rt)
    check_body_name(obj, name=path.name)
    obj, warnings = validate_fields(rt, obj, ctx=ctx)
    old = backend.store.get(rt, path.namespace, path.name)
    obj, admission_warnings = await admit(
        backend, rt, ctx=ctx, new=obj, old=old, name=path.name, subresource=path.subresource
    )
    stored = backend.store.update(
        rt,
        strip_type_meta(obj),
        namespace=path.namespace,
        name=path.name,
        subresource=path.subresource,
        dry_run=ctx.dry_run,
    )
    return object_response(req, rt, obj=stored, warnings=warnings + admission_warnings)


async def patch(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """PATCH of an object or its status: the four patch types, server-side apply creating."""
    require_verb(rt, "patch")
    assert path.name is not None
    kind = patch_type(req, rt)
    ctx = context(req, rt, operation="UPDATE")
    raw = await read_body(req)
    if kind == request.APPLY_PATCH:
        return await server_side_apply(backend, req, rt=rt, path=path, ctx=ctx, raw=raw)
    check_force_only_for_apply(req)
    old = backend.store.get(rt, path.namespace, path.name)
    patched = apply_patch_document(old, raw, kind=kind, rt=rt)
    obj = request.check_type_meta(patched, api_version=rt.api_version, kind=rt.kind, custom=False)
    check_body_namespace(obj, namespace=path.namespace, rt=rt)
    check_body_name(obj, name=path.name)
    obj, warnings = validate_fields(rt, obj, ctx=ctx)
    obj, admission_warnings = await admit(
        backend, rt, ctx=ctx, new=obj, old=old, name=path.name, subresource=path.subresource
    )
    stored = backend.store.update(
        rt,
        strip_type_meta(obj),
        namespace=path.namespace,
        name=path.name,
        subresource=path.subresource,
        dry_run=ctx.dry_run,
    )
    return object_response(req, rt, obj=stored, warnings=warnings + admission_warnings)


async def server_side_apply(
    backend: Backend,
    req: web.Request,
    *,
    rt: ResourceType,
    path: ResourcePath,
    ctx: WriteContext,
    raw: bytes,
) -> web.Response:
    """``application/apply-patch+yaml``: create when missing, else merge with this manager's last config."""
    assert path.name is not None
    if not ctx.field_manager:
        raise errors.invalid(
            group="meta.k8s.io",
            kind="PatchOptions",
            name="",
            causes=[
                errors.Cause(
                    "FieldValueRequired",
                    "Required value: is required for apply patch",
                    "fieldManager",
                )
            ],
        )
    request.parse_bool(req.query.get("force"), name="force")
    document = request.decode_document(raw, yaml_allowed=True)
    applied = request.check_type_meta(
        document, api_version=rt.api_version, kind=rt.kind, custom=True
    )
    check_body_namespace(applied, namespace=path.namespace, rt=rt)
    check_body_name(applied, name=path.name)
    applied, warnings = validate_fields(rt, applied, ctx=ctx)
    try:
        live: dict[str, Any] | None = backend.store.get(rt, path.namespace, path.name)
    except errors.StatusError as err:
        if err.code != 404:
            raise
        live = None
    live_uid = str(((live or {}).get("metadata") or {}).get("uid", ""))
    previous = (
        backend.applied.get(
            rt,
            namespace=path.namespace,
            name=path.name,
            manager=ctx.field_manager,
            uid=live_uid,
        )
        if live is not None
        else None
    )
    merged = patching.apply_server_side(
        strip_type_meta(live) if live is not None else None,
        strip_type_meta(applied),
        previous=strip_type_meta(previous) if previous is not None else None,
    )
    if live is None:
        create_ctx = WriteContext(
            operation="CREATE",
            dry_run=ctx.dry_run,
            field_validation=ctx.field_validation,
            field_manager=ctx.field_manager,
            options={**ctx.options, "kind": "CreateOptions"},
        )
        merged, admission_warnings = await admit(
            backend,
            rt,
            ctx=create_ctx,
            new=merged,
            old=None,
            name=path.name,
            namespace=path.namespace or "",
        )
        stored = backend.store.create(
            rt, strip_type_meta(merged), namespace=path.namespace, dry_run=ctx.dry_run
        )
        status = 201
    else:
        merged, admission_warnings = await admit(
            backend, rt, ctx=ctx, new=merged, old=live, name=path.name, subresource=path.subresource
        )
        stored = backend.store.update(
            rt,
            strip_type_meta(merged),
            namespace=path.namespace,
            name=path.name,
            subresource=path.subresource,
            dry_run=ctx.dry_run,
        )
        status = 200
    if not ctx.dry_run:
        backend.applied.remember(
            rt,
            namespace=path.namespace,
            name=path.name,
            manager=ctx.field_manager,
            uid=str((stored.get("metadata") or {}).get("uid", "")),
            config=strip_type_meta(applied),
        )
    return object_response(
        req, rt, obj=stored, status=status, warnings=warnings + admission_warnings
    )


async def delete(
    backend: Backend, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """DELETE one object: the kept/deleted object or a Success Status (§4.7)."""
    require_verb(rt, "delete")
    assert path.name is not None
    options = delete_options(req.query, await read_body(req))
    old = backend.store.get(rt, path.namespace, path.name)
    ctx = WriteContext(
        operation="DELETE",
        dry_run=options["dryRun"],
        field_validation="Ignore",
        field_manager="",
        options={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    _, admission_warnings = await admit(backend, rt, ctx=ctx, new=None, old=old, name=path.name)
    result = backend.store.delete(
        rt,
        path.namespace,
        path.name,
        propagation=options.get("propagationPolicy"),
        preconditions=options.get("preconditions"),
        dry_run=options["dryRun"],
        grace_period=options.get("gracePeriodSeconds"),
    )
    if result is not None:
        return object_response(req, rt, obj=result, warnings=admission_warnings)
    return json_response(
        success_status(
            name=path.name,
            group=rt.group,
            plural=rt.plural,
            uid=str(old.get("metadata", {}).get("uid", "")),
        ),
        warnings=admission_warnings,
    )


async def admit(
    backend: Backend,
    rt: ResourceType,
    *,
    ctx: WriteContext,
    new: dict[str, Any] | None,
    old: dict[str, Any] | None,
    name: str,
    subresource: str | None = None,
    namespace: str = "",
) -> tuple[dict[str, Any], list[str]]:
    """Mutating then validating webhooks around a write; answers the object to store and warnings."""
    if not backend.admission.has_webhooks():
        # Without webhooks admission changes nothing: skip building the review request.
        typed = _typed(rt, new)
        return (typed if typed is not None else {}), []
    source = new if new is not None else old
    meta = (source or {}).get("metadata") or {}
    namespace = namespace or str(meta.get("namespace") or "")
    admission_request = AdmissionRequest(
        operation=ctx.operation,
        group=rt.group,
        version=rt.version,
        kind=rt.kind,
        plural=rt.plural,
        subresource=subresource or "",
        namespaced=rt.namespaced,
        name=name or str(meta.get("name") or ""),
        namespace=namespace if rt.namespaced else "",
        obj=_typed(rt, new),
        old_obj=_typed(rt, old),
        dry_run=ctx.dry_run,
        options=ctx.options,
        namespace_labels=_namespace_labels(backend, rt, obj=source, namespace=namespace),
    )
    warnings: list[str] = []
    mutated = new
    if new is not None:
        mutated, mutate_warnings = await backend.admission.mutate(admission_request)
        warnings += mutate_warnings
        if mutated is not None:
            admission_request = AdmissionRequest(**{**admission_request.__dict__, "obj": mutated})
    warnings += await backend.admission.validate(admission_request)
    return (mutated if mutated is not None else {}), warnings


def _namespace_labels(
    backend: Backend, rt: ResourceType, *, obj: dict[str, Any] | None, namespace: str
) -> dict[str, str] | None:
    if rt.group == "" and rt.plural == "namespaces":
        return dict(((obj or {}).get("metadata") or {}).get("labels") or {})
    if not namespace:
        return None
    ns_rt = backend.registry.lookup("", "v1", "namespaces")
    if ns_rt is None:
        return None
    try:
        ns_obj = backend.store.get(ns_rt, None, namespace)
    except errors.StatusError:
        return None
    return dict((ns_obj.get("metadata") or {}).get("labels") or {})


def _typed(rt: ResourceType, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    out = {"apiVersion": rt.api_version, "kind": rt.kind}
    out.update(strip_type_meta(obj))
    return out
