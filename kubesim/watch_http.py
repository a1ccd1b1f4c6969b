"""WATCH over HTTP (§4.3): a chunked 200 with one compact JSON event per line.

Events already queued when the stream is ready to send are written together in one chunk.

Start points (``resourceVersion``), the 410 ERROR event inside a 200, streaming lists with the
``k8s.io/initial-events-end`` bookmark, Table events and ``timeoutSeconds`` are handled here; the
store's :class:`~kubesim.watch.Watch` does the selector transitions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kubesim import discovery, errors, request
from kubesim.backend import Backend
from kubesim.errors import StatusError
from kubesim.request import ListOptions
from kubesim.resource_type import ResourceType
from kubesim.responses import dumps
from kubesim.selectors import FieldSelector, LabelSelector
from kubesim.watch import Watch, WatchEvent, bookmark_event, event_line

log = logging.getLogger("kubesim.watch_http")
#: How long before its timeout a watch gets its last bookmark (the real watch cache's 2 s).
PRE_TIMEOUT_BOOKMARK_SECONDS = 2.0


def start_point(options: ListOptions, current: int) -> tuple[int | None, bool]:
    """``(since_rv for the store, whether to send initial events)`` of a watch request.

    RV unset/0 → synthetic ADDED for the current objects; N → the changes after N. A streaming
    list (``sendInitialEvents=true``) always starts with the current objects.
    """
    wanted = request.parse_resource_version(options.resource_version)
    if options.send_initial_events:
        return None, True
    if options.send_initial_events is False:
        return (wanted if wanted else current), False
    if not wanted:
        return None, True
    # A resourceVersion ahead of the store waits for the changes after it (no error).
    return wanted, False


class TableRenderer:
    """Turns watch events into one-row Table events when the client asked for ``as=Table``."""

    def __init__(self, rt: ResourceType, *, include_object: str) -> None:
        """Render rows of ``rt``; the first row carries the column definitions."""
        self._rt = rt
        self._include_object = include_object
        self._first = True

    def render(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event with its object replaced by a Table (bookmarks and errors pass through)."""
        if event["type"] in ("BOOKMARK", "ERROR"):
            return event
        obj = event["object"]
        table = discovery.to_table(
            self._rt,
            [obj],
            include_object=self._include_object,
            list_meta={"resourceVersion": str(obj.get("metadata", {}).get("resourceVersion", ""))},
            with_columns=self._first,
        )
        self._first = False
        return {"type": event["type"], "object": table}


