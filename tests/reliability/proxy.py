"""A fault-injecting HTTP proxy in front of the Kubernetes API: the only fake in the reliability rig.

The operator talks to kubesim through it; the rig turns its faults on and off while the load runs:
latency, a share of requests answered ``503``, a share of updates answered ``409 Conflict`` (as a
concurrent writer would cause), and cutting every open watch stream. Requests are otherwise passed
through unchanged, watches streamed as they arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

import aiohttp
from aiohttp import web

__all__ = ["FaultProxy", "Faults"]

#: Hop-by-hop and framing headers the proxy must not copy (it frames its own responses).
_DROPPED = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "accept-encoding",
        "upgrade",
    }
)


@dataclass
class Faults:
    """What the proxy does to requests right now (the rig changes it between faults)."""

    #: Seconds added before each request is forwarded.
    latency: float = 0.0
    #: Share of requests (watches excluded) answered 503 without reaching the API server.
    error_rate: float = 0.0
    #: Share of PUT requests answered 409 Conflict without reaching the API server.
    conflict_rate: float = 0.0


def _status(code: int, reason: str, message: str) -> web.Response:
    """A ``metav1.Status`` failure, as the API server answers."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(status=code, text=json.dumps(body), content_type="application/json")


@dataclass
class FaultProxy:
    """The proxy on a free port of 127.0.0.1, forwarding to ``upstream`` (``http://host:port``)."""

    upstream: str
    seed: int
    faults: Faults = field(default_factory=Faults)
    #: What was injected, by kind (``error``, ``conflict``, ``watch-cut``).
    injected: Counter[str] = field(default_factory=Counter)
    #: What the API server itself answered that the operator must handle: ``409`` (a real
    #: conflict with a concurrent writer), ``410`` (a watch or list resumed from an expired
    #: resourceVersion, as an answer or a watch ERROR event).
    observed: Counter[str] = field(default_factory=Counter)
    port: int = 0
    _random: random.Random = field(init=False)
    _session: aiohttp.ClientSession | None = field(default=None, init=False)
    _runner: web.AppRunner | None = field(default=None, init=False)
    _watches: set[aiohttp.ClientResponse] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        """Seed the proxy's own choices (which request fails) from the run's seed."""
        self._random = random.Random(self.seed)

    @property
    def url(self) -> str:
        """Where the operator's kubeconfig points."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FaultProxy:
        """Start serving."""
        self._session = aiohttp.ClientSession(
            # No pool limit: every open watch holds a connection, and the two replicas keep
            # dozens of them (the default limit of 100 would queue every other request).
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=True,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop serving; open watches end."""
        self.cut_watches(count=False)
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def cut_watches(self, *, count: bool = True) -> int:
        """End every open watch stream, as a dropped connection or a load balancer would."""
        watches = list(self._watches)
        for upstream in watches:
            upstream.close()
        if count and watches:
            self.injected["watch-cut"] += len(watches)
        return len(watches)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        faults = self.faults
        watch = request.query.get("watch") in ("true", "1")
        if faults.latency:
            await asyncio.sleep(faults.latency)
        if not watch and self._random.random() < faults.error_rate:
            self.injected["error"] += 1
            return _status(503, "ServiceUnavailable", "injected: the API server is unavailable")
        if request.method == "PUT" and self._random.random() < faults.conflict_rate:
            self.injected["conflict"] += 1
            return _status(
                409,
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; "
                "please apply your changes to the latest version and try again (injected)",
            )
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        body = await request.read()
        try:
            upstream = await self._session.request(
                request.method,
                self.upstream + request.rel_url.path_qs,
                headers=headers,
                data=body or None,
                allow_redirects=False,
            )
        except aiohttp.ClientError as error:
            # The API server is down (a restart): the client sees what a dead endpoint gives.
            return _status(503, "ServiceUnavailable", f"upstream unreachable: {error}")
        if upstream.status in (409, 410):
            self.observed[str(upstream.status)] += 1
        response_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _DROPPED}
        if not watch:
            async with upstream:
                data = await upstream.read()
            return web.Response(status=upstream.status, body=data, headers=response_headers)
        self._watches.add(upstream)
        response = web.StreamResponse(status=upstream.status, headers=response_headers)
        try:
            await response.prepare(request)
            with contextlib.suppress(aiohttp.ClientError, ConnectionError, asyncio.TimeoutError):
                async for chunk in upstream.content.iter_any():
                    if b'"code":410' in chunk or b'"code": 410' in chunk:
                        self.observed["410"] += 1
                    await response.write(chunk)
            with contextlib.suppress(ConnectionError):
                await response.write_eof()
        finally:
            self._watches.discard(upstream)
            upstream.close()
        return response
