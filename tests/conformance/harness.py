"""One run of a conformance check against one server: the calls it makes and the answers it records.

A check is an ``async def`` that takes a :class:`Run` and talks to the server only through it:
:meth:`Run.call` (one HTTP request, recorded), :meth:`Run.kubectl` (the real kubectl, recorded),
:meth:`Run.watch` (a streaming watch), :meth:`Run.fact` (a derived observation, e.g. "the
resourceVersion changed") and :meth:`Run.request` (an unrecorded request, for set-up and polling).
The same check runs once against a fresh kubesim and once against the session's real control plane,
with the same names (``Run.ns``, :meth:`Run.name`), so the two transcripts can be compared entry by
entry after :mod:`tests.conformance.normalize` has masked what legitimately differs run to run.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from kubesim.testing import KubeSim

KUBECTL = Path(sys.executable).parent / "kubectl"
KUBESIM = "kubesim"
APISERVER = "apiserver"
#: The User-Agent of every HTTP call: the real server derives the default field manager from it.
USER_AGENT = "conformance/1.0"
#: Response headers that carry API behaviour (the rest are transport or audit details).
RECORDED_HEADERS = ("content-type", "warning")
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io"
#: How long a check may wait for a controller (garbage collector, namespace controller, webhook).
CONTROLLER_WITHIN = 90.0


class CheckError(AssertionError):
    """A check could not go on (a set-up call failed, a wait timed out)."""


@dataclass
class Answer:
    """One HTTP answer: status, reason phrase, the recorded headers and the decoded body."""

    status: int
    reason: str
    headers: dict[str, str]
    body: Any

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return 200 <= self.status < 300

    def object(self) -> dict[str, Any]:
        """The body as an object (a check that needs one fails readably otherwise)."""
        if not isinstance(self.body, dict):
            raise CheckError(f"expected a JSON object, got {self.status}: {self.body!r:.300}")
        return self.body

    def metadata(self) -> dict[str, Any]:
        """``body.metadata`` (empty when absent)."""
        meta = self.object().get("metadata")
        return meta if isinstance(meta, dict) else {}


@dataclass
class Endpoint:
    """A server a check runs against: its URL, TLS, kubeconfig and the names of its nodes."""

    name: str
    url: str
    kubeconfig: Path
    cache_dir: Path
    ssl_context: ssl.SSLContext | None = None
    sim: KubeSim | None = None
    node_names: tuple[str, ...] = ()
    #: The real server's etcd client URL (its storage can be compacted; kubesim has none).
    etcd_url: str | None = None

    @property
    def is_kubesim(self) -> bool:
        """True for the emulator."""
        return self.name == KUBESIM

    async def settle(self) -> None:
        """Let kubesim's simulated controllers finish (the real controllers are polled instead)."""
        if self.sim is not None:
            await self.sim.settle()


@dataclass
class Entry:
    """One recorded observation of a run: a step name and what was seen."""

    step: str
    data: Any


class WatchStream:
    """An open watch: read its events one by one under a deadline."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        """Wrap an open streaming response."""
        self._response = response
        self.status = response.status
        self.ended = False

    async def next_event(self, *, within: float) -> dict[str, Any] | None:
        """The next event, or None when the stream ended; CheckError when none came in time."""
        if self.ended:
            return None
        try:
            line = await asyncio.wait_for(self._response.content.readline(), timeout=within)
        except TimeoutError:
            raise CheckError(f"no watch event within {within:g}s") from None
        if not line:
            self.ended = True
            return None
        event: dict[str, Any] = json.loads(line)
        return event

    async def events_until(
        self, done: Callable[[dict[str, Any]], bool], *, within: float = CONTROLLER_WITHIN
    ) -> list[dict[str, Any]]:
        """Events up to and including the first one ``done`` accepts (or the end of the stream)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        events: list[dict[str, Any]] = []
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise CheckError(f"watch: the awaited event did not come within {within:g}s")
            event = await self.next_event(within=left)
            if event is None:
                return events
            events.append(event)
            if done(event):
                return events

    async def until_end(self, *, within: float) -> list[dict[str, Any]]:
        """Every event until the server ends the stream."""
        return await self.events_until(lambda _event: False, within=within)

    def close(self) -> None:
        """Drop the connection."""
        self._response.close()


