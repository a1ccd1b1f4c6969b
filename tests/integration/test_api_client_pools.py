"""The operator's API client: watches on a pool of their own, every other request on a capped one.

Against kubesim: with more watches open than the requests' pool has connections, requests still
answer (the watches never take the requests' connections), and a burst of concurrent reads opens
no more than ``REQUEST_CONNECTIONS`` connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client as k8s_client

from kubesim.testing import KubeSim
from stackflow.kube.client import (
    REQUEST_CONNECTIONS,
    TimedApiClient,
    make_api_client,
    mark_informer_task,
)
from stackflow.kube.errors import Unavailable
from stackflow.kube.informer import Informer
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES
from tests.polling import eventually


@pytest.fixture
async def api_client(kubesim: KubeSim, tmp_path: Path) -> AsyncIterator[TimedApiClient]:
    """The operator's client, built as the operator builds it."""
    client = await make_api_client(kubeconfig=tmp_path / "kubeconfig", context=None, timeout=30)
    try:
        yield client
    finally:
        await client.close()


def _open_connections(pool: object) -> int:
    connector = pool.pool_manager.connector  # type: ignore[attr-defined]
    acquired = len(connector._acquired)
    idle = sum(len(entries) for entries in connector._conns.values())
    return int(acquired + idle)


async def test_watches_never_take_the_requests_connections(api_client: TimedApiClient) -> None:
    kube = ResourceClient(api_client)
    await kube.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    watches = [
        asyncio.create_task(
            _drain(
                kube.watch(
                    CONFIGMAPS, namespace="team-a", resource_version=None, timeout_seconds=60
                )
            )
        )
        for _ in range(REQUEST_CONNECTIONS + 8)
    ]
    try:
        await eventually(
            lambda: _open_connections(api_client.watch_rest_client) == len(watches),
            what="every watch holding a connection of the watches' pool",
        )
        reads = await asyncio.wait_for(
            asyncio.gather(*(kube.list(NAMESPACES) for _ in range(3 * REQUEST_CONNECTIONS))),
            timeout=30,
        )
        assert all(
            "team-a" in {item["metadata"]["name"] for item in read["items"]} for read in reads
        )
        assert 0 < _open_connections(api_client.rest_client) <= REQUEST_CONNECTIONS
    finally:
        for watch in watches:
            watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*watches, return_exceptions=True)


async def _drain(events: AsyncIterator[object]) -> None:
    async for _ in events:
        pass


async def test_an_informer_lists_and_watches_on_one_connection_of_the_watches_pool(
    api_client: TimedApiClient,
) -> None:
    informer = Informer(ResourceClient(api_client), CONFIGMAPS)
    informer.start()
    try:
        await asyncio.wait_for(informer.wait_synced(), timeout=30)
        await eventually(
            lambda: _open_connections(api_client.watch_rest_client) == 1,
            what="the informer's watch on the connection its list used",
        )
        assert _open_connections(api_client.rest_client) == 0
    finally:
        await informer.stop()


@pytest.mark.parametrize("informer_task", [False, True], ids=["request", "informer-list"])
async def test_both_pools_give_a_request_the_default_timeout(informer_task: bool) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers; ends when the client hangs up
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    configuration = k8s_client.Configuration(host=f"http://127.0.0.1:{port}")
    client = TimedApiClient(configuration, request_timeout=0.2)

    async def list_namespaces() -> None:
        if informer_task:
            mark_informer_task()
        await ResourceClient(client).list(NAMESPACES)

    try:
        with pytest.raises(Unavailable):
            await asyncio.wait_for(asyncio.create_task(list_namespaces()), timeout=10)
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_a_watch_says_when_the_server_watches_and_sees_what_follows(
    api_client: TimedApiClient,
) -> None:
    kube = ResourceClient(api_client)
    await kube.create(NAMESPACES, {"metadata": {"name": "team-b"}})
    opened = asyncio.Event()
    events: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    async def watch() -> None:
        async for event in kube.watch(
            CONFIGMAPS, namespace="team-b", resource_version=None, timeout_seconds=60, opened=opened
        ):
            await events.put(event)

    watching = asyncio.create_task(watch())
    try:
        await asyncio.wait_for(opened.wait(), timeout=30)
        assert events.empty()  # opened before any event: nothing exists yet
        await kube.create(CONFIGMAPS, {"metadata": {"name": "after"}}, namespace="team-b")
        event = await asyncio.wait_for(events.get(), timeout=30)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")  # type: ignore[index]
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


async def _closed_port() -> int:
    server = await asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    server.close()
    await server.wait_closed()
    return port


async def test_a_proxy_named_in_the_environment_at_start_carries_the_requests(
    kubesim: KubeSim, tmp_path: Path, no_proxy_environment: pytest.MonkeyPatch
) -> None:
    # A proxy that refuses every connection: the requests fail when they go through it.
    proxy = f"http://127.0.0.1:{await _closed_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        no_proxy_environment.setenv(name, proxy)
    client = await make_api_client(kubeconfig=tmp_path / "kubeconfig", context=None, timeout=5)
    try:
        with pytest.raises(Unavailable):
            await ResourceClient(client).list(NAMESPACES)
    finally:
        await client.close()


async def test_the_environment_is_read_once_not_at_every_request(
    no_proxy_environment: pytest.MonkeyPatch, api_client: TimedApiClient
) -> None:
    # The client was built with no proxy; a proxy variable set afterwards changes nothing (as
    # client-go, which reads the environment once).
    proxy = f"http://127.0.0.1:{await _closed_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        no_proxy_environment.setenv(name, proxy)
    listed = await ResourceClient(api_client).list(NAMESPACES)
    assert listed["kind"] == "NamespaceList"
