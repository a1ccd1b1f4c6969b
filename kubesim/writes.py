"""Write verbs of the HTTP layer: create, update, patch, delete, deletecollection, subresources (§4.4-4.9).

Decoding and field validation happen here; admission webhooks run around the store write
(:mod:`kubesim.write_support`); the store applies every object rule.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesim import errors, request, write_support
from kubesim import patch as patching
from kubesim.errors import success_status
from kubesim.meta import strip_type_meta
from kubesim.request import ResourcePath
from kubesim.resources import ResourceType
from kubesim.responses import json_response, object_response
from kubesim.write_support import WriteContext

if TYPE_CHECKING:
    from kubesim.server import KubeSimServer

MAX_JSON_PATCH_OPS = 10000


def require_verb(rt: ResourceType, verb: str) -> None:
    """405 when the resource does not offer ``verb``."""
    if verb not in rt.verbs:
        raise errors.method_not_allowed()


async def read_body(req: web.Request) -> bytes:
    """The raw request body."""
    return await req.read()


async def create(
    sim: KubeSimServer, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """POST to a collection: 201 with the stored object."""
    require_verb(rt, "create")
    ctx = write_support.context(req, rt, operation="CREATE")
    body = request.decode_object_body(await read_body(req), req.headers.get("Content-Type"))
    obj = request.check_type_meta(body, api_version=rt.api_version, kind=rt.kind, custom=rt.custom)
    write_support.check_body_namespace(obj, namespace=path.namespace, rt=rt)
    obj, warnings = write_support.validate_fields(rt, obj, ctx=ctx)
    obj, admission_warnings = await write_support.admit(
        sim, rt, ctx=ctx, new=obj, old=None, name=""
    )
    stored = sim.store.create(
        rt, strip_type_meta(obj), namespace=path.namespace, dry_run=ctx.dry_run
    )
    return object_response(req, rt, obj=stored, status=201, warnings=warnings + admission_warnings)


async def update(
    sim: KubeSimServer, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """PUT of a whole object (or of its status with ``subresource="status"``)."""
    require_verb(rt, "update")
    assert path.name is not None
    ctx = write_support.context(req, rt, operation="UPDATE")
    body = request.decode_object_body(await read_body(req), req.headers.get("Content-Type"))
    obj = request.check_type_meta(body, api_version=rt.api_version, kind=rt.kind, custom=rt.custom)
    write_support.check_body_namespace(obj, namespace=path.namespace, rt=rt)
    write_support.check_body_name(obj, name=path.name)
    obj, warnings = write_support.validate_fields(rt, obj, ctx=ctx)
    old = sim.store.get(rt, path.namespace, path.name)
    obj, admission_warnings = await write_support.admit(
        sim, rt, ctx=ctx, new=obj, old=old, name=path.name, subresource=path.subresource
    )
    stored = sim.store.update(
        rt,
        strip_type_meta(obj),
        namespace=path.namespace,
        name=path.name,
        subresource=path.subresource,
        dry_run=ctx.dry_run,
    )
    return object_response(req, rt, obj=stored, warnings=warnings + admission_warnings)


def patch_type(req: web.Request, rt: ResourceType) -> str:
    """The patch media type; 415 for one the endpoint does not accept (§4.6)."""
    kind = request.media_type(req.headers.get("Content-Type"))
    accepted = request.CUSTOM_PATCH_TYPES if rt.custom else request.BUILTIN_PATCH_TYPES
    if kind == request.PROTOBUF:
        raise request.protobuf_unsupported(kind)
    if kind not in accepted:
        raise errors.unsupported_media_type(kind, list(accepted))
    return kind


def apply_patch_document(
    live: dict[str, Any], body: bytes, *, kind: str, rt: ResourceType
) -> dict[str, Any]:
    """``live`` with a JSON, merge or strategic merge patch applied (400/413/422 per §4.6)."""
    document = request.decode_document(body, yaml_allowed=False)
    try:
        if kind == request.JSON_PATCH:
            if not isinstance(document, list):
                raise errors.bad_request(
                    "error decoding patch: json: cannot unmarshal "
                    f"{_go_json_kind(document)} into Go value of type []handlers.jsonPatchOp"
                )
            if len(document) > MAX_JSON_PATCH_OPS:
                raise errors.too_large(
                    f"The allowed maximum operations in a JSON patch is 10000, got {len(document)}"
                )
            result = patching.apply_json_patch(live, document)
        elif kind == request.MERGE_PATCH:
            _require_object_patch(document)
            result = patching.apply_merge_patch(live, document)
        else:
            _require_object_patch(document)
            result = patching.apply_strategic_merge_patch(live, document, kind=rt.kind)
    except patching.PatchError as exc:
        if exc.invalid:
            raise errors.StatusError(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
                {},
            ) from None
        raise errors.bad_request(exc.message) from None
    if not isinstance(result, dict):
        raise errors.bad_request("the patch did not produce an object")
    return result


def _require_object_patch(document: Any) -> None:
    if not isinstance(document, dict):
        raise errors.bad_request(
            f"error decoding patch: json: cannot unmarshal {_go_json_kind(document)} into Go value "
            "of type map[string]interface {}"
        )


def _go_json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


async def patch(
    sim: KubeSimServer, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """PATCH of an object or its status: the four patch types, server-side apply creating."""
    require_verb(rt, "patch")
    assert path.name is not None
    kind = patch_type(req, rt)
    ctx = write_support.context(req, rt, operation="UPDATE")
    raw = await read_body(req)
    if kind == request.APPLY_PATCH:
        return await write_support.server_side_apply(sim, req, rt=rt, path=path, ctx=ctx, raw=raw)
    write_support.check_force_only_for_apply(req)
    old = sim.store.get(rt, path.namespace, path.name)
    patched = apply_patch_document(old, raw, kind=kind, rt=rt)
    obj = request.check_type_meta(patched, api_version=rt.api_version, kind=rt.kind, custom=False)
    write_support.check_body_namespace(obj, namespace=path.namespace, rt=rt)
    write_support.check_body_name(obj, name=path.name)
    obj, warnings = write_support.validate_fields(rt, obj, ctx=ctx)
    obj, admission_warnings = await write_support.admit(
        sim, rt, ctx=ctx, new=obj, old=old, name=path.name, subresource=path.subresource
    )
    stored = sim.store.update(
        rt,
        strip_type_meta(obj),
        namespace=path.namespace,
        name=path.name,
        subresource=path.subresource,
        dry_run=ctx.dry_run,
    )
    return object_response(req, rt, obj=stored, warnings=warnings + admission_warnings)


def delete_options(query: Any, raw: bytes) -> dict[str, Any]:
    """DeleteOptions from the JSON body, else from the query string (§4.7)."""
    options: dict[str, Any] = {}
    if raw.strip():
        decoded = request.decode_document(raw, yaml_allowed=False)
        if not isinstance(decoded, dict):
            raise errors.bad_request(
                f"json: cannot unmarshal {_go_json_kind(decoded)} into Go value of type "
                "v1.DeleteOptions"
            )
        options = decoded
    if "propagationPolicy" not in options and query.get("propagationPolicy"):
        options["propagationPolicy"] = query.get("propagationPolicy")
    if "dryRun" not in options and query.getall("dryRun", []):
        options["dryRun"] = query.getall("dryRun")
    if "gracePeriodSeconds" not in options and query.get("gracePeriodSeconds"):
        options["gracePeriodSeconds"] = request.parse_int(
            query.get("gracePeriodSeconds"), name="gracePeriodSeconds"
        )
    if options.get("orphanDependents") is not None and "propagationPolicy" not in options:
        options["propagationPolicy"] = "Orphan" if options["orphanDependents"] else "Background"
    policy = options.get("propagationPolicy")
    if policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.invalid(
            group="meta.k8s.io",
            kind="DeleteOptions",
            name="",
            causes=[
                errors.Cause(
                    "FieldValueNotSupported",
                    f"Unsupported value: {json.dumps(policy)}: supported values: "
                    '"Foreground", "Background", "Orphan"',
                    "propagationPolicy",
                )
            ],
        )
    preconditions = options.get("preconditions")
    if preconditions is not None and not isinstance(preconditions, dict):
        raise errors.bad_request("preconditions must be an object")
    dry_run = options.get("dryRun") or []
    if not isinstance(dry_run, list) or not all(isinstance(v, str) for v in dry_run):
        raise errors.bad_request("dryRun must be a list of strings")
    options["dryRun"] = request.parse_dry_run(dry_run)
    return options


async def delete(
    sim: KubeSimServer, req: web.Request, *, rt: ResourceType, path: ResourcePath
) -> web.Response:
    """DELETE one object: the kept/deleted object or a Success Status (§4.7)."""
    require_verb(rt, "delete")
    assert path.name is not None
    options = delete_options(req.query, await read_body(req))
    old = sim.store.get(rt, path.namespace, path.name)
    ctx = WriteContext(
        operation="DELETE",
        dry_run=options["dryRun"],
        field_validation="Ignore",
        field_manager="",
        options={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"},
    )
    _, admission_warnings = await write_support.admit(
        sim, rt, ctx=ctx, new=None, old=old, name=path.name
    )
    result = sim.store.delete(
        rt,
        path.namespace,
        path.name,
        propagation=options.get("propagationPolicy"),
        preconditions=options.get("preconditions"),
        dry_run=options["dryRun"],
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
