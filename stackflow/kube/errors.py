"""The Kubernetes error taxonomy of Stackflow, translated in one place.

Every failure of a Kubernetes call made through ``stackflow.kube`` surfaces as one of these
classes, raised ``from`` the original exception (``ApiException``, an aiohttp client error or
``asyncio.TimeoutError``)::

    KubeError                  status, reason, message, details, retryable
    ├── BadRequest             400 (also 405, 413, 415 and unknown 4xx)   not retryable
    ├── Unauthorized           401                                       not retryable
    ├── Forbidden              403                                       not retryable
    ├── NotFound               404                                       not retryable
    ├── AlreadyExists          409 reason AlreadyExists                  not retryable
    ├── Conflict               409 (stale resourceVersion, apply)        retryable (re-read first)
    ├── Gone                   410 Expired (watch/list too old)          retryable (relist)
    ├── Invalid                422, with ``causes``                      not retryable
    ├── TooManyRequests        429, with ``retry_after``                 retryable
    ├── Unavailable            5xx, connection errors, timeouts          retryable
    └── Undecodable            an answer that cannot be used (not JSON,  not retryable
                               nested too deep, wrong shape): a poison object

Retryability is data (``error.retryable``) so that one table — here — decides what the
activity layer retries; callers never parse status codes themselves.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Literal, ParamSpec, TypeVar

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "Cause",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "Undecodable",
    "error_from_status",
    "not_found",
    "translate_errors",
]


@dataclass(frozen=True)
class Cause:
    """One cause of an ``Invalid`` (or other) Status: which field, and why."""

    reason: str
    message: str
    field: str


class KubeError(Exception):
    """Base of every Kubernetes API error raised by ``stackflow.kube``."""

    retryable: ClassVar[bool] = False
    default_reason: ClassVar[str] = "Unknown"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Build an error from the parts of a ``metav1.Status``."""
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason or self.default_reason
        self.details: Mapping[str, Any] = dict(details or {})

    @property
    def causes(self) -> tuple[Cause, ...]:
        """The ``details.causes`` of the Status, if any."""
        raw = self.details.get("causes") or []
        return tuple(
            Cause(
                reason=str(item.get("reason", "")),
                message=str(item.get("message", "")),
                field=str(item.get("field", "")),
            )
            for item in raw
            if isinstance(item, Mapping)
        )

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body the API server would have answered."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": dict(self.details),
            "code": self.status,
        }

    def __repr__(self) -> str:
        """Show class, status, reason and message."""
        return f"{type(self).__name__}(status={self.status}, reason={self.reason!r}, message={self.message!r})"