@dataclass
class Run:
    """One check on one endpoint: names, calls, the transcript, and cleanup."""

    endpoint: Endpoint
    check: str
    token: str
    session: aiohttp.ClientSession
    workdir: Path
    entries: list[Entry] = field(default_factory=list)
    #: Extra literal replacements for the normalizer (e.g. a generated name and its mask).
    substitutions: dict[str, str] = field(default_factory=dict)
    #: What went wrong while cleaning up (reported, never raised).
    cleanup_failures: list[str] = field(default_factory=list)
    _cleanups: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _steps: dict[str, int] = field(default_factory=dict)

    # -- names ---------------------------------------------------------------------------

    @property
    def ns(self) -> str:
        """The check's own namespace (created before the check runs, deleted after)."""
        return f"cf-{self.token}"

    def name(self, base: str) -> str:
        """A cluster-wide unique name for a cluster-scoped object of this check."""
        return f"{base}-{self.token}"

    @property
    def group(self) -> str:
        """An API group of this check alone (for its CRDs)."""
        return f"cf{self.token}.example.com"

    @property
    def is_kubesim(self) -> bool:
        """True when this run talks to kubesim."""
        return self.endpoint.is_kubesim

    # -- requests ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str | None = None,
        accept: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One HTTP request, not recorded (set-up, polling)."""
        sent: dict[str, str] = {"User-Agent": USER_AGENT}
        data: bytes | None = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = content_type or "application/json"
        elif content_type is not None:
            sent["Content-Type"] = content_type
        if accept is not None:
            sent["Accept"] = accept
        sent.update(headers or {})
        async with self.session.request(
            method,
            self.endpoint.url + path,
            params=dict(query or {}),
            data=data,
            headers=sent,
            ssl=self.endpoint.ssl_context if self.endpoint.ssl_context is not None else False,
        ) as response:
            text = await response.text()
            return Answer(
                status=response.status,
                reason=response.reason or "",
                headers={
                    name: ",".join(response.headers.getall(name))
                    for name in RECORDED_HEADERS
                    if name in response.headers
                },
                body=_decode(text),
            )

    async def call(
        self,
        step: str,
        method: str,
        path: str,
        *,
        project: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> Answer:
        """One HTTP request, recorded as ``step`` (``project`` picks the part of the body compared)."""
        answer = await self.request(method, path, **options)
        self.record(step, answer, project=project)
        return answer

    def record(
        self, step: str, answer: Answer, *, project: Callable[[Any], Any] | None = None
    ) -> None:
        """Record an answer: status, reason, recorded headers and (projected) body."""
        body = answer.body
        if project is not None and answer.ok:
            body = project(body)
        self.fact(
            step,
            {
                "status": answer.status,
                "reason": answer.reason,
                "headers": answer.headers,
                "body": body,
            },
        )

    def fact(self, step: str, value: Any) -> None:
        """Record an observation (compared like an answer); a repeated step name gets ``#n``."""
        seen = self._steps.get(step, 0) + 1
        self._steps[step] = seen
        self.entries.append(Entry(step if seen == 1 else f"{step}#{seen}", value))

    async def ok(self, method: str, path: str, **options: Any) -> Answer:
        """An unrecorded set-up request that must succeed."""
        answer = await self.request(method, path, **options)
        if not answer.ok:
            raise CheckError(f"{method} {path} failed with {answer.status}: {answer.body!r:.500}")
        return answer

    # -- kubectl -------------------------------------------------------------------------

    async def kubectl(
        self, step: str | None, *args: str, stdin: str | None = None, within: float = 120
    ) -> tuple[int, str, str]:
        """Run the real kubectl against this endpoint; recorded as ``step`` unless None."""
        process = await asyncio.create_subprocess_exec(
            str(KUBECTL),
            f"--kubeconfig={self.endpoint.kubeconfig}",
            f"--cache-dir={self.endpoint.cache_dir}",
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(
                process.communicate(stdin.encode() if stdin is not None else None), within
            )
        except TimeoutError:
            process.kill()
            await process.wait()
            raise CheckError(f"kubectl {' '.join(args)} did not finish in {within:g}s") from None
        code = process.returncode if process.returncode is not None else -1
        result = (code, out.decode(), err.decode())
        if step is not None:
            self.fact(step, {"exit": code, "stdout": result[1], "stderr": result[2]})
        return result

    # -- watches -------------------------------------------------------------------------

    async def watch(
        self, path: str, query: Mapping[str, str], *, accept: str | None = None
    ) -> WatchStream:
        """Open a watch (``watch=true`` is added); the caller closes it."""
        headers = {"User-Agent": USER_AGENT}
        if accept is not None:
            headers["Accept"] = accept
        response = await self.session.get(
            self.endpoint.url + path,
            params={**query, "watch": "true"},
            headers=headers,
            ssl=self.endpoint.ssl_context if self.endpoint.ssl_context is not None else False,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        )
        stream = WatchStream(response)
        self.on_cleanup(_closer(stream))
        return stream

    # -- waiting and cleanup ---------------------------------------------------------------

    async def settle(self) -> None:
        """Let kubesim's controllers finish their queues (nothing to do on the real server)."""
        await self.endpoint.settle()

    async def compact(self) -> None:
        """Compact the real server's etcd up to the current revision, so every older
        resourceVersion is gone from its storage (kubesim's history needs nothing: it never
        holds what came before its bootstrap)."""
        if self.endpoint.etcd_url is None:
            return
        listed = await self.ok("GET", "/api/v1/namespaces")
        revision = listed.object()["metadata"]["resourceVersion"]
        async with self.session.post(
            f"{self.endpoint.etcd_url}/v3/kv/compaction",
            json={"revision": revision, "physical": True},
        ) as response:
            if response.status != 200:
                raise CheckError(f"etcd compaction failed: {response.status}")

    async def eventually(
        self,
        predicate: Callable[[], Awaitable[bool]],
        *,
        what: str,
        within: float = CONTROLLER_WITHIN,
        interval: float = 0.1,
    ) -> None:
        """Poll ``predicate`` (after letting kubesim settle) until it holds, or fail naming ``what``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            await self.settle()
            if await predicate():
                return
            if loop.time() > deadline:
                raise CheckError(f"{what}: not reached within {within:g}s on {self.endpoint.name}")
            await asyncio.sleep(interval)

    async def gone(self, path: str, *, what: str, within: float = CONTROLLER_WITHIN) -> None:
        """Wait until GET ``path`` answers 404."""

        async def absent() -> bool:
            return (await self.request("GET", path)).status == 404

        await self.eventually(absent, what=what, within=within)

    def on_cleanup(self, action: Callable[[], Awaitable[None]]) -> None:
        """Run ``action`` when the check ends (last registered, first run)."""
        self._cleanups.append(action)

    async def cleanup(self) -> list[str]:
        """Run every cleanup action; the failures, as text (cleanup never raises)."""
        failures: list[str] = []
        while self._cleanups:
            action = self._cleanups.pop()
            try:
                await action()
            except Exception:
                failures.append(traceback.format_exc(limit=3))
        return failures

    def delete_on_cleanup(self, path: str) -> None:
        """DELETE ``path`` when the check ends (cluster-scoped objects: CRDs, webhook configs)."""

        async def delete() -> None:
            await self.request("DELETE", path)

        self.on_cleanup(delete)


def _closer(stream: WatchStream) -> Callable[[], Awaitable[None]]:
    async def close() -> None:
        stream.close()

    return close


def _decode(text: str) -> Any:
    """JSON when the body is JSON, else the text (404 pages, plain health answers)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text
