"""``stackflow replay``: replay workflow histories against this code to catch non-determinism.

Histories come from JSON files (``--history-file``, as ``temporal workflow show --output json`` or
``WorkflowHistory.to_json()`` writes them) or from a Temporal server (``--workflow-id``, ``--query``),
reached through the operator configuration (``--config`` or the defaults and ``STACKFLOW_*``
variables). Exit status: 0 every history replayed, 1 a replay failed (each failure is named on
stderr), 2 bad arguments, configuration or connection, a malformed history, or a replay that did
not finish within ``--timeout``.

Every history is checked (`history_problem`) before the SDK sees it: the SDK's core is not made
for malformed input (a gap in the event ids can make it panic and the replay wait forever), and a
watchdog ends the command if one replay still takes longer than ``--timeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.json_format import ParseError
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.service import RPCError
from temporalio.worker import Replayer

from stackflow.config import ConfigError, load_config
from stackflow.temporal import DATA_CONVERTER, connect_client, data_converter
from workflows import WORKFLOWS


@dataclass(frozen=True)
class ReplayFailure:
    """One history that did not replay: which workflow, and why."""

    workflow_id: str
    run_id: str
    workflow_type: str
    error: str

    def describe(self) -> str:
        """One line for the terminal."""
        return (
            f"replay failed: {self.workflow_type} {self.workflow_id} (run {self.run_id}): "
            f"{self.error}"
        )


def workflow_type_of(history: WorkflowHistory) -> str:
    """The workflow type recorded in the history's first event."""
    if not history.events:
        return "<empty history>"
    started = history.events[0].workflow_execution_started_event_attributes
    return started.workflow_type.name or "<unknown type>"


#: The longest one history may take to replay before the command gives up (seconds).
DEFAULT_TIMEOUT = 120.0


class MalformedHistoryError(ValueError):
    """A history the replayer must not be given; the message names it and the problem."""


def history_problem(history: WorkflowHistory) -> str | None:
    """What makes `history` unfit to replay, in words; None when it is well-formed (pure).

    A history starts with WorkflowExecutionStarted and numbers its events 1, 2, 3... with no gap
    and no repeat; every event has a type.
    """
    if not history.events:
        return "the history has no events"
    first = history.events[0]
    if first.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        return (
            f"the first event is {_event_type_name(first.event_type)}, not WorkflowExecutionStarted"
        )
    previous = 0
    for event in history.events:
        expected = previous + 1
        if event.event_id > expected:
            missing = (
                f"event {expected}"
                if event.event_id == expected + 1
                else f"events {expected} to {event.event_id - 1}"
            )
            return f"event ids jump from {previous} to {event.event_id} ({missing} missing)"
        if event.event_id < expected:
            return f"event id {event.event_id} follows {previous} (ids must increase by one)"
        if event.event_type == EventType.EVENT_TYPE_UNSPECIFIED:
            return f"event {event.event_id} has no event type"
        previous = event.event_id
    return None


def _event_type_name(event_type: int) -> str:
    try:
        name = EventType.Name(event_type)  # type: ignore[arg-type]
    except ValueError:
        return f"event type {event_type}"
    return "".join(part.title() for part in name.removeprefix("EVENT_TYPE_").split("_"))


def load_history_file(path: Path) -> WorkflowHistory:
    """Read a JSON history; the file's stem stands for the workflow id (histories omit it).

    Raises MalformedHistoryError naming the file when it is not a JSON history.
    """
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedHistoryError(f"{path}: not a JSON history: {error}") from None
    if not isinstance(data, dict):
        raise MalformedHistoryError(f"{path}: not a JSON history: not an object with events")
    try:
        return WorkflowHistory.from_json(path.stem, data)
    except (ParseError, TypeError, ValueError) as error:
        problem = " ".join(str(error).splitlines())[:500]
        raise MalformedHistoryError(f"{path}: not a workflow history: {problem}") from None


def check_history(history: WorkflowHistory, source: str) -> WorkflowHistory:
    """`history` when it is well-formed; MalformedHistoryError naming `source` when not."""
    problem = history_problem(history)
    if problem is not None:
        raise MalformedHistoryError(f"{source}: {problem}")
    return history


class ReplayWatchdog:
    """Calls `on_expiry` with the oldest unfinished history's id when no replay result came for
    `timeout` seconds while a history was pending; a thread, so that it fires even when the SDK
    holds the event loop or never answers."""

    def __init__(self, timeout: float, on_expiry: Callable[[str], None]) -> None:
        """Nothing pending and no timer until a history is handed to the replayer."""
        self.timeout = timeout
        self.on_expiry = on_expiry
        self.pending: deque[str] = deque()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def _rearm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.pending:
            self._timer = threading.Timer(self.timeout, self._expired)
            self._timer.daemon = True
            self._timer.start()

    def _expired(self) -> None:
        with self._lock:
            oldest = self.pending[0] if self.pending else "<none>"
        self.on_expiry(oldest)

    def handed(self, workflow_id: str) -> None:
        """A history went to the replayer."""
        with self._lock:
            self.pending.append(workflow_id)
            if len(self.pending) == 1:
                self._rearm()

    def replayed(self) -> None:
        """A result came back (for the oldest pending history)."""
        with self._lock:
            if self.pending:
                self.pending.popleft()
            self._rearm()

    def stop(self) -> None:
        """No more firing."""
        with self._lock:
            self.pending.clear()
            self._rearm()


