"""The HTTP layer's fast paths keep client-visible behaviour: batched watch writes, uncopied LISTs."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from kubesim.resources import Registry
from kubesim.testing import KubeSim
from kubesim.watch import SharedEvent, WatchEvent
from kubesim.watch_http import StreamEncoder, TableRenderer

CMS = "/api/v1/namespaces/default/configmaps"
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
END_MARK = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}


def configmap_event(event_type: str, name: str, rv: int) -> SharedEvent:
    """A shared watch event of ConfigMap ``name`` at ``rv``."""
    return SharedEvent(
        event_type,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": "default",
                "resourceVersion": str(rv),
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
        },
    )


def decoded(chunk: bytes) -> list[Any]:
    """The JSON documents of a chunk of a watch stream, one per line."""
    assert chunk == b"" or chunk.endswith(b"\n")
    return [json.loads(line) for line in chunk.splitlines()]


def summary(events: list[Any]) -> list[tuple[str, str]]:
    """(type, name or resourceVersion of a bookmark) of each event."""
    return [
        (
            e["type"],
            e["object"]["metadata"].get("name") or e["object"]["metadata"]["resourceVersion"],
        )
        for e in events
    ]


A1 = configmap_event("ADDED", "a", 1)
B2 = configmap_event("ADDED", "b", 2)
A3 = configmap_event("MODIFIED", "a", 3)


@pytest.mark.parametrize(
    ("initial_count", "initial_end", "batches", "expected", "ended"),
    [
        # A plain watch: each batch is its events in order, nothing added.
        (0, None, [[A1, B2], [A3]], [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a")], False),
        # The initial-events-end bookmark follows the last initial event, inside its batch.
        (
            2,
            END_MARK,
            [[A1, B2, A3]],
            [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", "9"), ("MODIFIED", "a")],
            False,
        ),
        # … or in a later batch when the initial events arrive split.
        (
            2,
            END_MARK,
            [[A1], [B2, A3]],
            [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", "9"), ("MODIFIED", "a")],
            False,
        ),
        # None ends the stream: what came before it is sent, what follows is not.
        (0, None, [[A1, None, B2]], [("ADDED", "a")], True),
        (0, None, [[None]], [], True),
    ],
)
def test_encoder_sends_batches_in_order(
    initial_count: int,
    initial_end: dict[str, Any] | None,
    batches: list[list[WatchEvent | None]],
    expected: list[tuple[str, str]],
    ended: bool,
) -> None:
    encoder = StreamEncoder(renderer=None, initial_count=initial_count, initial_end=initial_end)
    sent: list[Any] = decoded(encoder.opening())
    stream_ended = False
    for batch in batches:
        chunk, stream_ended = encoder.encode(batch)
        sent += decoded(chunk)
    assert summary(sent) == expected
    assert stream_ended is ended


@pytest.mark.parametrize(
    ("initial_count", "initial_end", "opening"),
    [(0, END_MARK, [("BOOKMARK", "9")]), (1, END_MARK, []), (0, None, [])],
)
def test_encoder_opening_sends_the_end_mark_only_without_initial_events(
    initial_count: int, initial_end: dict[str, Any] | None, opening: list[tuple[str, str]]
) -> None:
    encoder = StreamEncoder(renderer=None, initial_count=initial_count, initial_end=initial_end)
    assert summary(decoded(encoder.opening())) == opening
    assert encoder.awaiting_initial_end is (initial_count > 0 and initial_end is not None)


def test_encoder_renders_table_events_with_columns_only_first() -> None:
    configmaps = Registry.builtin().lookup("", "v1", "configmaps")
    assert configmaps is not None
    renderer = TableRenderer(configmaps, include_object="Metadata")
    encoder = StreamEncoder(renderer=renderer, initial_count=0, initial_end=None)
    chunk, _ = encoder.encode([A1, B2])
    first, second = decoded(chunk)
    assert [first["object"]["kind"], second["object"]["kind"]] == ["Table", "Table"]
    assert "columnDefinitions" in first["object"]
    assert second["object"]["columnDefinitions"] is None
    assert second["object"]["rows"][0]["cells"][0] == "b"


async def read_body(sim: KubeSim, path: str, *, accept: str | None = None) -> tuple[int, str]:
    """GET ``path``; answers (status, body text)."""
    headers = {"Accept": accept} if accept else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url + path, headers=headers) as response,
    ):
        return response.status, await response.text()


def create_configmaps(sim: KubeSim, count: int) -> None:
    """``count`` ConfigMaps cm-000… in default, written back to back (no await in between)."""
    configmaps = sim.server.registry.lookup("", "v1", "configmaps")
    assert configmaps is not None
    for index in range(count):
        sim.store.create(
            configmaps,
            {"metadata": {"name": f"cm-{index:03d}", "labels": {"i": str(index)}}},
            namespace="default",
        )


async def test_watch_delivers_a_burst_completely_and_in_order() -> None:
    """A watch from an older RV replays every queued change, in RV order, one line each."""
    async with KubeSim() as sim:
        start = sim.store.resource_version
        create_configmaps(sim, 60)
        status, body = await read_body(
            sim, f"{CMS}?watch=1&resourceVersion={start}&timeoutSeconds=1"
        )
    events = [json.loads(line) for line in body.splitlines()]
    assert status == 200
    assert [e["type"] for e in events] == ["ADDED"] * 60
    assert [e["object"]["metadata"]["name"] for e in events] == [f"cm-{i:03d}" for i in range(60)]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)
    assert {(e["object"]["apiVersion"], e["object"]["kind"]) for e in events} == {
        ("v1", "ConfigMap")
    }


async def test_streaming_list_ends_its_initial_events_with_the_bookmark() -> None:
    """``sendInitialEvents``: every current object, then the initial-events-end bookmark."""
    async with KubeSim() as sim:
        create_configmaps(sim, 5)
        current = str(sim.store.resource_version)
        status, body = await read_body(
            sim,
            f"{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            "&allowWatchBookmarks=true&timeoutSeconds=1",
        )
    events = [json.loads(line) for line in body.splitlines()]
    assert status == 200
    added = [e["object"]["metadata"]["name"] for e in events[:5]]
    assert added == [f"cm-{i:03d}" for i in range(5)]
    end = events[5]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"] == {
        "resourceVersion": current,
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


@pytest.mark.parametrize(
    ("accept", "query"),
    [
        (None, ""),
        (None, "?labelSelector=i%3D3"),
        (None, "?limit=2"),
        (TABLE_ACCEPT, ""),
        (TABLE_ACCEPT, "?includeObject=Object"),
        (TABLE_ACCEPT, "?includeObject=None"),
    ],
)
async def test_list_serves_the_stored_objects_unchanged(accept: str | None, query: str) -> None:
    """LIST answers equal the store's own copies; a second LIST answers the same."""
    async with KubeSim() as sim:
        create_configmaps(sim, 4)
        configmaps = sim.server.registry.lookup("", "v1", "configmaps")
        assert configmaps is not None
        stored, _ = sim.store.list(configmaps, "default")
        status, first = await read_body(sim, CMS + query, accept=accept)
        _, second = await read_body(sim, CMS + query, accept=accept)
    assert status == 200
    assert first == second
    answer = json.loads(first)
    if accept is None:
        by_name = {o["metadata"]["name"]: o for o in stored}
        assert answer["items"] == [by_name[o["metadata"]["name"]] for o in answer["items"]]
        return
    rows = answer["rows"]
    assert [row["cells"][0] for row in rows] == [o["metadata"]["name"] for o in stored]
    if query.endswith("Object"):
        assert [row["object"] for row in rows] == [
            {"apiVersion": "v1", "kind": "ConfigMap", **o} for o in stored
        ]
    elif query.endswith("None"):
        assert all(row["object"] is None for row in rows)
    else:
        assert [row["object"]["metadata"] for row in rows] == [o["metadata"] for o in stored]


async def test_written_object_is_answered_with_type_meta_first() -> None:
    """A create answers the stored object with apiVersion and kind leading, as before."""
    async with (
        KubeSim() as sim,
        aiohttp.ClientSession() as session,
        session.post(
            sim.url + CMS, json={"metadata": {"name": "x"}, "data": {"k": "v"}}
        ) as response,
    ):
        status, text = response.status, await response.text()
    assert status == 201
    assert text.startswith('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"')
