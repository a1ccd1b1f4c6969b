"""A TLS-terminating TCP proxy for tests: TLS (optionally mutual) on 127.0.0.1 in front of a plain
server.

The Temporal dev server has no TLS flags, so the tests put this in front of it. gRPC is HTTP/2 over
one TCP stream, so terminating TLS and copying bytes both ways is enough; ALPN offers ``h2``
because gRPC clients ask for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stackflow.stack.certificates import (
    CertificateSettings,
    LeafRequest,
    create_ca,
    issue_leaf,
)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a test PKI: the CA, the server's pair (127.0.0.1, localhost), a client pair."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def write_pki(directory: Path, *, name: str = "test") -> TlsFiles:
    """Generate a CA, a server and a client certificate signed by it, as PEM files in ``directory``."""
    now = datetime.now(UTC)
    settings = CertificateSettings()
    ca = create_ca(common_name=f"{name}-ca", organizational_unit=name, now=now, settings=settings)
    server = issue_leaf(
        ca=ca,
        request=LeafRequest(
            common_name="temporal", dns_names=("localhost",), ip_addresses=("127.0.0.1",)
        ),
        now=now,
        settings=settings,
    )
    client = issue_leaf(
        ca=ca, request=LeafRequest(common_name="stackflow"), now=now, settings=settings
    )
    directory.mkdir(parents=True, exist_ok=True)

    def write(file_name: str, pem: bytes) -> Path:
        path = directory / file_name
        path.write_bytes(pem)
        return path

    return TlsFiles(
        ca=write(f"{name}-ca.crt", ca.cert_pem),
        server_cert=write(f"{name}-server.crt", server.cert_pem),
        server_key=write(f"{name}-server.key", server.key_pem),
        client_cert=write(f"{name}-client.crt", client.cert_pem),
        client_key=write(f"{name}-client.key", client.key_pem),
    )


def server_context(files: TlsFiles, *, require_client_cert: bool) -> ssl.SSLContext:
    """The proxy's server-side TLS context; with ``require_client_cert`` it is mutual TLS."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.server_cert, files.server_key)
    context.set_alpn_protocols(["h2"])
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(files.ca)
    return context


@dataclass
class TlsProxy:
    """A listening proxy: ``address`` is ``127.0.0.1:port``; ``handshakes`` counts completed ones."""

    port: int
    handshakes: int = 0
    failed_handshakes: int = 0

    @property
    def address(self) -> str:
        """The ``host:port`` a client dials."""
        return f"127.0.0.1:{self.port}"


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # Copy until EOF, then half-close so the other side sees the end too.
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


@contextlib.asynccontextmanager
async def tls_proxy(
    target_host: str, target_port: int, context: ssl.SSLContext
) -> AsyncIterator[TlsProxy]:
    """Serve TLS on a free port of 127.0.0.1, forwarding plain TCP to ``target_host:target_port``.

    Every connection and the listener are closed on exit.
    """
    proxy = TlsProxy(port=0)
    writers: set[asyncio.StreamWriter] = set()

    async def handle(
        client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        proxy.handshakes += 1
        writers.add(client_writer)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                target_host, target_port
            )
        except OSError:
            client_writer.close()
            return
        writers.add(upstream_writer)
        try:
            await asyncio.gather(
                _pump(client_reader, upstream_writer), _pump(upstream_reader, client_writer)
            )
        finally:
            for writer in (client_writer, upstream_writer):
                writer.close()

    # asyncio reports a failed handshake to the loop's exception handler, not to `handle`:
    # count it there so a test can tell "TLS refused" from "never connected".
    loop = asyncio.get_running_loop()
    previous_handler = loop.get_exception_handler()

    def on_error(loop: asyncio.AbstractEventLoop, details: dict[str, object]) -> None:
        if isinstance(details.get("exception"), ssl.SSLError):
            proxy.failed_handshakes += 1
            return
        if previous_handler is not None:
            previous_handler(loop, details)
        else:
            loop.default_exception_handler(details)

    loop.set_exception_handler(on_error)
    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
    proxy.port = int(server.sockets[0].getsockname()[1])
    try:
        yield proxy
    finally:
        server.close()
        for writer in list(writers):
            writer.close()
        await server.wait_closed()
        loop.set_exception_handler(previous_handler)


@contextlib.asynccontextmanager
async def metadata_recorder() -> AsyncIterator[tuple[int, list[dict[str, str]]]]:
    """A plain gRPC server on a free port of 127.0.0.1 that answers Temporal's ``GetSystemInfo``
    (the call a client makes on connect) and records each call's request headers.

    Yields the port and the list of recorded headers; the server is stopped on exit. Put it
    behind ``tls_proxy`` to see what a TLS client sends (the dev server cannot show that).
    """
    import grpc
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest, GetSystemInfoResponse

    recorded: list[dict[str, str]] = []

    async def get_system_info(
        request: GetSystemInfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> GetSystemInfoResponse:
        recorded.append({key: str(value) for key, value in context.invocation_metadata() or ()})
        return GetSystemInfoResponse()

    handler = grpc.method_handlers_generic_handler(
        "temporal.api.workflowservice.v1.WorkflowService",
        {
            "GetSystemInfo": grpc.unary_unary_rpc_method_handler(
                get_system_info,
                request_deserializer=GetSystemInfoRequest.FromString,
                response_serializer=GetSystemInfoResponse.SerializeToString,
            )
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([handler])
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port, recorded
    finally:
        await server.stop(grace=None)
