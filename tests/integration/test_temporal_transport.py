"""Temporal over TLS and mutual TLS: the operator's client against a real dev server behind TLS.

The dev server has no TLS flags, so ``tests/tls_proxy.py`` terminates TLS in front of it with a
CA, server and client certificate generated here. The API key's header is read by a recording
gRPC server behind the same proxy (the dev server ignores it and cannot show it).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.testing import WorkflowEnvironment

from stackflow.config import OperatorConfig
from stackflow.temporal import connect_client
from tests.e2e.harness import temporal_server
from tests.tls_proxy import TlsFiles, metadata_recorder, server_context, tls_proxy, write_pki

#: A failed TLS connection must fail well within this, never hang.
FAIL_WITHIN = 30.0


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """A plain Temporal dev server on 127.0.0.1, stopped after the test."""
    async with temporal_server() as env:
        yield env


def _target(env: WorkflowEnvironment) -> tuple[str, int]:
    host, port = env.client.service_client.config.target_host.rsplit(":", 1)
    return host, int(port)


def _config(
    address: str,
    *,
    ca: Path,
    cert: Path | None = None,
    key: Path | None = None,
    api_key: str | None = None,
) -> OperatorConfig:
    values: dict[str, Any] = {"temporal-address": address, "temporal-tls-ca": str(ca)}
    if cert is not None and key is not None:
        values |= {"temporal-tls-cert": str(cert), "temporal-tls-key": str(key)}
    if api_key is not None:
        values["temporal-api-key"] = api_key
    return OperatorConfig.model_validate(values)


async def _namespace_described(config: OperatorConfig) -> bool:
    client = await asyncio.wait_for(connect_client(config), timeout=FAIL_WITHIN)
    response = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=config.temporal_namespace)
    )
    return response.namespace_info.name == config.temporal_namespace


def test_run_check_accepts_the_tls_files(tmp_path: Path) -> None:
    """``stackflow run --check`` takes the TLS files and the API key and prints them (key redacted)."""
    files = write_pki(tmp_path / "pki")
    config = tmp_path / "operator.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "temporal-address": "127.0.0.1:7233",
                "temporal-tls-ca": str(files.ca),
                "temporal-tls-cert": str(files.client_cert),
                "temporal-tls-key": str(files.client_key),
                "temporal-api-key": "not-printed",
            }
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "stackflow.cli", "run", "--config", str(config), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    effective = yaml.safe_load(result.stdout)
    assert effective["temporal-tls-ca"] == str(files.ca)
    assert effective["temporal-tls-cert"] == str(files.client_cert)
    assert effective["temporal-tls-key"] == str(files.client_key)
    assert "not-printed" not in result.stdout


async def test_server_tls_connects_and_a_wrong_ca_fails_clearly(
    tmp_path: Path, temporal: WorkflowEnvironment
) -> None:
    """With the server's CA the client works (with or without an API key); with another CA the
    connection fails at once, naming the address and the certificate problem."""
    files = write_pki(tmp_path / "pki")
    wrong: TlsFiles = write_pki(tmp_path / "wrong", name="wrong")
    context = server_context(files, require_client_cert=False)
    async with tls_proxy(*_target(temporal), context) as proxy:
        assert await _namespace_described(_config(proxy.address, ca=files.ca))
        assert await _namespace_described(_config(proxy.address, ca=files.ca, api_key="k"))

        with pytest.raises(RuntimeError) as failure:
            await asyncio.wait_for(
                connect_client(_config(proxy.address, ca=wrong.ca)), timeout=FAIL_WITHIN
            )
        message = str(failure.value)
        assert proxy.address in message
        assert "not signed by" in message
        assert "temporal-tls-ca" in message


async def test_mutual_tls_connects_and_a_missing_client_cert_fails(
    tmp_path: Path, temporal: WorkflowEnvironment
) -> None:
    """A server requiring client certificates accepts the configured pair and refuses a client
    without one, with an error naming the address instead of a hang."""
    files = write_pki(tmp_path / "pki")
    context = server_context(files, require_client_cert=True)
    async with tls_proxy(*_target(temporal), context) as proxy:
        mutual = _config(proxy.address, ca=files.ca, cert=files.client_cert, key=files.client_key)
        assert await _namespace_described(mutual)

        with pytest.raises(RuntimeError) as failure:
            await asyncio.wait_for(
                connect_client(_config(proxy.address, ca=files.ca)), timeout=FAIL_WITHIN
            )
        assert proxy.address in str(failure.value)


async def test_api_key_is_sent_as_a_bearer_token_over_tls(tmp_path: Path) -> None:
    """With ``temporal-api-key`` the client's calls carry ``authorization: Bearer <key>``.

    A recording gRPC server stands in for Temporal behind the TLS proxy: the dev server ignores
    the header and cannot show it.
    """
    files = write_pki(tmp_path / "pki")
    context = server_context(files, require_client_cert=False)
    async with (
        metadata_recorder() as (port, recorded),
        tls_proxy("127.0.0.1", port, context) as proxy,
    ):
        config = _config(proxy.address, ca=files.ca, api_key="the-key")
        await asyncio.wait_for(connect_client(config), timeout=FAIL_WITHIN)
    assert recorded, "the client made no call"
    assert all(headers.get("authorization") == "Bearer the-key" for headers in recorded)
