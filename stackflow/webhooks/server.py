"""The HTTPS server of the validating webhooks, run by every replica, leader or not.

Every request is decided by :func:`stackflow.webhooks.admission.review` with the operator's
namespace matcher, so every replica gives the same answer. The operator's license is read (with the
``enterprise_license`` callable) only for an object annotated to require an enterprise license,
and at most once per ``LICENSE_VERDICT_SECONDS`` (``CachedLicenseVerdict``). A request must send its
headers, then its body, within ``READ_TIMEOUT_SECONDS`` (else the connection is closed, or the
answer is a 408) and hold at most ``MAX_BODY_BYTES`` (else a 413). The serving certificate comes from the
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
import time
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
    refused,
    review,
    unavailable,
)
from stackflow.webhooks.certs import WebhookClient, WebhookSettings, read_serving_pair

#: Larger bodies are refused with a 413 (an AdmissionReview holds the object and, on UPDATE, its
#: old version: at most twice the API server's 3 MiB request limit).
MAX_BODY_BYTES = 7 * 1024 * 1024

#: How long a client may take to send a request's headers, and then its body; a connection that
#: sends nothing for as long is closed (the API server opens a new one when it needs it).
READ_TIMEOUT_SECONDS = 10.0

#: How long a license verdict answers the reviews that need one: at most one license read per
#: this many seconds, however many annotated objects are reviewed.
LICENSE_VERDICT_SECONDS = 30.0

_log = structlog.get_logger("stackflow.webhooks")


class WebhookPortInUseError(RuntimeError):
    """The webhook port is already taken; the message is the one line ``stackflow run`` prints."""


def server_tls_context() -> ssl.SSLContext:
    """A server TLS context that accepts TLS 1.2 and later only."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class CachedLicenseVerdict:
    """The operator's license verdict, read at most once per ``ttl_seconds``: a burst of
    annotated objects costs one license read, not one cluster-wide Secret list each.

    Reviews that arrive while it is being read wait for that one read. A failed read is not
    remembered: the next review tries again.
    """

    def __init__(
        self,
        read: Callable[[], Awaitable[bool]],
        *,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Answer with ``read()``'s verdict, reused for ``ttl_seconds``."""
        self._read = read
        self._ttl = ttl_seconds
        self._clock = clock
        self._lock = asyncio.Lock()
        self._verdict: tuple[float, bool] | None = None

    def _fresh(self) -> bool | None:
        if self._verdict is not None and self._clock() - self._verdict[0] < self._ttl:
            return self._verdict[1]
        return None

    async def __call__(self) -> bool:
        """Whether the operator runs with an enterprise license (raises what ``read`` raises)."""
        fresh = self._fresh()
        if fresh is not None:
            return fresh
        async with self._lock:
            fresh = self._fresh()
            if fresh is not None:
                return fresh
            licensed = await self._read()
            self._verdict = (self._clock(), licensed)
            return licensed


class WebhookServer:
    """Serves every ECK webhook path over HTTPS; ``load`` swaps the certificate in place."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        is_managed: Callable[[str], bool],
        enterprise_license: Callable[[], Awaitable[bool]] | None = None,
        read_timeout_seconds: float = READ_TIMEOUT_SECONDS,
        max_body_bytes: int = MAX_BODY_BYTES,
        license_verdict_seconds: float = LICENSE_VERDICT_SECONDS,
    ) -> None:
        """Serve on ``host:port`` (0 picks a free port), deciding scope with ``is_managed``.

        ``enterprise_license()`` says whether the operator runs with an enterprise license; without
        one the operator counts as Basic, as ECK does when it finds no license. Its answer is
        reused for ``license_verdict_seconds`` (concurrent reviews share one read). A request
        must arrive within ``read_timeout_seconds`` (headers, then body) and hold at most
        ``max_body_bytes``.
        """
        self.host = host
        self.port = port
        self.is_managed = is_managed
        self.enterprise_license = (
            CachedLicenseVerdict(enterprise_license, ttl_seconds=license_verdict_seconds)
            if enterprise_license is not None
            else None
        )
        self.read_timeout_seconds = read_timeout_seconds
        self.max_body_bytes = max_body_bytes
        self.tls = server_tls_context()
        self.serving: KeyPair | None = None
        self.bound_port = 0
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        """The aiohttp application: one POST route per webhook path."""
        app = web.Application(client_max_size=self.max_body_bytes)
        for webhook in WEBHOOKS:
            app.router.add_post(webhook.path, self._review)
        return app

    async def _review(self, request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(self.read_timeout_seconds):
                raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            answer = refused(413, f"the request body is larger than {self.max_body_bytes} bytes")
            return web.json_response(answer.body, status=answer.status)
        except TimeoutError:
            answer = refused(
                408, f"the request body did not arrive within {self.read_timeout_seconds:g}s"
            )
            response = web.json_response(answer.body, status=answer.status)
            response.force_close()
            return response
        try:
            answer = await self.decide(request.path, raw)
        except Exception as error:
            # One line, no traceback: the request is answered, the server goes on.
            _log.warning("webhook.review_failed", path=request.path, error=repr(error))
            answer = unavailable("the review failed; see the operator log")
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
        # keepalive_timeout also bounds a connection whose request headers are not complete;
        # lingering_time how long the unread rest of a refused body is drained.
        self._runner = web.AppRunner(
            self.app(),
            handle_signals=False,
            access_log=None,
            keepalive_timeout=self.read_timeout_seconds,
            lingering_time=self.read_timeout_seconds,
        )
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
