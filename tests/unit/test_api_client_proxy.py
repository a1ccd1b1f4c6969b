"""The API server's proxy from the environment, read once when the client is built."""

from __future__ import annotations

import pytest

from stackflow.kube.client import proxy_from_environment

_PROXY = "http://proxy.test:3128"


@pytest.mark.parametrize(
    ("environment", "server", "expected"),
    [
        ({}, "https://127.0.0.1:6443", None),
        ({"HTTPS_PROXY": _PROXY}, "https://127.0.0.1:6443", _PROXY),
        ({"https_proxy": _PROXY}, "https://127.0.0.1:6443", _PROXY),
        ({"HTTP_PROXY": _PROXY}, "https://127.0.0.1:6443", None),
        ({"HTTP_PROXY": _PROXY}, "http://127.0.0.1:8080", _PROXY),
        ({"HTTPS_PROXY": _PROXY, "NO_PROXY": "127.0.0.1"}, "https://127.0.0.1:6443", None),
        ({"HTTPS_PROXY": _PROXY, "NO_PROXY": "*"}, "https://kubernetes.default.svc", None),
        (
            {"HTTPS_PROXY": _PROXY, "NO_PROXY": ".svc"},
            "https://kubernetes.default.svc:443",
            None,
        ),
        ({"HTTPS_PROXY": _PROXY, "NO_PROXY": ".cluster.local"}, "https://api.test", _PROXY),
    ],
)
def test_the_proxy_the_environment_names_for_the_server(
    no_proxy_environment: pytest.MonkeyPatch,
    environment: dict[str, str],
    server: str,
    expected: str | None,
) -> None:
    for name, value in environment.items():
        no_proxy_environment.setenv(name, value)
    assert proxy_from_environment(server) == expected
