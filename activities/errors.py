"""The one place that turns Kubernetes and Elasticsearch errors into Temporal ``ApplicationError``.

Retryability is data: ``stackflow.kube`` errors carry ``retryable``, Elasticsearch client errors
carry an HTTP status (or none when the cluster was not reached), and the table below decides the
``type``, ``non_retryable`` and ``next_retry_delay`` of the ``ApplicationError`` an activity raises.

Only ``InvalidSpec`` is non-retryable: the workflow answers it with a condition and an event and waits
for the next trigger. Every other failure is retried by the activity retry policy (the workflow must
never fail on an I/O error); errors that will not heal by themselves within seconds (RBAC, a bad
request) get a long ``next_retry_delay`` so that they retry slowly instead of spinning.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import ParamSpec, TypeVar

from temporalio.exceptions import ApplicationError

from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors as kube_errors
from stackflow.models.engine import INVALID_SPEC_ERROR

__all__ = [
    "INVALID_SPEC_ERROR",
    "SLOW_RETRY_DELAY",
    "ErrorVerdict",
    "InvalidSpecError",
    "as_application_error",
    "elasticsearch_verdict",
    "invalid_spec_message",
    "kube_verdict",
    "translated_errors",
]

#: The delay before retrying an error that needs a human (RBAC, a malformed request).
SLOW_RETRY_DELAY = timedelta(seconds=60)


class InvalidSpecError(Exception):
    """A resource's spec cannot be reconciled as written; the user must change it."""


@dataclass(frozen=True)
class ErrorVerdict:
    """How an activity failure is reported to Temporal (pure data, see the module table)."""

    type: str
    non_retryable: bool = False
    next_retry_delay: timedelta | None = None


def kube_verdict(error: kube_errors.KubeError) -> ErrorVerdict:
    """The verdict for a Kubernetes API error (pure)."""
    error_type = f"Kube{type(error).__name__}"
    if isinstance(error, kube_errors.Invalid):
        # The API server refused an object built from the user's spec: only a spec change helps.
        return ErrorVerdict(type=INVALID_SPEC_ERROR, non_retryable=True)
    if isinstance(error, kube_errors.TooManyRequests):
        delay = timedelta(seconds=error.retry_after) if error.retry_after else None
        return ErrorVerdict(type=error_type, next_retry_delay=delay)
    if error.retryable:
        return ErrorVerdict(type=error_type)
    if isinstance(error, kube_errors.AlreadyExists | kube_errors.NotFound):
        # A create race or an object deleted under us: the next attempt re-reads the world.
        return ErrorVerdict(type=error_type)
    return ErrorVerdict(type=error_type, next_retry_delay=SLOW_RETRY_DELAY)


def elasticsearch_verdict(error: ElasticsearchError | ElasticsearchUnavailable) -> ErrorVerdict:
    """The verdict for an Elasticsearch client error, read from its HTTP status (pure).

    Unavailable (no answer), 5xx, 408, 409 and 429 are transient; 401/403 need credentials to be
    fixed and any other 4xx is a request the operator built: both retry slowly.
    """
    if isinstance(error, ElasticsearchUnavailable):
        return ErrorVerdict(type="ElasticsearchUnavailable")
    if error.status >= 500 or error.status in (408, 409, 429):
        return ErrorVerdict(type="ElasticsearchError")
    return ErrorVerdict(type="ElasticsearchError", next_retry_delay=SLOW_RETRY_DELAY)


def verdict_for(error: Exception) -> ErrorVerdict | None:
    """The verdict for any error an activity may see, or None if it is not an I/O error (pure)."""
    if isinstance(error, InvalidSpecError):
        return ErrorVerdict(type=INVALID_SPEC_ERROR, non_retryable=True)
    if isinstance(error, kube_errors.KubeError):
        return kube_verdict(error)
    if isinstance(error, ElasticsearchError | ElasticsearchUnavailable):
        return elasticsearch_verdict(error)
    return None


def as_application_error(error: Exception) -> ApplicationError | None:
    """The ``ApplicationError`` to raise for ``error``, or None to let it propagate as it is."""
    if isinstance(error, ApplicationError):
        return None
    verdict = verdict_for(error)
    if verdict is None:
        return None
    return ApplicationError(
        str(error) or type(error).__name__,
        type=verdict.type,
        non_retryable=verdict.non_retryable,
        next_retry_delay=verdict.next_retry_delay,
    )


def invalid_spec_message(error: Exception) -> str | None:
    """The message of an error that means "the spec is invalid", or None for any other error."""
    if isinstance(error, ApplicationError):
        return error.message if error.type == INVALID_SPEC_ERROR else None
    verdict = verdict_for(error)
    if verdict is None or verdict.type != INVALID_SPEC_ERROR:
        return None
    return str(error) or type(error).__name__


_P = ParamSpec("_P")
_R = TypeVar("_R")


def translated_errors(func: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """Wrap an activity body so that its I/O errors leave it as ``ApplicationError``."""

    @functools.wraps(func)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await func(*args, **kwargs)
        except Exception as error:
            application_error = as_application_error(error)
            if application_error is None:
                raise
            raise application_error from error

    return wrapper
