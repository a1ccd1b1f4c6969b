"""The probe server: /readyz names why the operator is not ready (Temporal unreachable), and a
client that never finishes its request is cut off while the others are answered."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from stackflow.metrics import Registry
from stackflow.observability import ProbeServer, not_ready_reasons
from stackflow.temporal import TemporalReachability
from tests.polling import eventually


@contextlib.asynccontextmanager
async def probes(**options: Any) -> AsyncIterator[ProbeServer]:
    server = ProbeServer(
        registry=Registry(),
        is_healthy=lambda: True,
        host="127.0.0.1",
        health_port=0,
        **{"is_ready": lambda: True, **options},
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def get(server: ProbeServer, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{server.bound_health_port}{path}"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


@pytest.mark.parametrize(
    ("is_ready", "reasons", "expected"),
    [
        (True, [None, None], []),
        (False, [None], ["the worker or the informers are not running"]),
        (
            True,
            ["temporal: unreachable at t:7233 (refused)", None],
            ["temporal: unreachable at t:7233 (refused)"],
        ),
        (False, ["a"], ["the worker or the informers are not running", "a"]),
    ],
)
def test_not_ready_reasons(is_ready: bool, reasons: list[str | None], expected: list[str]) -> None:
    checks = [lambda reason=reason: reason for reason in reasons]
    assert not_ready_reasons(is_ready, checks) == expected


async def test_readyz_is_503_with_the_reason_while_a_check_names_one() -> None:
    reason: list[str | None] = ["temporal: unreachable at 127.0.0.1:7233 (connection refused)"]
    async with probes(readiness_checks=[lambda: reason[0]]) as server:
        assert await get(server, "/readyz") == (
            503,
            "not ready: temporal: unreachable at 127.0.0.1:7233 (connection refused)\n",
        )
        assert (await get(server, "/healthz"))[0] == 200
        reason[0] = None
        assert await get(server, "/readyz") == (200, "ok\n")


async def test_a_client_that_never_finishes_its_request_is_cut_off() -> None:
    async with probes(read_timeout_seconds=0.5) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_health_port)
        try:
            writer.write(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            await writer.drain()
            assert await get(server, "/readyz") == (200, "ok\n")
            # Closed without an answer (the deadline only bounds a failing test).
            assert await asyncio.wait_for(reader.read(), timeout=60) == b""
        finally:
            writer.close()


class Frontend:
    """A Temporal health check that serves, stops serving or cannot be reached, as told."""

    def __init__(self) -> None:
        self.answer: bool | Exception = True
        self.calls = 0

    async def __call__(self) -> bool:
        self.calls += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def test_temporal_reachability_follows_the_frontend() -> None:
    frontend = Frontend()
    reachability = TemporalReachability(frontend, address="t:7233")
    await reachability.check_once()
    assert reachability.not_ready_reason() is None
    frontend.answer = RuntimeError("connection refused\ndetails")
    await reachability.check_once()
    assert reachability.not_ready_reason() == "temporal: unreachable at t:7233 (connection refused)"
    frontend.answer = False
    await reachability.check_once()
    assert reachability.not_ready_reason() == "temporal: t:7233 is not serving"
    frontend.answer = True
    await reachability.check_once()
    assert reachability.not_ready_reason() is None
    # Probes read the remembered verdict: no call per probe.
    for _ in range(10):
        reachability.not_ready_reason()
    assert frontend.calls == 4


async def test_temporal_reachability_runs_until_stopped() -> None:
    frontend = Frontend()
    frontend.answer = RuntimeError("down")
    reachability = TemporalReachability(frontend, address="t:7233", interval_seconds=0.01)
    stop = asyncio.Event()
    running = asyncio.create_task(reachability.run(stop))
    try:
        await eventually(lambda: frontend.calls >= 2, what="a second health check")
        assert reachability.not_ready_reason() == "temporal: unreachable at t:7233 (down)"
    finally:
        stop.set()
        await asyncio.wait_for(running, timeout=30)
