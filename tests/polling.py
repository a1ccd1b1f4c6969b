"""Waiting for a condition in tests: poll it under a deadline, never sleep a fixed time."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta


async def eventually(
    predicate: Callable[[], Awaitable[bool] | bool],
    *,
    within: float = 60,
    what: str = "condition",
    interval: float = 0.02,
    max_interval: float = 0.5,
) -> None:
    """Poll ``predicate`` (sync or async) until it holds; fail naming ``what`` at the deadline.

    The first looks come ``interval`` apart; the gap then grows to ``max_interval``, so a long
    wait does not itself load the server it waits on (several e2e waits each polling a real API
    server every 20 ms for minutes were a large share of a 2-core machine's load).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    delay = interval
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not reached within {within:g}s")
        await asyncio.sleep(delay)
        delay = max(delay, min(delay * 1.5, max_interval))


#: How long a Temporal dev server may take to accept connections on a loaded 2-core machine (the
#: SDK's default, 5 s, is exceeded when a Go build or another suite shares the cores).
DEV_SERVER_STARTUP = timedelta(seconds=60)
