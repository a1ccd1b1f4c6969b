"""``stackflow run`` waits for an unreachable Temporal, saying so, instead of crash-looping."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs
from temporalio.client import Client

from stackflow.cli.operator import connect_temporal_when_reachable
from stackflow.config import OperatorConfig
from stackflow.kube.backoff import Backoff

#: Retries that do not slow the tests down (the schedule itself is tested in test_backoff.py).
INSTANT = Backoff(initial=0.0, maximum=0.0)


class FlakyConnect:
    """Refuses the first ``failures`` connections the way the SDK does, then returns a client."""

    def __init__(self, failures: int, client: Client) -> None:
        self.failures = failures
        self.client = client
        self.calls = 0
        self.refused = asyncio.Event()

    async def __call__(self, config: OperatorConfig) -> Client:
        self.calls += 1
        if self.calls == 1 and self.failures:
            self.refused.set()
        if self.calls <= self.failures:
            raise RuntimeError("Failed client connect: Server connection error: refused")
        return self.client


def a_client() -> Client:
    """A stand-in for a connected client (only its identity is compared)."""
    return object.__new__(Client)


async def test_retries_until_connected_and_logs_the_address() -> None:
    config = OperatorConfig(temporal_address="temporal.example:7233")
    client = a_client()
    connect = FlakyConnect(failures=3, client=client)
    with capture_logs() as logs:
        connected = await connect_temporal_when_reachable(
            config, asyncio.Event(), connect=connect, backoff=INSTANT
        )
    assert connected is client
    assert connect.calls == 4
    waiting = [entry for entry in logs if entry["event"] == "temporal.waiting"]
    assert [entry["attempt"] for entry in waiting] == [1, 2, 3]
    assert {entry["address"] for entry in waiting} == {"temporal.example:7233"}
    assert all("refused" in entry["error"] for entry in waiting)


async def test_connects_at_once_without_a_waiting_line() -> None:
    client = a_client()
    with capture_logs() as logs:
        connected = await connect_temporal_when_reachable(
            OperatorConfig(), asyncio.Event(), connect=FlakyConnect(0, client), backoff=INSTANT
        )
    assert connected is client
    assert not [entry for entry in logs if entry["event"] == "temporal.waiting"]


async def test_stop_ends_the_wait_without_a_client() -> None:
    stop = asyncio.Event()
    connect = FlakyConnect(failures=10**9, client=a_client())
    waiting = asyncio.create_task(
        connect_temporal_when_reachable(
            OperatorConfig(), stop, connect=connect, backoff=Backoff(initial=3600, maximum=3600)
        )
    )
    # The first refusal leaves it sleeping an hour; stop must cut that sleep short.
    await asyncio.wait_for(connect.refused.wait(), timeout=5)
    stop.set()
    assert await asyncio.wait_for(waiting, timeout=5) is None


async def test_other_errors_are_not_retried() -> None:
    async def misconfigured(config: OperatorConfig) -> Client:
        raise ValueError("bad TLS settings")

    with pytest.raises(ValueError, match="bad TLS"):
        await connect_temporal_when_reachable(
            OperatorConfig(), asyncio.Event(), connect=misconfigured, backoff=INSTANT
        )