async def _watched(
    histories: AsyncIterator[WorkflowHistory], watchdog: ReplayWatchdog | None
) -> AsyncIterator[WorkflowHistory]:
    async for history in histories:
        # Fetched histories are checked here; files were checked before anything started.
        check_history(history, history.workflow_id)
        if watchdog is not None:
            watchdog.handed(history.workflow_id)
        yield history


async def replay_histories(
    histories: AsyncIterator[WorkflowHistory],
    *,
    workflows: Sequence[type] = WORKFLOWS,
    converter: DataConverter = DATA_CONVERTER,
    watchdog: ReplayWatchdog | None = None,
) -> tuple[int, list[ReplayFailure]]:
    """Replay every history against `workflows` (payloads read with `converter`: the
    configuration's, for encrypted histories); returns how many replayed and the failures.

    A malformed history raises MalformedHistoryError before the replayer sees it; `watchdog` is
    told of each history handed over and each result.
    """
    replayer = Replayer(workflows=list(workflows), data_converter=converter)
    replayed = 0
    failures: list[ReplayFailure] = []
    async with replayer.workflow_replay_iterator(_watched(histories, watchdog)) as results:
        async for result in results:
            if watchdog is not None:
                watchdog.replayed()
            replayed += 1
            if result.replay_failure is not None:
                failures.append(
                    ReplayFailure(
                        workflow_id=result.history.workflow_id,
                        run_id=result.history.run_id,
                        workflow_type=workflow_type_of(result.history),
                        error=" ".join(str(result.replay_failure).splitlines()),
                    )
                )
    return replayed, failures


async def _from_memory(histories: Sequence[WorkflowHistory]) -> AsyncIterator[WorkflowHistory]:
    for history in histories:
        yield history


def build_parser() -> argparse.ArgumentParser:
    """``stackflow replay`` arguments: exactly one source of histories."""
    parser = argparse.ArgumentParser(
        prog="stackflow replay",
        description="Replay workflow histories against this code; exit 1 on non-determinism.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--workflow-id", nargs="+", action="extend", metavar="ID", help="workflow ids to fetch"
    )
    source.add_argument("--query", metavar="QUERY", help="a visibility query selecting workflows")
    source.add_argument(
        "--history-file",
        nargs="+",
        action="extend",
        type=Path,
        metavar="FILE",
        help="JSON history files",
    )
    parser.add_argument("--config", type=Path, metavar="FILE", help="operator config file")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"the longest one history may take to replay ({DEFAULT_TIMEOUT:g})",
    )
    return parser


def _give_up(timeout: float) -> Callable[[str], None]:
    def expired(workflow_id: str) -> None:
        print(
            f"stackflow replay: {workflow_id}: the replay did not finish within {timeout:g} s "
            "(the SDK stopped answering: is the history well-formed?)",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        # The SDK's threads may be what hangs: nothing short of ending the process stops them.
        os._exit(2)

    return expired


async def _run(args: argparse.Namespace, workflows: Sequence[type]) -> int:
    if args.history_file:
        missing = [str(path) for path in args.history_file if not path.is_file()]
        if missing:
            print(f"stackflow replay: no such history file: {', '.join(missing)}", file=sys.stderr)
            return 2
        # Every file read and checked before the replayer starts: a bad one is named at once.
        loaded = [check_history(load_history_file(path), str(path)) for path in args.history_file]
        histories = _from_memory(loaded)
        # Files exported from an encrypted namespace are read with the configuration's key.
        converter = (
            data_converter(load_config(args.config, os.environ)) if args.config else DATA_CONVERTER
        )
    else:
        config = load_config(args.config, os.environ)
        client = await connect_client(config)
        converter = client.data_converter
        if args.query:
            histories = client.list_workflows(args.query).map_histories()
        else:
            ids: list[str] = args.workflow_id

            async def fetch() -> AsyncIterator[WorkflowHistory]:
                for workflow_id in ids:
                    yield await client.get_workflow_handle(workflow_id).fetch_history()

            histories = fetch()
    watchdog = ReplayWatchdog(args.timeout, _give_up(args.timeout))
    try:
        replayed, failures = await replay_histories(
            histories, workflows=workflows, converter=converter, watchdog=watchdog
        )
    finally:
        watchdog.stop()
    for failure in failures:
        print(failure.describe(), file=sys.stderr)
    print(f"replayed {replayed} histories, {len(failures)} failed")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None, *, workflows: Sequence[type] = WORKFLOWS) -> int:
    """Run ``stackflow replay``; `workflows` replaces this code's workflows (tests)."""
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if not args.timeout > 0:
        print(
            f"stackflow replay: --timeout must be positive, got {args.timeout:g}", file=sys.stderr
        )
        return 2
    try:
        return asyncio.run(_run(args, workflows))
    except (ConfigError, MalformedHistoryError) as error:
        print(f"stackflow replay: {error}", file=sys.stderr)
        return 2
    except (RPCError, RuntimeError, ValueError) as error:
        # Connection refused, unknown workflow id, malformed history file: not a replay verdict.
        print(f"stackflow replay: {' '.join(str(error).splitlines())}", file=sys.stderr)
        return 2
