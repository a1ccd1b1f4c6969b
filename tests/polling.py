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
) -> None:
    """Poll ``predicate`` (sync or async) until it holds; fail naming ``what`` at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not reached within {within:g}s")
        await asyncio.sleep(interval)


#: How long a Temporal dev server may take to accept connections on a loaded 2-core machine (the
#: SDK's default, 5 s, is exceeded when a Go build or another suite shares the cores).
DEV_SERVER_STARTUP = timedelta(seconds=60)
