"""Rendering of answers: compact single-line JSON, Status errors, objects or one-row Tables (§1.2).

Objects and lists of built-in kinds are protobuf when the client prefers it (:func:`negotiated`);
everything else (Status errors, Tables, discovery, custom resources) is JSON.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubesim import discovery, protobuf, request
from kubesim.errors import StatusError
from kubesim.meta import typed_view
from kubesim.resource_type import ResourceType


def dumps(body: Any) -> bytes:
    """Compact, single-line JSON (§1.2)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def json_response(
    body: Any,
    *,
    status: int = 200,
    content_type: str = "application/json",
    warnings: list[str] | None = None,
) -> web.Response:
    """A JSON response with an exact Content-Type header and optional ``Warning: 299`` headers."""
    response = web.Response(body=dumps(body), status=status)
    response.headers["Content-Type"] = content_type
    _add_warnings(response, warnings)
    return response


def _add_warnings(response: web.Response, warnings: list[str] | None) -> None:
    for warning in warnings or []:
        response.headers.add("Warning", f"299 - {request.go_quote(warning)}")


def negotiated(
    req: web.Request,
    body: dict[str, Any],
    *,
    custom: bool,
    status: int = 200,
    warnings: list[str] | None = None,
) -> web.Response:
    """``body`` (with apiVersion and kind) as protobuf when the Accept header prefers it, else JSON.

    JSON for custom resources (``custom``), which have no protobuf form on a real server either,
    and when the classes are not generated: clients that prefer protobuf list JSON as their
    fallback (kubectl sends ``application/vnd.kubernetes.protobuf,application/json``).
    """
    if not custom and protobuf.prefers_protobuf(req.headers.get("Accept")):
        encoded = protobuf.encode_body(body)
        if encoded is not None:
            response = web.Response(body=encoded, status=status)
            response.headers["Content-Type"] = protobuf.PROTOBUF
            _add_warnings(response, warnings)
            return response
    return json_response(body, status=status, warnings=warnings)


def status_response(err: StatusError) -> web.Response:
    """The single-line ``Status`` body of an error, with its HTTP code."""
    return json_response(err.to_status(), status=err.code)


def object_response(
    req: web.Request,
    rt: ResourceType,
    *,
    obj: dict[str, Any],
    status: int = 200,
    warnings: list[str] | None = None,
) -> web.Response:
    """A single object (protobuf when preferred), or a one-row Table when the client asked for one.

    ``obj`` is serialized, never kept or changed: the store already handed out a copy.
    """
    body = typed_view(rt, obj)
    if request.wants_table(req.headers.get("Accept")):
        body = discovery.to_table(
            rt,
            [body],
            include_object=req.query.get("includeObject", "Metadata"),
            list_meta={"resourceVersion": str(obj.get("metadata", {}).get("resourceVersion", ""))},
        )
        return json_response(body, status=status, warnings=warnings)
    return negotiated(req, body, custom=rt.custom, status=status, warnings=warnings)
