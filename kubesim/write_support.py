"""Helpers of the write verbs: write options, field validation, admission, server-side apply, scale.

Split from :mod:`kubesim.writes` to keep modules small; the pure parts (unknown-field removal, Scale
rendering) are plain functions over dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesim import errors, patch, request, schema
from kubesim.admission_match import AdmissionRequest
from kubesim.meta import json_copy, strip_type_meta
from kubesim.request import ResourcePath
from kubesim.resources import ResourceType
from kubesim.responses import object_response

if TYPE_CHECKING:
    from kubesim.server import KubeSimServer

_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


@dataclass(frozen=True)
class WriteContext:
    """The write-side query parameters of one request (§4.9)."""

    operation: str
    dry_run: bool
    field_validation: str
    field_manager: str
    options: dict[str, Any] = field(default_factory=dict)


def context(req: web.Request, rt: ResourceType, *, operation: str) -> WriteContext:
    """Read ``dryRun``, ``fieldValidation`` and ``fieldManager`` (422/400 on bad values)."""
    dry_run = request.parse_dry_run(req.query.getall("dryRun", []))
    field_validation = request.parse_field_validation(req.query.get("fieldValidation"))
    field_manager = req.query.get("fieldManager", "")
    if len(field_manager) > 128 or not field_manager.isprintable():
        raise errors.invalid(
            group="meta.k8s.io",
            kind=_OPTIONS_KIND[operation],
            name="",
            causes=[
                errors.Cause(
                    "FieldValueInvalid",
                    "Invalid value: the field manager must be at most 128 printable characters",
                    "fieldManager",
                )
            ],
        )
    options: dict[str, Any] = {"kind": _OPTIONS_KIND[operation], "apiVersion": "meta.k8s.io/v1"}
    if field_manager:
        options["fieldManager"] = field_manager
    if dry_run:
        options["dryRun"] = ["All"]
    return WriteContext(
        operation=operation,
        dry_run=dry_run,
        field_validation=field_validation,
        field_manager=field_manager,
        options=options,
    )


def check_force_only_for_apply(req: web.Request) -> None:
    """``force`` is only meaningful for server-side apply (422 otherwise)."""
    if req.query.get("force") and request.parse_bool(req.query.get("force"), name="force"):
        raise errors.invalid(
            group="meta.k8s.io",
            kind="PatchOptions",
            name="",
            causes=[
                errors.Cause(
                    "FieldValueForbidden",
                    "Forbidden: may not be specified for non-apply patch",
                    "force",
                )
            ],
        )


def check_body_namespace(obj: dict[str, Any], *, namespace: str | None, rt: ResourceType) -> None:
    """400 when the body's namespace differs from the URL's; cluster-scoped bodies lose theirs."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    body_ns = meta.get("namespace")
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    if body_ns not in (None, "") and body_ns != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )


def check_body_name(obj: dict[str, Any], *, name: str) -> None:
    """400 when a PUT/PATCH body names another object than the URL."""
    meta = obj.get("metadata")
    body_name = meta.get("name") if isinstance(meta, dict) else None
    if body_name not in (None, "") and body_name != name:
        raise errors.bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )
    if isinstance(meta, dict):
        meta["name"] = name
    else:
        obj["metadata"] = {"name": name}


def remove_field_path(obj: Any, dotted: str) -> None:
    """Delete ``spec.containers[0].foo``-style path from ``obj`` (missing parts are ignored)."""
    steps: list[str | int] = []
    for part in dotted.split("."):
        name, _, rest = part.partition("[")
        if name:
            steps.append(name)
        for index in rest.replace("]", "").split("[") if rest else []:
            if index.isdigit():
                steps.append(int(index))
    node = obj
    for step in steps[:-1]:
        node = _child(node, step)
        if node is None:
            return
    last = steps[-1] if steps else None
    if isinstance(last, str) and isinstance(node, dict):
        node.pop(last, None)


def _child(node: Any, step: str | int) -> Any:
    if isinstance(node, list) and isinstance(step, int):
        return node[step] if step < len(node) else None
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    return None


