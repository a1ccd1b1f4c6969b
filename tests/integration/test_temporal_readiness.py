"""/readyz follows the real Temporal frontend: 503 naming it while it is down, 200 once the
server is back on its address."""

from __future__ import annotations

import socket
from datetime import timedelta

import aiohttp
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from stackflow.metrics import Registry
from stackflow.observability import ProbeServer
from stackflow.temporal import TemporalReachability
from tests.e2e.harness import TEMPORAL
from tests.polling import eventually


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def start_temporal(port: int) -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_local(
        port=port,
        dev_server_startup_timeout=timedelta(seconds=120),
        data_converter=pydantic_data_converter,
        dev_server_existing_path=str(TEMPORAL),
    )


async def readyz(server: ProbeServer) -> tuple[int, str]:
    url = f"http://127.0.0.1:{server.bound_health_port}/readyz"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_readyz_is_false_while_temporal_is_down_and_true_once_it_is_back() -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = await start_temporal(port)
    try:
        client = await Client.connect(address)
        reachability = TemporalReachability.of(client, address=address)
        probes = ProbeServer(
            registry=Registry(),
            is_healthy=lambda: True,
            is_ready=lambda: True,
            host="127.0.0.1",
            health_port=0,
            readiness_checks=[reachability.not_ready_reason],
        )
        await probes.start()
        try:
            await reachability.check_once()
            assert await readyz(probes) == (200, "ok\n")

            await env.shutdown()
            await reachability.check_once()
            status, text = await readyz(probes)
            assert status == 503
            assert text.startswith(f"not ready: temporal: unreachable at {address} (")

            env = await start_temporal(port)

            async def ready_again() -> bool:
                await reachability.check_once()
                return await readyz(probes) == (200, "ok\n")

            await eventually(ready_again, within=120, what="/readyz true with Temporal back")
        finally:
            await probes.stop()
    finally:
        await env.shutdown()
