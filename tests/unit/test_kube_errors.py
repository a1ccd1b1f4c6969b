"""The Kubernetes error taxonomy: one translation table, retryability as data."""

from __future__ import annotations

import json
from typing import Any, cast

import aiohttp
import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from stackflow.kube import errors


def _api_exception(
    status: int, body: Any, *, headers: dict[str, str] | None = None
) -> ApiException:
    exc = ApiException(status=status, reason="HTTP reason phrase")
    # kubernetes_asyncio decodes the body to str before raising; the stubs say bytes.
    exc.body = cast(Any, json.dumps(body) if not isinstance(body, str) else body)
    exc.headers = cast(Any, headers)
    return exc


def _status(code: int, reason: str, message: str, details: Any = None) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }


def _raise_translated(exc: BaseException) -> errors.KubeError:
    with pytest.raises(errors.KubeError) as caught, errors.translate_errors():
        raise exc
    return caught.value


@pytest.mark.parametrize(
    ("code", "reason", "expected", "retryable"),
    [
        (400, "BadRequest", errors.BadRequest, False),
        (401, "Unauthorized", errors.Unauthorized, False),
        (403, "Forbidden", errors.Forbidden, False),
        (404, "NotFound", errors.NotFound, False),
        (405, "MethodNotAllowed", errors.BadRequest, False),
        (409, "AlreadyExists", errors.AlreadyExists, False),
        (409, "Conflict", errors.Conflict, True),
        (410, "Expired", errors.Gone, True),
        (410, "Gone", errors.Gone, True),
        (415, "UnsupportedMediaType", errors.BadRequest, False),
        (422, "Invalid", errors.Invalid, False),
        (429, "TooManyRequests", errors.TooManyRequests, True),
        (500, "InternalError", errors.Unavailable, True),
        (503, "ServiceUnavailable", errors.Unavailable, True),
        (504, "Timeout", errors.Unavailable, True),
    ],
)
def test_api_exception_status_maps_to_class(
    code: int, reason: str, expected: type[errors.KubeError], retryable: bool
) -> None:
    exc = _api_exception(code, _status(code, reason, f"message for {code}"))

    error = _raise_translated(exc)

    assert type(error) is expected
    assert error.retryable is retryable
    assert (error.status, error.reason, error.message) == (code, reason, f"message for {code}")
    assert error.__cause__ is exc


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (TimeoutError(), "Timeout"),
        (aiohttp.ServerDisconnectedError(), "ServiceUnavailable"),
        (aiohttp.ClientPayloadError("stream cut"), "ServiceUnavailable"),
        (aiohttp.ClientConnectionError("refused"), "ServiceUnavailable"),
    ],
)
def test_transport_failures_are_unavailable_and_retryable(exc: Exception, reason: str) -> None:
    error = _raise_translated(exc)

    assert type(error) is errors.Unavailable
    assert error.retryable
    assert error.status is None
    assert error.reason == reason
    assert error.__cause__ is exc


def test_non_status_body_keeps_the_text_and_classifies_by_code() -> None:
    error = _raise_translated(_api_exception(502, "<html>bad gateway</html>"))

    assert type(error) is errors.Unavailable
    assert error.message == "<html>bad gateway</html>"


def test_invalid_exposes_its_causes() -> None:
    details = {
        "name": "w1",
        "group": "example.com",
        "kind": "Widget",
        "causes": [
            {"reason": "FieldValueInvalid", "message": "Invalid value", "field": "spec.size"},
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.name"},
        ],
    }
    exc = _api_exception(
        422, _status(422, "Invalid", 'Widget.example.com "w1" is invalid', details)
    )

    error = _raise_translated(exc)

    assert isinstance(error, errors.Invalid)
    assert error.causes == (
        errors.Cause(reason="FieldValueInvalid", message="Invalid value", field="spec.size"),
        errors.Cause(reason="FieldValueRequired", message="Required value", field="spec.name"),
    )


@pytest.mark.parametrize(("header", "expected"), [("7", 7.0), (None, None), ("soon", None)])
def test_too_many_requests_carries_retry_after(header: str | None, expected: float | None) -> None:
    headers = {"Retry-After": header} if header is not None else {}
    exc = _api_exception(429, _status(429, "TooManyRequests", "slow down"), headers=headers)

    error = _raise_translated(exc)

    assert isinstance(error, errors.TooManyRequests)
    assert error.retry_after == expected


def test_other_exceptions_pass_through_untouched() -> None:
    with pytest.raises(KeyError), errors.translate_errors():
        raise KeyError("not a client error")


async def test_async_context_manager_and_decorator_translate() -> None:
    exc = _api_exception(404, _status(404, "NotFound", 'configmaps "x" not found'))

    with pytest.raises(errors.NotFound):
        async with errors.translate_errors():
            raise exc

    @errors.translate_errors()
    async def failing_call() -> None:
        raise exc

    with pytest.raises(errors.NotFound) as caught:
        await failing_call()
    assert caught.value.__cause__ is exc


@pytest.mark.parametrize(
    ("plural", "group", "message", "details"),
    [
        ("configmaps", "", 'configmaps "x" not found', {"name": "x", "kind": "configmaps"}),
        (
            "elasticsearches",
            "elasticsearch.k8s.elastic.co",
            'elasticsearches.elasticsearch.k8s.elastic.co "x" not found',
            {"name": "x", "kind": "elasticsearches", "group": "elasticsearch.k8s.elastic.co"},
        ),
    ],
)
def test_synthetic_not_found_equals_the_servers(
    plural: str, group: str, message: str, details: dict[str, str]
) -> None:
    from_server = _raise_translated(_api_exception(404, _status(404, "NotFound", message, details)))

    synthetic = errors.not_found(plural=plural, group=group, name="x")

    assert type(synthetic) is type(from_server)
    assert synthetic.to_status() == from_server.to_status()
    assert str(synthetic) == str(from_server)


def test_watch_error_event_status_becomes_gone() -> None:
    status = _status(410, "Expired", "too old resource version: 5 (9)")

    error = errors.error_from_status(status)

    assert isinstance(error, errors.Gone)
    assert error.message == "too old resource version: 5 (9)"
