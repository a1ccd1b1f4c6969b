"""Fuzzing the decoding of the API server's answers: watch lines, list pages and single objects.

``ResourceClient`` is driven without a server: a stand-in for the kubernetes_asyncio client
answers with the given bytes through a real ``aiohttp.StreamReader``. Whatever the bytes (not
JSON, not an object, nested too deep, a line larger than aiohttp reads at once, an ``ERROR``
event of the wrong shape), a read yields usable events and objects or raises one of the
operator's own errors (``stackflow.kube.errors.KubeError``): anything else escapes the informer's
retry as a traceback and, read again from the same resource version, stalls the watch for good.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import aiohttp
from hypothesis import example, given
from hypothesis import strategies as st

from stackflow.kube import errors
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import PODS
from tests.unit.fuzz.strategies import (
    FUZZ_SETTINGS,
    elasticsearch_objects,
    json_values,
)


class _Transport:
    """The flow control a StreamReader asks of its protocol: nothing to pause here."""

    _reading_paused = False

    def pause_reading(self, *_args: object, **_kwargs: object) -> None:
        """Nothing is read from a socket."""

    def resume_reading(self, *_args: object, **_kwargs: object) -> None:
        """Nothing is read from a socket."""


class CannedResponse:
    """What ``call_api(..., _preload_content=False)`` returns: a status and a body stream."""

    def __init__(self, body: bytes, *, status: int = 200) -> None:
        self.status = status
        self.reason = "OK" if status == 200 else "Error"
        self.headers: dict[str, str] = {"Content-Type": "application/json"}
        self.body = body
        self.content = aiohttp.StreamReader(_Transport(), 2**16, loop=asyncio.get_running_loop())  # type: ignore[arg-type]
        self.content.feed_data(body)
        self.content.feed_eof()

    async def read(self) -> bytes:
        """The whole body."""
        return self.body

    async def text(self) -> str:
        """The whole body as text."""
        return self.body.decode(errors="replace")

    def release(self) -> None:
        """Nothing to give back."""

    async def __aenter__(self) -> CannedResponse:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None


class CannedApiClient:
    """Answers every call with the next of ``bodies``, as kubernetes_asyncio would: a stream
    when the caller reads it itself, else the body decoded as its ``object`` response type."""

    def __init__(self, bodies: Sequence[bytes]) -> None:
        self.bodies = list(bodies)

    async def call_api(self, *_args: Any, **kwargs: Any) -> Any:
        body = self.bodies.pop(0) if self.bodies else b'{"kind": "PodList", "items": []}'
        if kwargs.get("_preload_content", True) is False:
            return CannedResponse(body)
        try:
            return json.loads(body)
        except ValueError:
            return body.decode(errors="replace")


def watch_events(lines: Sequence[bytes]) -> list[Mapping[str, Any]]:
    """Every event a watch yields from a stream of ``lines``; raises what the watch raises."""

    async def drain() -> list[Mapping[str, Any]]:
        client = ResourceClient(CannedApiClient([b"\n".join(lines) + b"\n"]))  # type: ignore[arg-type]
        return [
            event
            async for event in client.watch(
                PODS, namespace="ns1", resource_version="1", timeout_seconds=5
            )
        ]

    return asyncio.run(drain())


def assert_events_or_own_error(lines: Sequence[bytes]) -> None:
    """The watch yields events (maps) or fails with the operator's own error."""
    try:
        events = watch_events(lines)
    except errors.KubeError as error:
        events, refusal = [], str(error)
    else:
        refusal = "none"
    assert refusal.strip()
    for event in events:
        assert isinstance(event, Mapping)


def event_line(event: object) -> bytes:
    """One watch line."""
    return json.dumps(event).encode()


def nested_line(depth: int) -> bytes:
    """An ADDED event whose object's spec nests ``depth`` lists deep (written out: dumping
    it would itself recurse too deep)."""
    head, tail = event_line(
        {"type": "ADDED", "object": {"metadata": {"name": "p"}, "spec": "HOLE"}}
    ).split(b'"HOLE"')
    return head + b"[" * depth + b"]" * depth + tail


EVENT_TYPES = st.one_of(
    st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]), json_values(3)
)
EVENTS = st.fixed_dictionaries(
    {},
    optional={
        "type": EVENT_TYPES,
        "object": st.one_of(elasticsearch_objects(fuzz=True), json_values()),
    },
).map(event_line)
LINES = st.lists(
    st.one_of(EVENTS, st.binary(max_size=60), json_values().map(event_line)), max_size=4
)


