"""The webhook server: HTTPS with TLS 1.2+ only, the certificate swapped in place, a taken port."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from stackflow.webhooks.certs import WebhookSettings, webhook_certificates
from stackflow.webhooks.server import WebhookPortInUseError, WebhookServer

ES_PATH = "/validate-elasticsearch-k8s-elastic-co-v1-elasticsearch"
SETTINGS = WebhookSettings("elastic-system", "hook-cert", "hook", 0, in_cluster=False)


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem.decode())


async def test_serves_reviews_and_swaps_the_certificate() -> None:
    server = WebhookServer(host="127.0.0.1", port=0, is_managed=lambda namespace: False)
    first_ca, first = webhook_certificates(None, SETTINGS, now=datetime.now(UTC))
    second_ca, second = webhook_certificates(None, SETTINGS, now=datetime.now(UTC))
    assert server.load(first) is True
    assert server.load(first) is False
    await server.start()
    try:
        url = f"https://127.0.0.1:{server.bound_port}{ES_PATH}"
        async with aiohttp.ClientSession() as session:
            async with session.post(
                url, data=b"{", ssl=client_context(first_ca.cert_pem)
            ) as response:
                assert response.status == 400
                assert json.loads(await response.read())["kind"] == "AdmissionReview"
            server.load(second)
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                async with session.post(url, data=b"{", ssl=client_context(first_ca.cert_pem)):
                    pass
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=b"{", ssl=client_context(second_ca.cert_pem)) as response,
        ):
            assert response.status == 400
        # TLS 1.0 and 1.1 are refused by the server's context itself.
        assert server.tls.minimum_version == ssl.TLSVersion.TLSv1_2
    finally:
        await server.stop()


async def test_a_taken_port_is_one_line_naming_it_and_the_setting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = WebhookServer(host="127.0.0.1", port=port, is_managed=lambda namespace: True)
        with pytest.raises(WebhookPortInUseError) as caught:
            await server.start()
    assert str(caught.value) == (
        f"webhook-port: port {port} on 127.0.0.1 is already in use (set webhook-port to a free port)"
    )


@contextlib.asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[tuple[WebhookServer, ssl.SSLContext]]:
    """A started webhook server with a fresh certificate, and a client context trusting it."""
    server = WebhookServer(host="127.0.0.1", port=0, is_managed=lambda namespace: True, **options)
    ca, pair = webhook_certificates(None, SETTINGS, now=datetime.now(UTC))
    server.load(pair)
    await server.start()
    try:
        yield server, client_context(ca.cert_pem)
    finally:
        await server.stop()


async def test_a_body_over_the_limit_is_a_413_review() -> None:
    async with (
        serving(max_body_bytes=1024) as (server, context),
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{server.bound_port}{ES_PATH}", data=b" " * 4096, ssl=context
        ) as response,
    ):
        assert response.status == 413
        body = json.loads(await response.read())
        assert body["kind"] == "AdmissionReview"
        assert body["response"]["allowed"] is False
        assert body["response"]["status"]["message"] == "the request body is larger than 1024 bytes"


async def post_review(port: int, context: ssl.SSLContext) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"https://127.0.0.1:{port}{ES_PATH}", data=b"{", ssl=context) as response,
    ):
        return response.status


async def test_a_client_that_never_finishes_its_headers_is_cut_off() -> None:
    async with serving(read_timeout_seconds=0.5) as (server, context):
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.bound_port, ssl=context, server_hostname="127.0.0.1"
        )
        try:
            writer.write(f"POST {ES_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
            await writer.drain()
            # Meanwhile a whole request is answered.
            assert await post_review(server.bound_port, context) == 400
            # The server closes the half-sent request's connection without an answer (the
            # deadline only bounds a failing test).
            assert await asyncio.wait_for(reader.read(), timeout=60) == b""
        finally:
            writer.close()


async def test_a_client_that_never_finishes_its_body_gets_a_408() -> None:
    async with serving(read_timeout_seconds=0.5) as (server, context):
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.bound_port, ssl=context, server_hostname="127.0.0.1"
        )
        try:
            head = f"POST {ES_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
            writer.write(head.encode() + b'{"apiVersion":')
            await writer.drain()
            assert await post_review(server.bound_port, context) == 400
            answer = await asyncio.wait_for(reader.read(), timeout=60)
            assert answer.startswith(b"HTTP/1.1 408 ")
            assert b"the request body did not arrive within 0.5s" in answer
        finally:
            writer.close()


async def test_a_too_deep_review_over_http_is_a_denial() -> None:
    raw = (
        '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",'
        '"operation":"CREATE","object":{"kind":"Elasticsearch","metadata":{"name":"es"},'
        '"spec":{"nodeSets":[{"name":"a","config":' + '{"a":' * 5000 + "1" + "}" * 5000 + "}]}}}}"
    )
    async with (
        serving() as (server, context),
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{server.bound_port}{ES_PATH}", data=raw.encode(), ssl=context
        ) as response,
    ):
        assert response.status == 200
        body = json.loads(await response.read())
        assert body["response"]["allowed"] is False
        assert "spec.nodeSets[0].config: nested more than" in body["response"]["status"]["message"]
