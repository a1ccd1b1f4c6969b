"""``stackflow replay``: replay workflow histories against this code to catch non-determinism.

Histories come from JSON files (``--history-file``, as ``temporal workflow show --output json`` or
``WorkflowHistory.to_json()`` writes them) or from a Temporal server (``--workflow-id``, ``--query``),
reached through the operator configuration (``--config`` or the defaults and ``STACKFLOW_*``
variables). Exit status: 0 every history replayed, 1 a replay failed (each failure is named on
stderr), 2 bad arguments, configuration or connection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def load_history_file(path: Path) -> WorkflowHistory:
    """Read a JSON history; the file's stem stands for the workflow id (histories omit it)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return WorkflowHistory.from_json(path.stem, data)


async def replay_histories(
    histories: AsyncIterator[WorkflowHistory],
    *,
    workflows: Sequence[type] = WORKFLOWS,
    converter: DataConverter = DATA_CONVERTER,
) -> tuple[int, list[ReplayFailure]]:
    """Replay every history against `workflows` (payloads read with `converter`: the
    configuration's, for encrypted histories); returns how many replayed and the failures."""
    replayer = Replayer(workflows=list(workflows), data_converter=converter)
    replayed = 0
    failures: list[ReplayFailure] = []
    async with replayer.workflow_replay_iterator(histories) as results:
        async for result in results:
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


async def _from_files(paths: Sequence[Path]) -> AsyncIterator[WorkflowHistory]:
    for path in paths:
        yield load_history_file(path)


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
    return parser


async def _run(args: argparse.Namespace, workflows: Sequence[type]) -> int:
    if args.history_file:
        missing = [str(path) for path in args.history_file if not path.is_file()]
        if missing:
            print(f"stackflow replay: no such history file: {', '.join(missing)}", file=sys.stderr)
            return 2
        histories = _from_files(args.history_file)
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
    replayed, failures = await replay_histories(histories, workflows=workflows, converter=converter)
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
    try:
        return asyncio.run(_run(args, workflows))
    except ConfigError as error:
        print(f"stackflow replay: {error}", file=sys.stderr)
        return 2
    except (RPCError, RuntimeError, ValueError) as error:
        # Connection refused, unknown workflow id, malformed history file: not a replay verdict.
        print(f"stackflow replay: {' '.join(str(error).splitlines())}", file=sys.stderr)
        return 2
