"""What a write request asks for, decoded and checked before admission and the store (§4.4-4.9).

The write options (``dryRun``, ``fieldValidation``, ``fieldManager``, DeleteOptions), the checks of
the body against the URL, unknown-field handling (``fieldValidation``) and the patch documents of
PATCH. Nothing here reads or writes server state: :mod:`kubesim.writes` runs the verbs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubesim import errors, patch, request, schema
from kubesim.meta import json_copy
from kubesim.resource_type import ResourceType

MAX_JSON_PATCH_OPS = 10000
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def require_verb(rt: ResourceType, verb: str) -> None:
    """405 when the resource does not offer ``verb``."""
    if verb not in rt.verbs:
        raise errors.method_not_allowed()


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


def patch_type(req: web.Request, rt: ResourceType) -> str:
    """The patch media type; 415 for one the endpoint does not accept (§4.6)."""
    kind = request.media_type(req.headers.get("Content-Type"))
    accepted = request.CUSTOM_PATCH_TYPES if rt.custom else request.BUILTIN_PATCH_TYPES
    # Patches are never protobuf (not even for built-ins): a protobuf PATCH is refused like any
    # other unknown patch type, as the real server does.
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
            result = patch.apply_json_patch(live, document)
        elif kind == request.MERGE_PATCH:
            _require_object_patch(document)
            result = patch.apply_merge_patch(live, document)
        else:
            _require_object_patch(document)
            result = patch.apply_strategic_merge_patch(live, document, kind=rt.kind)
    except patch.PatchError as exc:
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
            query.get("gracePeriodSeconds"), name="gracePeriodSeconds", signed=True
        )
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
        raise errors.bad_request(
            f"json: cannot unmarshal {_go_json_kind(grace)} into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64"
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
