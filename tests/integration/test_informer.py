"""Informers against kubesim: concurrent writes, 410 recovery, and a server restart."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from kubesim.testing import KubeSim
from stackflow.kube import client as kube_client
from stackflow.kube.cache import object_key
from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.resources import ResourceClient
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES
from tests.polling import eventually

# (event type, resourceVersion of the new state or None for a delete)
History = dict[NamespacedName, list[tuple[str, str | None]]]

FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)


def _rv(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def recording_handler(history: History) -> Callable[[str, Any, Any], None]:
    """A handler appending (type, new RV) per object key."""

    def handler(event_type: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        history[object_key(obj)].append((event_type, _rv(new) if new is not None else None))

    return handler


async def server_state(resources: ResourceClient) -> dict[NamespacedName, str]:
    listed = await resources.list(CONFIGMAPS)
    return {object_key(item): _rv(item) for item in listed["items"]}


def cache_state(informer: Informer) -> dict[NamespacedName, str]:
    return {key: _rv(obj) for key, obj in informer.cache.snapshot().items()}


async def make_namespaces(resources: ResourceClient, *names: str) -> None:
    for name in names:
        await resources.create(NAMESPACES, {"metadata": {"name": name}})


def configmap(namespace: str, name: str, value: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"value": value}}


@pytest.fixture
async def resources(ka_client: client.ApiClient) -> ResourceClient:
    return ResourceClient(ka_client)


@pytest.fixture
async def informer(resources: ResourceClient) -> AsyncIterator[Informer]:
    configmaps = Informer(resources, CONFIGMAPS, backoff=FAST_BACKOFF)
    yield configmaps
    await configmaps.stop()


async def test_concurrent_writes_end_in_the_servers_state_with_every_change_in_order(
    resources: ResourceClient, informer: Informer
) -> None:
    await make_namespaces(resources, "ns-a", "ns-b")
    seen: History = defaultdict(list)
    informer.add_handler(recording_handler(seen))
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    written: History = defaultdict(list)

    async def writer(task_number: int) -> None:
        namespace = "ns-a" if task_number % 2 else "ns-b"
        for index in range(10):
            name = f"cm-{task_number}-{index}"
            created = await resources.create(CONFIGMAPS, configmap(namespace, name, "0"))
            written[NamespacedName(namespace, name)].append(("ADDED", _rv(created)))
            for revision in range(1, 4):
                patched = await resources.merge_patch(
                    CONFIGMAPS,
                    {"data": {"value": str(revision)}},
                    namespace=namespace,
                    name=name,
                )
                written[NamespacedName(namespace, name)].append(("MODIFIED", _rv(patched)))
            if index % 2:
                await resources.delete(CONFIGMAPS, namespace=namespace, name=name)
                written[NamespacedName(namespace, name)].append(("DELETED", None))

    await asyncio.gather(*(writer(task_number) for task_number in range(5)))  # 225 writes

    expected_state = await server_state(resources)
    await eventually(lambda: cache_state(informer) == expected_state and seen == written)
    assert len(expected_state) == 25
    assert informer.relist_count == 0


async def test_recovers_from_410_without_losing_or_duplicating_state() -> None:
    async with KubeSim(history_window=5) as sim:
        api_client = client.ApiClient(client.Configuration(host=sim.url))
        try:
            small_window = ResourceClient(api_client)
            await make_namespaces(small_window, "ns")
            for name in ("keep", "change", "drop"):
                await small_window.create(CONFIGMAPS, configmap("ns", name, "0"))
            configmaps = Informer(small_window, CONFIGMAPS, backoff=FAST_BACKOFF)
            seen: History = defaultdict(list)
            configmaps.add_handler(recording_handler(seen))
            configmaps.start()
            async with asyncio.timeout(10):
                await configmaps.wait_synced()
            await eventually(lambda: len(seen) == 3)
            # The watch falls behind: while it is stopped, more changes happen than the
            # server's history window keeps, so resuming from the old RV gets 410 Expired.
            await configmaps.stop()
            seen.clear()
            changed = await small_window.merge_patch(
                CONFIGMAPS, {"data": {"value": "1"}}, namespace="ns", name="change"
            )
            await small_window.delete(CONFIGMAPS, namespace="ns", name="drop")
            for index in range(10):
                await small_window.create(CONFIGMAPS, configmap("ns", f"tmp-{index}", "0"))
                await small_window.delete(CONFIGMAPS, namespace="ns", name=f"tmp-{index}")
            born = await small_window.create(CONFIGMAPS, configmap("ns", "born", "0"))

            configmaps.start()
            expected_state = await server_state(small_window)
            await eventually(lambda: cache_state(configmaps) == expected_state)
            await eventually(lambda: configmaps.relist_count >= 1)
            assert dict(seen) == {
                ("ns", "change"): [("MODIFIED", _rv(changed))],
                ("ns", "drop"): [("DELETED", None)],
                ("ns", "born"): [("ADDED", _rv(born))],
            }
            await configmaps.stop()
        finally:
            await api_client.close()


async def _start_kubesim_process(
    *, port: int, kubeconfig: Path, state_file: Path
) -> tuple[asyncio.subprocess.Process, int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubesim",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--kubeconfig",
        str(kubeconfig),
        "--state-file",
        str(state_file),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        while True:
            line = (await process.stdout.readline()).decode()
            if not line:
                pytest.fail("kubesim exited before it was listening")
            match = re.search(r"kubesim listening on http://[\d.]+:(\d+)", line)
            if match:
                return process, int(match.group(1))


async def _stop_process(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        async with asyncio.timeout(15):
            await process.wait()


async def test_reconnects_after_the_server_restarts(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    state_file = tmp_path / "state.json"
    process, port = await _start_kubesim_process(
        port=0, kubeconfig=kubeconfig, state_file=state_file
    )
    api_client = await kube_client.make_api_client(kubeconfig=kubeconfig, context=None, timeout=5)
    configmaps: Informer | None = None
    try:
        resources = ResourceClient(api_client)
        await resources.create(CONFIGMAPS, configmap("default", "before", "0"))
        configmaps = Informer(resources, CONFIGMAPS, namespace="default", backoff=FAST_BACKOFF)
        seen: History = defaultdict(list)
        configmaps.add_handler(recording_handler(seen))
        configmaps.start()
        await eventually(lambda: ("default", "before") in configmaps.cache)

        await _stop_process(process)
        process, _ = await _start_kubesim_process(
            port=port, kubeconfig=kubeconfig, state_file=state_file
        )

        updated = await resources.merge_patch(
            CONFIGMAPS, {"data": {"value": "1"}}, namespace="default", name="before"
        )
        after = await resources.create(CONFIGMAPS, configmap("default", "after", "0"))
        expected_state = await server_state(resources)
        await eventually(lambda: cache_state(configmaps) == expected_state)
        assert seen[NamespacedName("default", "after")] == [("ADDED", _rv(after))]
        assert seen[NamespacedName("default", "before")][-1] == ("MODIFIED", _rv(updated))
        assert [event for event, _ in seen[NamespacedName("default", "before")]].count("ADDED") == 1
    finally:
        if configmaps is not None:
            await configmaps.stop()
        await kube_client.close_api_client(api_client)
        await _stop_process(process)


async def test_list_follows_continue_pages_and_items_look_like_watched_objects(
    resources: ResourceClient,
) -> None:
    await make_namespaces(resources, "paged")
    for index in range(5):
        await resources.create(CONFIGMAPS, configmap("paged", f"cm-{index}", "0"))

    listed = await resources.list(CONFIGMAPS, namespace="paged", page_size=2)

    assert [item["metadata"]["name"] for item in listed["items"]] == [
        f"cm-{index}" for index in range(5)
    ]
    assert {(item["apiVersion"], item["kind"]) for item in listed["items"]} == {("v1", "ConfigMap")}
    assert listed["metadata"]["resourceVersion"]
    assert "continue" not in listed["metadata"]


async def test_server_side_apply_creates_then_updates(resources: ResourceClient) -> None:
    intent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied", "namespace": "default"},
        "data": {"a": "1"},
    }

    created = await resources.apply(CONFIGMAPS, intent, field_manager="stackflow")
    updated = await resources.apply(
        CONFIGMAPS, {**intent, "data": {"a": "2"}}, field_manager="stackflow", force=True
    )

    assert created["data"] == {"a": "1"}
    assert updated["data"] == {"a": "2"}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
