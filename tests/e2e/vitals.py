"""The operator's vital signs while a test runs: its largest RSS and the longest time its
``/healthz`` went without answering. Figures to print, never limits to assert (speed and size
live in ``bench/``); a test uses them to say what a hostile input cost the operator."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.polling import eventually

#: How often the probe and the RSS are sampled: the resolution of the figures.
SAMPLE_EVERY = 0.1


@dataclass
class Vitals:
    """What was seen so far."""

    samples: int = 0
    peak_rss_bytes: int = 0
    longest_silence: float = 0.0

    def summary(self) -> str:
        """One line for the test's output."""
        return (
            f"operator RSS peak {self.peak_rss_bytes / 2**20:.0f} MiB, longest /healthz silence "
            f"{self.longest_silence:.2f} s over {self.samples} probes"
        )


def rss_bytes(pid: int) -> int:
    """The resident set of a process, from ``/proc`` (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def health_port_of(log: Path) -> int:
    """The health port the operator logged in ``operator.started`` (it binds port 0)."""
    port = 0

    def started() -> bool:
        nonlocal port
        for line in log.read_text(errors="replace").splitlines():
            if '"operator.started"' in line:
                with contextlib.suppress(ValueError):
                    port = int(json.loads(line).get("health_port") or 0)
        return port > 0

    await eventually(started, within=120, interval=0.2, what="the operator's health port")
    return port


@contextlib.asynccontextmanager
async def watched(pid: int, health_port: int) -> AsyncIterator[Vitals]:
    """Sample the operator's RSS and ``/healthz`` until the block ends."""
    vitals = Vitals()
    url = f"http://127.0.0.1:{health_port}/healthz"

    async def sample(session: aiohttp.ClientSession) -> None:
        last_answer = time.monotonic()
        while True:
            try:
                async with session.get(url) as response:
                    await response.read()
                answered = time.monotonic()
                vitals.longest_silence = max(vitals.longest_silence, answered - last_answer)
                last_answer = answered
            except (aiohttp.ClientError, TimeoutError):
                pass  # no answer: the silence grows until the next one
            vitals.samples += 1
            vitals.peak_rss_bytes = max(vitals.peak_rss_bytes, rss_bytes(pid))
            await asyncio.sleep(SAMPLE_EVERY)  # pacing the samples, not waiting for a condition

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        task = asyncio.create_task(sample(session))
        try:
            yield vitals
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
