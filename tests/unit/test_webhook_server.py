"""The webhook server: HTTPS with TLS 1.2+ only, the certificate swapped in place, a taken port."""

from __future__ import annotations

import json
import socket
import ssl
from datetime import UTC, datetime

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
