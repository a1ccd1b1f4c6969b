"""The HTTPS server of the validating webhooks, run by every replica, leader or not.

Every request is decided by :func:`stackflow.webhooks.admission.review` with the operator's
namespace matcher, so every replica gives the same answer. The operator's license is read (with the
``enterprise_license`` callable) only for an object annotated to require an enterprise license. The serving certificate comes from the
webhook Secret (``follow_certificate``) and is loaded into the one TLS context the listener
uses: new connections get the new certificate as soon as the Secret changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web

from stackflow.stack.certificates import KeyPair
from stackflow.webhooks.admission import (
    WEBHOOKS,
    Answer,
    MalformedReviewError,
    decode_body,
    malformed,
    needs_license,
    review,
    unavailable,
)
from stackflow.webhooks.certs import WebhookClient, WebhookSettings, read_serving_pair

#: Larger bodies are refused before they are read (the API server sends far less).
MAX_BODY_BYTES = 3 * 1024 * 1024

_log = structlog.get_logger("stackflow.webhooks")


class WebhookPortInUseError(RuntimeError):
    """The webhook port is already taken; the message is the one line ``stackflow run`` prints."""


def server_tls_context() -> ssl.SSLContext:
    """A server TLS context that accepts TLS 1.2 and later only."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class WebhookServer:
    """Serves every ECK webhook path over HTTPS; ``load`` swaps the certificate in place."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        is_managed: Callable[[str], bool],
        enterprise_license: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """Serve on ``host:port`` (0 picks a free port), deciding scope with ``is_managed``.

        ``enterprise_license()`` says whether the operator runs with an enterprise license; without
        one the operator counts as Basic, as ECK does when it finds no license.
        """
        self.host = host
        self.port = port
        self.is_managed = is_managed
        self.enterprise_license = enterprise_license
        self.tls = server_tls_context()
        self.serving: KeyPair | None = None
        self.bound_port = 0
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        """The aiohttp application: one POST route per webhook path."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        for webhook in WEBHOOKS:
            app.router.add_post(webhook.path, self._review)
        return app

    async def _review(self, request: web.Request) -> web.Response:
        answer = await self.decide(request.path, await request.read())
        return web.json_response(answer.body, status=answer.status)

    async def decide(self, path: str, raw: bytes) -> Answer:
        """The answer to a raw AdmissionReview body sent to ``path``."""
        try:
            body = decode_body(raw)
        except MalformedReviewError as error:
            return malformed(str(error))
        enterprise = False
        if needs_license(body) and self.enterprise_license is not None:
            try:
                enterprise = await self.enterprise_license()
            except Exception as error:
                # A failed call, not a denial: with failurePolicy Ignore the API server admits
                # the object, so a license that cannot be read now blocks nobody.
                _log.warning("webhook.license_unreadable", error=str(error) or repr(error))
                return unavailable("the operator license could not be read")
        return review(path, body, self.is_managed, enterprise=enterprise)

    def load(self, pair: KeyPair) -> bool:
        """Serve with ``pair`` from the next connection on; False when it is already in use."""
        if pair == self.serving:
            return False
        # The ssl module loads certificates from files only: a private directory, removed at once.
        with tempfile.TemporaryDirectory(prefix="stackflow-webhook-") as directory:
            cert_path = os.path.join(directory, "tls.crt")
            key_path = os.path.join(directory, "tls.key")
            for path, content in ((cert_path, pair.cert_pem), (key_path, pair.key_pem)):
                with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as file:
                    file.write(content)
            self.tls.load_cert_chain(cert_path, key_path)
        self.serving = pair
        _log.info("webhook.certificate_loaded", port=self.bound_port)
        return True

    async def start(self) -> None:
        """Bind and serve; raises :class:`WebhookPortInUseError` when the port is taken."""
        self._runner = web.AppRunner(self.app(), handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls)
        try:
            await site.start()
        except OSError as error:
            await self.stop()
            if error.errno == errno.EADDRINUSE:
                raise WebhookPortInUseError(
                    f"webhook-port: port {self.port} on {self.host} is already in use "
                    "(set webhook-port to a free port)"
                ) from None
            raise
        self.bound_port = int(self._runner.addresses[0][1])
        _log.info("webhook.serving", host=self.host, port=self.bound_port)

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def follow_certificate(
    client: WebhookClient,
    settings: WebhookSettings,
    server: WebhookServer,
    *,
    stop: asyncio.Event,
    interval_seconds: float = 2.0,
) -> None:
    """Serve with the Secret's certificate, reloading it whenever the Secret's pair changes."""
    while not stop.is_set():
        try:
            pair = await read_serving_pair(client, settings)
            if pair is not None:
                server.load(pair)
        except Exception as error:  # the next tick retries; the old cert stays
            _log.warning("webhook.certificate_unreadable", error=str(error) or repr(error))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval_seconds)
