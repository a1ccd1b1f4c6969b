"""``stackflow replay``: a malformed history is named in one line (exit 2) before the SDK sees it,
and a replay that stops answering ends the command instead of hanging it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory

from stackflow.cli.replay import ReplayWatchdog, history_problem, main

LIFECYCLE = Path(__file__).resolve().parents[1] / "replay" / "histories" / "resource_lifecycle.json"


def _lifecycle() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LIFECYCLE.read_text())
    return data


def _without(*ids: int) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["events"] = [e for e in data["events"] if int(e["eventId"]) not in ids]

    return edit


def _only(*ids: int) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["events"] = [e for e in data["events"] if int(e["eventId"]) in ids]

    return edit


def _renumber(index: int, event_id: int) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["events"][index]["eventId"] = str(event_id)

    return edit


def _drop_first(data: dict[str, Any]) -> None:
    data["events"] = data["events"][1:]


def _no_events(data: dict[str, Any]) -> None:
    data["events"] = []


def _untyped(data: dict[str, Any]) -> None:
    data["events"][3]["eventType"] = "EVENT_TYPE_UNSPECIFIED"


HISTORY_PROBLEMS: list[tuple[str, Callable[[dict[str, Any]], None], str | None]] = [
    ("well-formed", lambda data: None, None),
    ("gap 1,2,5", _only(1, 2, 5), "event ids jump from 2 to 5 (events 3 to 4 missing)"),
    ("one missing", _without(7), "event ids jump from 6 to 8 (event 7 missing)"),
    ("repeated id", _renumber(3, 3), "event id 3 follows 3 (ids must increase by one)"),
    (
        "not started first",
        _drop_first,
        "the first event is WorkflowTaskScheduled, not WorkflowExecutionStarted",
    ),
    ("no events", _no_events, "the history has no events"),
    ("untyped event", _untyped, "event 4 has no event type"),
]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [(edit, problem) for _, edit, problem in HISTORY_PROBLEMS],
    ids=[name for name, _, _ in HISTORY_PROBLEMS],
)
def test_history_problem(edit: Callable[[dict[str, Any]], None], problem: str | None) -> None:
    data = _lifecycle()
    edit(data)
    assert history_problem(WorkflowHistory.from_json("wf", data)) == problem


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            json.dumps(
                {**_lifecycle(), "events": _lifecycle()["events"][:2] + _lifecycle()["events"][4:]}
            ),
            "event ids jump from 2 to 5 (events 3 to 4 missing)",
        ),
        (
            "{not json",
            "not a JSON history: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("[1, 2]", "not a JSON history: not an object with events"),
        ('{"events": [{"eventId": "x"}]}', "not a workflow history: "),
        ('{"events": []}', "the history has no events"),
    ],
)
def test_a_malformed_history_file_is_one_line_and_exit_2(
    tmp_path: Path, content: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "history.json"
    path.write_text(content)
    assert main(["--history-file", str(path), "--timeout", "60"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"stackflow replay: {path}: {problem}")


def test_a_good_file_after_a_bad_one_is_not_replayed_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "gap.json"
    data = _lifecycle()
    _only(1, 2, 5)(data)
    bad.write_text(json.dumps(data))
    assert main(["--history-file", str(LIFECYCLE), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"stackflow replay: {bad}: event ids jump from 2 to 5 (events 3 to 4 missing)"
    ]


@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_the_timeout_must_be_positive(timeout: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--history-file", str(LIFECYCLE), "--timeout", timeout]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"stackflow replay: --timeout must be positive, got {float(timeout):g}"
    ]


def test_the_watchdog_names_the_oldest_history_without_a_result() -> None:
    fired: list[str] = []
    done = threading.Event()

    def expired(workflow_id: str) -> None:
        fired.append(workflow_id)
        done.set()

    watchdog = ReplayWatchdog(0.05, expired)
    watchdog.handed("first")
    watchdog.handed("second")
    watchdog.replayed()  # "first" came back: "second" is the one pending
    assert done.wait(timeout=30), "the watchdog never fired"
    watchdog.stop()
    assert fired == ["second"]
    assert not watchdog.pending


def test_a_stopped_watchdog_has_nothing_pending() -> None:
    watchdog = ReplayWatchdog(3600, lambda _: pytest.fail("fired"))
    watchdog.handed("a")
    watchdog.stop()
    assert not watchdog.pending