class BadRequest(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """The request itself is malformed (400 and other client errors without a class)."""

    default_reason = "BadRequest"


class Unauthorized(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """401: the credentials were refused."""

    default_reason = "Unauthorized"


class Forbidden(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """403: RBAC, a terminating namespace, or a webhook denial."""

    default_reason = "Forbidden"


class NotFound(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """404: the object (or its namespace, or the resource) does not exist."""

    default_reason = "NotFound"


class AlreadyExists(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """409 AlreadyExists: a create collided with an existing object."""

    default_reason = "AlreadyExists"


class Conflict(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """409 Conflict: stale resourceVersion or apply conflict; re-read and retry."""

    retryable = True
    default_reason = "Conflict"


class Gone(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """410 Expired: the resourceVersion or continue token is too old; relist."""

    retryable = True
    default_reason = "Expired"


class Invalid(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """422 Invalid: the object failed validation; see ``causes``."""

    default_reason = "Invalid"


class TooManyRequests(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """429: throttled; ``retry_after`` holds the server's hint in seconds, if any."""

    retryable = True
    default_reason = "TooManyRequests"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        reason: str | None = None,
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Build a throttling error with the optional Retry-After hint."""
        super().__init__(message, status=status, reason=reason, details=details)
        self.retry_after = retry_after


class Unavailable(KubeError):  # noqa: N818 - Kubernetes' own reason names
    """5xx, a dropped connection or a timeout: the server may answer later."""

    retryable = True
    default_reason = "ServiceUnavailable"


class Undecodable(KubeError):  # noqa: N818 - named like its siblings
    """The API server answered, but with something the operator cannot use: bytes that are not
    JSON, an object nested deeper than ``stackflow.kube.decoding.MAX_OBJECT_DEPTH`` levels, or
    of the wrong shape. Reading it again gives the same answer until someone fixes the object.
    """

    default_reason = "Undecodable"


_CLASS_BY_STATUS: Mapping[int, type[KubeError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: BadRequest,
    409: Conflict,
    410: Gone,
    413: BadRequest,
    415: BadRequest,
    422: Invalid,
    429: TooManyRequests,
}


def error_class_for(status: int | None, reason: str | None) -> type[KubeError]:
    """The taxonomy class for an HTTP status and a Status ``reason`` (pure)."""
    if status == 409 and reason == "AlreadyExists":
        return AlreadyExists
    if status is None or status == 0:
        return Unavailable
    if status in _CLASS_BY_STATUS:
        return _CLASS_BY_STATUS[status]
    if status >= 500:
        return Unavailable
    if 400 <= status < 500:
        return BadRequest
    return KubeError


def error_from_status(
    status_body: Mapping[str, Any], *, http_status: int | None = None
) -> KubeError:
    """Build the error for a ``metav1.Status`` body (HTTP error or watch ERROR event)."""
    code = status_body.get("code")
    status = int(code) if isinstance(code, int) else http_status
    reason = status_body.get("reason")
    reason_text = str(reason) if reason else None
    message = str(status_body.get("message") or reason_text or f"HTTP {status}")
    details = status_body.get("details")
    error_class = error_class_for(status, reason_text)
    return error_class(
        message,
        status=status,
        reason=reason_text,
        details=details if isinstance(details, Mapping) else None,
    )


def not_found(*, plural: str, group: str, name: str) -> NotFound:
    """The NotFound the API server answers for a missing object, byte for byte."""
    group_resource = f"{plural}.{group}" if group else plural
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return NotFound(
        f'{group_resource} "{name}" not found', status=404, reason="NotFound", details=details
    )


def _retry_after(headers: Any) -> float | None:
    # Headers come as a CIMultiDict (or None for client-built ApiExceptions).
    try:
        value = headers.get("Retry-After") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _from_api_exception(exc: ApiException) -> KubeError:
    body: Any = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    parsed: Any = None
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            parsed = None
    status = int(exc.status) if exc.status else None
    if isinstance(parsed, Mapping) and parsed.get("kind") == "Status":
        error = error_from_status(parsed, http_status=status)
    else:
        text = body if isinstance(body, str) and body else str(exc.reason or "request failed")
        error_class = error_class_for(status, None)
        error = error_class(text, status=status, reason=None)
    if isinstance(error, TooManyRequests):
        error.retry_after = _retry_after(exc.headers)
    return error


def translate(exc: BaseException) -> KubeError | None:
    """The taxonomy error for a client-library exception, or None if it is not one."""
    if isinstance(exc, KubeError):
        return None
    if isinstance(exc, ApiException):
        return _from_api_exception(exc)
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return Unavailable(f"request timed out: {exc}", status=None, reason="Timeout")
    if isinstance(exc, aiohttp.ClientResponseError):
        error_class = error_class_for(exc.status, None)
        return error_class(exc.message or str(exc), status=exc.status)
    if isinstance(exc, aiohttp.ClientError):
        return Unavailable(
            f"connection to the API server failed: {type(exc).__name__}: {exc}",
            status=None,
            reason="ServiceUnavailable",
        )
    return None


_P = ParamSpec("_P")
_R = TypeVar("_R")


class translate_errors:  # noqa: N801 - used like a function: ``with translate_errors():``
    """Context manager (sync or async) and decorator translating client errors.

    ``with translate_errors():`` / ``async with translate_errors():`` around awaits, or
    ``@translate_errors()`` on an ``async def``. ``ApiException``, aiohttp client errors and
    timeouts become a ``KubeError`` raised ``from`` the original; anything else passes.
    """

    def __enter__(self) -> translate_errors:
        """Enter the translated block."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        """Re-raise a client-library exception as its taxonomy error."""
        if exc is None:
            return False
        translated = translate(exc)
        if translated is None:
            return False
        raise translated from exc

    async def __aenter__(self) -> translate_errors:
        """Enter the translated block."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        """Re-raise a client-library exception as its taxonomy error."""
        return self.__exit__(exc_type, exc, traceback)

    def __call__(self, func: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
        """Wrap an async function so that its client errors are translated."""

        @functools.wraps(func)
        async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with translate_errors():
                return await func(*args, **kwargs)

        return wrapper
