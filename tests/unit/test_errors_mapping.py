"""The one error table: Kubernetes and Elasticsearch errors → Temporal ApplicationError."""

from __future__ import annotations

from datetime import timedelta

import pytest
from temporalio.exceptions import ApplicationError

from activities.errors import InvalidSpecError, as_application_error, translated_errors
from stackflow.elastic import ElasticsearchError, ElasticsearchUnavailable
from stackflow.kube import errors as kube

SLOW = timedelta(seconds=60)


@pytest.mark.parametrize(
    ("error", "error_type", "non_retryable", "delay"),
    [
        pytest.param(InvalidSpecError("bad"), "InvalidSpec", True, None, id="invalid-spec"),
        pytest.param(kube.Invalid("422", status=422), "InvalidSpec", True, None, id="kube-422"),
        pytest.param(kube.Conflict("409", status=409), "KubeConflict", False, None, id="conflict"),
        pytest.param(kube.Gone("410", status=410), "KubeGone", False, None, id="gone"),
        pytest.param(
            kube.Unavailable("503", status=503), "KubeUnavailable", False, None, id="unavailable"
        ),
        pytest.param(
            kube.TooManyRequests("429", retry_after=7),
            "KubeTooManyRequests",
            False,
            timedelta(seconds=7),
            id="throttled-with-hint",
        ),
        pytest.param(
            kube.TooManyRequests("429"), "KubeTooManyRequests", False, None, id="throttled"
        ),
        pytest.param(kube.NotFound("404", status=404), "KubeNotFound", False, None, id="not-found"),
        pytest.param(
            kube.AlreadyExists("409", status=409), "KubeAlreadyExists", False, None, id="exists"
        ),
        pytest.param(kube.Forbidden("403", status=403), "KubeForbidden", False, SLOW, id="rbac"),
        pytest.param(
            kube.Unauthorized("401", status=401), "KubeUnauthorized", False, SLOW, id="auth"
        ),
        pytest.param(kube.BadRequest("400", status=400), "KubeBadRequest", False, SLOW, id="400"),
        pytest.param(
            ElasticsearchUnavailable("down"), "ElasticsearchUnavailable", False, None, id="es-down"
        ),
        pytest.param(ElasticsearchError(500, "x"), "ElasticsearchError", False, None, id="es-500"),
        pytest.param(ElasticsearchError(429, "x"), "ElasticsearchError", False, None, id="es-429"),
        pytest.param(ElasticsearchError(401, "x"), "ElasticsearchError", False, SLOW, id="es-401"),
        pytest.param(ElasticsearchError(400, "x"), "ElasticsearchError", False, SLOW, id="es-400"),
    ],
)
def test_error_table(
    error: Exception, error_type: str, non_retryable: bool, delay: timedelta | None
) -> None:
    mapped = as_application_error(error)

    assert mapped is not None
    assert (mapped.type, mapped.non_retryable, mapped.next_retry_delay) == (
        error_type,
        non_retryable,
        delay,
    )
    assert mapped.message == str(error)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(RuntimeError("bug"), id="programming-error"),
        pytest.param(ApplicationError("already", type="X"), id="already-application-error"),
    ],
)
def test_other_errors_pass_unchanged(error: Exception) -> None:
    assert as_application_error(error) is None


async def test_wrapped_activity_raises_application_error_from_the_original() -> None:
    original = kube.Conflict("stale", status=409)

    @translated_errors
    async def body() -> None:
        raise original

    with pytest.raises(ApplicationError) as raised:
        await body()

    assert raised.value.type == "KubeConflict"
    assert raised.value.__cause__ is original