async def serve_watch(
    backend: Backend,
    req: web.Request,
    *,
    rt: ResourceType,
    namespace: str | None,
    options: ListOptions,
    labels: LabelSelector | None,
    fields: FieldSelector | None,
) -> web.StreamResponse:
    """Open a store watch and stream it until timeout, client disconnect or server shutdown."""
    streams = backend.watches
    current = backend.store.resource_version
    since_rv, _initial = start_point(options, current)
    expired: StatusError | None = None
    watch: Watch | None = None
    try:
        watch = backend.store.watch(
            rt, namespace, since_rv=since_rv, label_selector=labels, field_selector=fields
        )
    except StatusError as err:
        if err.code != 410:
            raise
        expired = err
    # Counted before any await: later queue entries are live changes, not the initial snapshot.
    initial_count = watch.queue.qsize() if watch is not None else 0
    response = web.StreamResponse(status=200)
    response.headers["Content-Type"] = "application/json"
    response.enable_chunked_encoding()
    await response.prepare(req)
    streams.started(req, response)
    if expired is not None:
        await response.write(dumps({"type": "ERROR", "object": expired.to_status()}) + b"\n")
        await response.write_eof()
        return response
    assert watch is not None
    renderer = (
        TableRenderer(rt, include_object=req.query.get("includeObject", "Metadata"))
        if request.wants_table(req.headers.get("Accept"))
        else None
    )
    timeout = float(options.timeout_seconds) if options.timeout_seconds else streams.timeout_seconds
    streams.open += 1
    try:
        async with asyncio.timeout(timeout):
            await _pump(
                watch,
                response,
                renderer=renderer,
                closing=streams.closing,
                initial_count=initial_count,
                initial_end=(
                    bookmark_event(rt, watch.start_rv, initial_events_end=True)
                    if options.send_initial_events and options.allow_bookmarks
                    else None
                ),
                bookmark=(lambda: backend.store.bookmark(rt)) if options.allow_bookmarks else None,
                bookmark_interval=streams.bookmark_interval_seconds,
                # As the real watch cache: a last bookmark 2 s before the stream times out.
                pre_timeout_bookmark=timeout - PRE_TIMEOUT_BOOKMARK_SECONDS
                if timeout > PRE_TIMEOUT_BOOKMARK_SECONDS
                else None,
            )
    except TimeoutError:
        pass
    except ConnectionError:
        return response
    except Exception as exc:
        # Headers are sent: the failure can only be reported inside the stream.
        log.exception("watch stream of %s failed", rt.group_resource)
        failure = errors.internal_error(f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(ConnectionError):
            await response.write(dumps({"type": "ERROR", "object": failure.to_status()}) + b"\n")
    finally:
        streams.open -= 1
        watch.close()
    with contextlib.suppress(ConnectionError):
        await response.write_eof()
    return response


class StreamEncoder:
    """Turns batches of queued watch events into the bytes of a watch stream (pure, no I/O).

    A shared event is serialized once for every stream (see :func:`kubesim.watch.event_line`);
    the ``initial-events-end`` bookmark follows the last of the ``initial_count`` first events.
    """

    def __init__(
        self,
        *,
        renderer: TableRenderer | None,
        initial_count: int,
        initial_end: dict[str, Any] | None,
    ) -> None:
        """Encode through ``renderer`` (Table events) when set."""
        self._renderer = renderer
        self._pending_initial = initial_count
        self._initial_end = initial_end

    @property
    def awaiting_initial_end(self) -> bool:
        """Whether the initial-events-end bookmark is still to be sent (no idle bookmarks yet)."""
        return self._initial_end is not None

    def opening(self) -> bytes:
        """The initial-events-end bookmark when there are no initial events, else nothing."""
        if self._initial_end is None or self._pending_initial > 0:
            return b""
        line = dumps(self._initial_end) + b"\n"
        self._initial_end = None
        return line

    def encode(self, events: list[WatchEvent | None]) -> tuple[bytes, bool]:
        """``(lines of the events, whether the stream ended)``; ``None`` ends it (later ones are dropped)."""
        lines: list[bytes] = []
        for event in events:
            if event is None:
                return b"".join(lines), True
            shown = self._renderer.render(event) if self._renderer is not None else event
            lines.append(event_line(shown, dumps))
            if self._initial_end is not None:
                self._pending_initial -= 1
                if self._pending_initial == 0:
                    lines.append(dumps(self._initial_end) + b"\n")
                    self._initial_end = None
        return b"".join(lines), False


async def _pump(
    watch: Watch,
    response: web.StreamResponse,
    *,
    renderer: TableRenderer | None,
    closing: asyncio.Event,
    initial_count: int,
    initial_end: dict[str, Any] | None,
    bookmark: Callable[[], dict[str, Any]] | None,
    bookmark_interval: float,
    pre_timeout_bookmark: float | None = None,
) -> None:
    """Copy events from the watch queue to the response until the watch or the server ends.

    Events already queued are sent together in one write; the pump waits only on an empty
    queue. With ``bookmark`` set, the stream gets a BOOKMARK every ``bookmark_interval`` seconds,
    and one ``pre_timeout_bookmark`` seconds after it started (shortly before its timeout), each
    sent when the queue is empty, so every change up to the bookmark's RV has been sent.
    """
    loop = asyncio.get_running_loop()
    started = loop.time()
    next_bookmark = started + bookmark_interval
    if pre_timeout_bookmark is not None:
        next_bookmark = min(next_bookmark, started + pre_timeout_bookmark)
    encoder = StreamEncoder(renderer=renderer, initial_count=initial_count, initial_end=initial_end)
    opening = encoder.opening()
    if opening:
        await response.write(opening)
    closing_wait: asyncio.Future[Any] = asyncio.ensure_future(closing.wait())
    # Outlives an idle bookmark timeout: a cancelled get could race with an arriving event.
    getter: asyncio.Future[Any] | None = None
    try:
        while True:
            if getter is None and not watch.queue.empty():
                if closing.is_set():
                    return
                ready = watch.take_ready()
            else:
                if getter is None:
                    getter = asyncio.ensure_future(watch.queue.get())
                done, _ = await asyncio.wait(
                    {getter, closing_wait},
                    return_when=asyncio.FIRST_COMPLETED,
                    timeout=max(0.0, next_bookmark - loop.time()) if bookmark is not None else None,
                )
                if closing_wait in done:
                    return
                if getter not in done:
                    if bookmark is not None and not encoder.awaiting_initial_end:
                        await response.write(dumps(bookmark()) + b"\n")
                    next_bookmark = loop.time() + bookmark_interval
                    continue
                ready = [getter.result(), *watch.take_ready()]
                getter = None
            chunk, ended = encoder.encode(ready)
            if chunk:
                await response.write(chunk)
            if ended:
                return
    finally:
        closing_wait.cancel()
        if getter is not None:
            getter.cancel()
