"""``connect_client`` hands the TLS files and the API key to the SDK, and names the address when a
TLS connection fails.

This checks what reaches ``Client.connect`` (a monkeypatched recorder); that the key then travels
as ``authorization: Bearer <key>`` is checked over TLS in
``tests/integration/test_temporal_transport.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, TLSConfig

from stackflow.config import OperatorConfig
from stackflow.temporal import connect_client
from tests.tls_proxy import write_pki


class CapturedConnect:
    """Stands in for ``Client.connect``: records its arguments, then returns or raises."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.target: str | None = None
        self.kwargs: dict[str, Any] = {}

    async def __call__(self, target: str, **kwargs: Any) -> Client:
        self.target, self.kwargs = target, kwargs
        if self.error is not None:
            raise self.error
        return object()  # type: ignore[return-value]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> CapturedConnect:
    """``Client.connect`` replaced by a recorder."""
    recorder = CapturedConnect()
    monkeypatch.setattr(Client, "connect", recorder)
    return recorder


async def test_api_key_is_passed_and_implies_tls(captured: CapturedConnect) -> None:
    """An API key alone: the SDK gets it and TLS with the system roots (as Temporal Cloud needs)."""
    config = OperatorConfig.model_validate(
        {"temporal-address": "ns.tmprl.cloud:7233", "temporal-api-key": "secret-key"}
    )
    await connect_client(config)
    assert captured.target == "ns.tmprl.cloud:7233"
    assert captured.kwargs["api_key"] == "secret-key"
    assert captured.kwargs["tls"] is True


async def test_tls_files_are_passed(tmp_path: Path, captured: CapturedConnect) -> None:
    """The CA, certificate and key files reach the SDK's TLSConfig as their PEM bytes."""
    files = write_pki(tmp_path)
    config = OperatorConfig.model_validate(
        {
            "temporal-address": "127.0.0.1:7233",
            "temporal-tls-ca": str(files.ca),
            "temporal-tls-cert": str(files.client_cert),
            "temporal-tls-key": str(files.client_key),
            "temporal-api-key": "secret-key",
        }
    )
    await connect_client(config)
    tls = captured.kwargs["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.server_root_ca_cert == files.ca.read_bytes()
    assert tls.client_cert == files.client_cert.read_bytes()
    assert tls.client_private_key == files.client_key.read_bytes()
    assert captured.kwargs["api_key"] == "secret-key"


async def test_plain_connection_is_unchanged(captured: CapturedConnect) -> None:
    """No TLS setting and no key: no TLS, no key, and the SDK's error passes through as it is."""
    await connect_client(OperatorConfig())
    assert captured.kwargs["tls"] is False
    assert captured.kwargs["api_key"] is None

    original = RuntimeError("Failed client connect: refused")
    captured.error = original
    with pytest.raises(RuntimeError) as failure:
        await connect_client(OperatorConfig())
    assert failure.value is original


async def test_a_tls_failure_names_the_address_and_the_problem(
    tmp_path: Path, captured: CapturedConnect
) -> None:
    """The SDK's certificate error becomes one RuntimeError naming the address and the CA."""
    files = write_pki(tmp_path)
    captured.error = RuntimeError(
        "Failed client connect: Server connection error: tonic::transport::Error(Transport, "
        "ConnectError(Custom { kind: InvalidData, error: InvalidCertificate(UnknownIssuer) }))"
    )
    config = OperatorConfig.model_validate(
        {"temporal-address": "temporal.example:7233", "temporal-tls-ca": str(files.ca)}
    )
    with pytest.raises(RuntimeError) as failure:
        await connect_client(config)
    message = str(failure.value)
    assert message.startswith("cannot connect to Temporal at temporal.example:7233 over TLS: ")
    assert 'not signed by the "temporal-tls-ca" CA' in message
    assert "UnknownIssuer" in message
