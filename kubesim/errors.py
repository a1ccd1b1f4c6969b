"""Kubernetes ``metav1.Status`` errors, shaped exactly as the real API server shapes them.

Every failure kubesim answers is a :class:`StatusError`; the HTTP layer turns it into a single-line
JSON ``Status`` body with the same HTTP code. ``details.kind`` is the plural resource for resource
errors and the Kind for ``Invalid`` (as apimachinery's ``errors.go`` does).

Tree::

    StatusError
      ├── 400 BadRequest       bad_request()
      ├── 403 Forbidden        forbidden()
      ├── 404 NotFound         not_found(), unknown_resource()
      ├── 405 MethodNotAllowed method_not_allowed()
      ├── 409 AlreadyExists    already_exists()
      ├── 409 Conflict         conflict()
      ├── 410 Expired          expired()
      ├── 413 RequestEntityTooLarge
      ├── 415 UnsupportedMediaType unsupported_media_type()
      ├── 422 Invalid          invalid()
      ├── 500 InternalError    internal_error()
      └── 504 Timeout          timeout()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One ``details.causes`` entry: a field-level reason for an ``Invalid`` (or other) error."""

    reason: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        """Render as the API server does: an empty ``reason`` or ``field`` is left out."""
        out = {"reason": self.reason} if self.reason else {}
        out["message"] = self.message
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class StatusError(Exception):
    """An API error answered as a ``Status`` object with ``code`` as the HTTP status."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[Cause] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        # An empty reason is left out (omitempty), as for the storage layer's untyped errors.
        if self.reason:
            body["reason"] = self.reason
        details = dict(self.details) if self.details is not None else None
        if self.causes:
            details = details or {}
            details["causes"] = [c.to_dict() for c in self.causes]
        if details is not None:
            body["details"] = details
        body["code"] = self.code
        return body


def success_status(*, name: str, group: str, plural: str, uid: str) -> dict[str, Any]:
    """The ``Status`` answered for an immediate delete of most kinds."""
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _resource_details(name: str, group: str, plural: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def qualified_resource(group: str, plural: str) -> str:
    """``configmaps`` for core, ``widgets.example.com`` for a group."""
    return f"{plural}.{group}" if group else plural


def not_found(*, group: str, plural: str, name: str) -> StatusError:
    """404 for a missing object: ``configmaps "x" not found``."""
    return StatusError(
        404,
        "NotFound",
        f'{qualified_resource(group, plural)} "{name}" not found',
        _resource_details(name, group, plural),
    )


def unknown_resource() -> StatusError:
    """404 for an unknown path or resource."""
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(*, group: str, plural: str, name: str) -> StatusError:
    """409 for a duplicate create."""
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(group, plural)} "{name}" already exists',
        _resource_details(name, group, plural),
    )


def conflict(*, group: str, plural: str, name: str, why: str | None = None) -> StatusError:
    """409 Conflict, by default for a stale resourceVersion."""
    why = why or (
        "the object has been modified; please apply your changes to the latest version and try again"
    )
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(group, plural)} "{name}": {why}',
        _resource_details(name, group, plural),
    )


def invalid(*, group: str, kind: str, name: str, causes: list[Cause]) -> StatusError:
    """422 Invalid: ``Widget.example.com "w1" is invalid: field: message`` (several causes in [])."""
    qualified_kind = f"{kind}.{group}" if group else kind
    # The message aggregates the causes without repeating an identical one (ToAggregate).
    rendered = list(
        dict.fromkeys(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    )
    joined = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    # An unnamed object (a create with generateName, request options) has no details.name.
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    return StatusError(
        422, "Invalid", f'{qualified_kind} "{name}" is invalid: {joined}', details, list(causes)
    )


def forbidden(
    *, group: str, plural: str, name: str, why: str, causes: list[Cause] | None = None
) -> StatusError:
    """403 Forbidden: ``<res> "<name>" is forbidden: <why>``."""
    return StatusError(
        403,
        "Forbidden",
        f'{qualified_resource(group, plural)} "{name}" is forbidden: {why}',
        _resource_details(name, group, plural),
        list(causes or []),
    )


def bad_request(message: str) -> StatusError:
    """400 BadRequest with no details."""
    return StatusError(400, "BadRequest", message)


def method_not_allowed() -> StatusError:
    """405 for a verb the resource does not offer."""
    return StatusError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def expired(message: str) -> StatusError:
    """410 Expired (watch history or continue token too old)."""
    return StatusError(410, "Expired", message)


def unsupported_media_type(content_type: str, accepted: list[str]) -> StatusError:
    """415 for a body the endpoint cannot decode (protobuf, SMP on a CR, …)."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def too_large(message: str) -> StatusError:
    """413 RequestEntityTooLarge (e.g. a JSON patch with more than 10,000 operations)."""
    return StatusError(413, "RequestEntityTooLarge", message)


def internal_error(message: str) -> StatusError:
    """500 InternalError; the message is repeated in ``details.causes[0]``."""
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {},
        [Cause(reason="", message=message)],
    )


#: The cause message of a ``ResourceVersionTooLarge`` timeout (the cause omits the numbers).
_CAUSE_MESSAGES = {"ResourceVersionTooLarge": "Too large resource version"}


def timeout(message: str, *, cause_reason: str = "", retry_after: int = 1) -> StatusError:
    """504 Timeout, e.g. ``Timeout: Too large resource version: 9, current: 5`` (retry after 1 s)."""
    causes = (
        [Cause(reason=cause_reason, message=_CAUSE_MESSAGES.get(cause_reason, message))]
        if cause_reason
        else []
    )
    return StatusError(
        504, "Timeout", f"Timeout: {message}", {"retryAfterSeconds": retry_after}, causes
    )
