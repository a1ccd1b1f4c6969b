"""Rendering of answers: compact single-line JSON, Status errors, objects or one-row Tables (§1.2)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubesim import discovery, request
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
    for warning in warnings or []:
        response.headers.add("Warning", f"299 - {request.go_quote(warning)}")
    return response


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
    """A single object, or a one-row Table when the client asked for one.

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