def strict_decoding_error(paths: list[str]) -> errors.StatusError:
    """400 ``strict decoding error: unknown field "spec.foo"`` (several joined by ``, ``)."""
    listed = ", ".join(f"unknown field {request.go_quote(p)}" for p in paths)
    return errors.bad_request(f"strict decoding error: {listed}")


def validate_fields(
    rt: ResourceType, obj: dict[str, Any], *, ctx: WriteContext
) -> tuple[dict[str, Any], list[str]]:
    """Apply ``fieldValidation``: unknown fields → 400 (Strict), dropped + warnings (Warn), dropped."""
    if rt.custom:
        pruned, _causes, unknown = schema.admit_custom_object(rt, obj)
        cleaned = pruned
    else:
        unknown = schema.unknown_builtin_fields(rt, obj)
        # Nothing mutates the object after this point (the store copies what it keeps), so
        # only a body that loses fields needs a copy of its own.
        cleaned = json_copy(obj) if unknown else obj
        for path in unknown:
            remove_field_path(cleaned, path)
    if not unknown or ctx.field_validation == "Ignore":
        return cleaned, []
    if ctx.field_validation == "Strict":
        raise strict_decoding_error(unknown)
    return cleaned, [f"unknown field {request.go_quote(p)}" for p in unknown]


def _namespace_labels(
    sim: KubeSimServer, rt: ResourceType, *, obj: dict[str, Any] | None, namespace: str
) -> dict[str, str] | None:
    if rt.group == "" and rt.plural == "namespaces":
        return dict(((obj or {}).get("metadata") or {}).get("labels") or {})
    if not namespace:
        return None
    ns_rt = sim.registry.lookup("", "v1", "namespaces")
    if ns_rt is None:
        return None
    try:
        ns_obj = sim.store.get(ns_rt, None, namespace)
    except errors.StatusError:
        return None
    return dict((ns_obj.get("metadata") or {}).get("labels") or {})


async def admit(
    sim: KubeSimServer,
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
    if not sim.admission.has_webhooks():
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
        namespace_labels=_namespace_labels(sim, rt, obj=source, namespace=namespace),
    )
    warnings: list[str] = []
    mutated = new
    if new is not None:
        mutated, mutate_warnings = await sim.admission.mutate(admission_request)
        warnings += mutate_warnings
        if mutated is not None:
            admission_request = AdmissionRequest(**{**admission_request.__dict__, "obj": mutated})
    warnings += await sim.admission.validate(admission_request)
    return (mutated if mutated is not None else {}), warnings


def _typed(rt: ResourceType, obj: dict[str, Any] | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    out = {"apiVersion": rt.api_version, "kind": rt.kind}
    out.update(strip_type_meta(obj))
    return out


async def server_side_apply(
    sim: KubeSimServer,
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
        live: dict[str, Any] | None = sim.store.get(rt, path.namespace, path.name)
    except errors.StatusError as err:
        if err.code != 404:
            raise
        live = None
    live_uid = str(((live or {}).get("metadata") or {}).get("uid", ""))
    previous = (
        sim.last_applied(
            rt,
            namespace=path.namespace,
            name=path.name,
            manager=ctx.field_manager,
            uid=live_uid,
        )
        if live is not None
        else None
    )
    merged = patch.apply_server_side(
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
            sim,
            rt,
            ctx=create_ctx,
            new=merged,
            old=None,
            name=path.name,
            namespace=path.namespace or "",
        )
        stored = sim.store.create(
            rt, strip_type_meta(merged), namespace=path.namespace, dry_run=ctx.dry_run
        )
        status = 201
    else:
        merged, admission_warnings = await admit(
            sim, rt, ctx=ctx, new=merged, old=live, name=path.name, subresource=path.subresource
        )
        stored = sim.store.update(
            rt,
            strip_type_meta(merged),
            namespace=path.namespace,
            name=path.name,
            subresource=path.subresource,
            dry_run=ctx.dry_run,
        )
        status = 200
    if not ctx.dry_run:
        sim.remember_applied(
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
