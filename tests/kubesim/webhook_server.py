"""A small HTTPS AdmissionReview server for tests: self-signed CA, scriptable answers, recorded reviews.

Usage::

    async with WebhookServer.start() as server:
        server.answer("/validate", deny(403, "nope"))
        webhook = {"clientConfig": {"url": server.url("/validate"), "caBundle": server.ca_bundle}, ...}
        ...
        server.reviews  # the AdmissionReview bodies received, in order
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# An answer turns the received AdmissionReview into the body to send back.
Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _review(request_review: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request_review["request"]["uid"], **response},
    }


def allow(*, warnings: list[str] | None = None) -> Answer:
    """Answer ``allowed: true`` (with optional warnings)."""

    async def answer(review: dict[str, Any]) -> dict[str, Any]:
        return _review(review, {"allowed": True, "warnings": warnings or []})

    return answer


def deny(code: int, message: str = "", *, reason: str = "") -> Answer:
    """Answer ``allowed: false`` with the given status."""

    async def answer(review: dict[str, Any]) -> dict[str, Any]:
        status = {"code": code, "message": message, "reason": reason}
        return _review(review, {"allowed": False, "status": status})

    return answer


def patch(operations: list[dict[str, Any]]) -> Answer:
    """Answer ``allowed: true`` with a JSONPatch."""
    encoded = base64.b64encode(json.dumps(operations).encode()).decode()

    async def answer(review: dict[str, Any]) -> dict[str, Any]:
        return _review(review, {"allowed": True, "patchType": "JSONPatch", "patch": encoded})

    return answer


def raw(body: dict[str, Any]) -> Answer:
    """Answer a fixed body (e.g. a wrong uid or a missing response)."""

    async def answer(review: dict[str, Any]) -> dict[str, Any]:
        return body

    return answer


def hang(release: asyncio.Event) -> Answer:
    """Never answer until ``release`` is set (for timeouts)."""

    async def answer(review: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return _review(review, {"allowed": True})

    return answer


@dataclass(frozen=True)
class WebhookCertificates:
    """A CA and a server certificate it signed, PEM encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def make_certificates(dns_names: list[str]) -> WebhookCertificates:
    """A self-signed CA and a server certificate for 127.0.0.1, localhost and ``dns_names``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim test webhook CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.DNSName("localhost"),
        *(x509.DNSName(name) for name in dns_names),
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return WebhookCertificates(
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


@dataclass
class WebhookServer:
    """A running HTTPS webhook server on 127.0.0.1; answers are set per path (default: allow)."""

    port: int
    certificates: WebhookCertificates
    reviews: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # request path of each review, in order
    answers: dict[str, Answer] = field(default_factory=dict)

    @property
    def ca_bundle(self) -> str:
        """The CA as a ``caBundle`` value (base64 PEM)."""
        return base64.b64encode(self.certificates.ca_pem).decode()

    @property
    def address(self) -> str:
        """``127.0.0.1:port``."""
        return f"127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """``https://127.0.0.1:port/path``."""
        return f"https://{self.address}{path}"

    def answer(self, path: str, answer: Answer) -> None:
        """Set how ``path`` answers from now on."""
        self.answers[path] = answer

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review)
        self.paths.append(request.path_qs)
        answer = self.answers.get(request.path, allow())
        return web.json_response(await answer(review))

    @classmethod
    @asynccontextmanager
    async def start(cls, *, dns_names: list[str] | None = None) -> AsyncIterator[WebhookServer]:
        """Serve until the context exits."""
        certificates = make_certificates(dns_names or [])
        context = _server_context(certificates)
        server = cls(port=0, certificates=certificates)
        app = web.Application()
        app.router.add_post("/{tail:.*}", server._handle)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        server.port = runner.addresses[0][1]
        try:
            yield server
        finally:
            await runner.cleanup()


def _server_context(certificates: WebhookCertificates) -> ssl.SSLContext:
    # ssl only loads certificate chains from files.
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as directory:
        cert_file, key_file = Path(directory, "tls.crt"), Path(directory, "tls.key")
        cert_file.write_bytes(certificates.cert_pem)
        key_file.write_bytes(certificates.key_pem)
        context.load_cert_chain(cert_file, key_file)
    return context


async def closed_port() -> int:
    """A port on 127.0.0.1 with nothing listening (a server is started and stopped on it)."""
    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port: int = runner.addresses[0][1]
    await runner.cleanup()
    return port