@FUZZ_SETTINGS
@given(LINES)
@example([b"not json"])
@example([b"[1]"])
@example([b'"ADDED"'])
@example([event_line({"type": "ERROR", "object": ["Gone"]})])
@example([event_line({"type": "ERROR", "object": {"kind": "Status", "code": "410"}})])
@example([event_line({"type": "ADDED", "object": {"metadata": {"name": "p"}}}), b"{"])
def test_any_watch_stream_gives_events_or_an_own_error(lines: list[bytes]) -> None:
    assert_events_or_own_error(lines)


@FUZZ_SETTINGS
@given(st.sampled_from([100, 900, 5_000, 100_000]))
def test_a_watch_event_nested_too_deep_gives_events_or_an_own_error(depth: int) -> None:
    assert_events_or_own_error([nested_line(depth)])


def test_a_watch_event_too_long_for_one_read_gives_events_or_an_own_error() -> None:
    large = event_line(
        {"type": "ADDED", "object": {"metadata": {"name": "p"}, "data": "x" * 200_000}}
    )
    assert_events_or_own_error(
        [large, event_line({"type": "DELETED", "object": {"metadata": {"name": "q"}}})]
    )


def listing(pages: Sequence[bytes]) -> dict[str, Any]:
    """What a LIST answered with ``pages`` returns; raises what the list raises."""

    async def run() -> dict[str, Any]:
        client = ResourceClient(CannedApiClient(pages))  # type: ignore[arg-type]
        return await client.list(PODS, namespace="ns1")

    return asyncio.run(run())


def assert_objects_or_own_error(pages: Sequence[bytes]) -> None:
    """The list returns objects (maps) or fails with the operator's own error."""
    try:
        listed = listing(pages)
    except errors.KubeError as error:
        listed, refusal = {"items": []}, str(error)
    else:
        refusal = "none"
    assert refusal.strip()
    assert isinstance(listed["items"], list)
    for item in listed["items"]:
        assert isinstance(item, Mapping)


PAGE = st.one_of(
    st.fixed_dictionaries(
        {"kind": st.just("PodList")},
        optional={
            "items": st.one_of(
                st.lists(st.one_of(elasticsearch_objects(fuzz=True), json_values(3)), max_size=3),
                json_values(3),
            ),
            "metadata": st.one_of(
                st.fixed_dictionaries(
                    {"resourceVersion": st.just("7")},
                    optional={"continue": st.one_of(st.just("next-page"), json_values(3))},
                ),
                json_values(3),
            ),
        },
    ),
    json_values(),
).map(event_line)


@FUZZ_SETTINGS
@given(st.lists(st.one_of(PAGE, st.binary(max_size=60)), min_size=1, max_size=3))
@example([b'{"kind": "PodList", "items": [1]}'])
@example([b'{"kind": "PodList", "items": "pods"}'])
@example([b'{"kind": "PodList", "items": [], "metadata": ["7"]}'])
@example([b'{"kind": "PodList", "items": [], "metadata": {"continue": "next"}}', b"[]"])
@example([b"[]"])
@example([b"not json"])
def test_any_list_pages_give_objects_or_an_own_error(pages: list[bytes]) -> None:
    assert_objects_or_own_error(pages)


def test_a_list_item_nested_too_deep_gives_objects_or_an_own_error() -> None:
    head, tail = event_line(
        {"kind": "PodList", "items": [{"metadata": {"name": "p"}, "spec": "HOLE"}]}
    ).split(b'"HOLE"')
    page = head + b"[" * 5_000 + b"]" * 5_000 + tail
    assert_objects_or_own_error([page])


def getting(body: bytes) -> dict[str, Any]:
    """What a GET answered with ``body`` returns; raises what the get raises."""

    async def run() -> dict[str, Any]:
        client = ResourceClient(CannedApiClient([body]))  # type: ignore[arg-type]
        return await client.get(PODS, namespace="ns1", name="p")

    return asyncio.run(run())


@FUZZ_SETTINGS
@given(
    st.one_of(
        elasticsearch_objects(fuzz=True).map(event_line),
        json_values().map(event_line),
        st.binary(max_size=60),
    )
)
@example(b"[]")
@example(b'"pod"')
@example(b"not json")
@example(b'{"metadata": ["p"]}')
def test_any_get_answer_gives_an_object_or_an_own_error(body: bytes) -> None:
    try:
        obj = getting(body)
    except errors.KubeError as error:
        obj, refusal = {}, str(error)
    else:
        refusal = "none"
    assert refusal.strip()
    assert isinstance(obj, Mapping)
