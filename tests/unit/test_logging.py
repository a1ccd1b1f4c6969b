"""Logging: one format for structlog and stdlib loggers, verbosity as in ECK."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import structlog

from stackflow.logging import (
    LIBRARY_FLOORS,
    configure_logging,
    level_for_verbosity,
    library_floor,
    temporal_core_forwarding,
)


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    for name in LIBRARY_FLOORS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    structlog.reset_defaults()


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("verbosity", "level"),
    [
        (-5, logging.ERROR),
        (-2, logging.ERROR),
        (-1, logging.WARNING),
        (0, logging.INFO),
        (1, logging.DEBUG),
        (3, logging.DEBUG),
    ],
)
def test_level_for_verbosity(verbosity: int, level: int) -> None:
    assert level_for_verbosity(verbosity) == level


def test_json_mode_renders_structlog_and_stdlib_alike(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(mode="json", verbosity=0)
    structlog.get_logger("stackflow.test").info("reconciled", namespace="ns", name="es")
    logging.getLogger("temporalio.worker").warning("worker %s started", "w1")
    lines = _json_lines(capsys.readouterr().err)
    assert [(line["event"], line["level"], line["logger"]) for line in lines] == [
        ("reconciled", "info", "stackflow.test"),
        ("worker w1 started", "warning", "temporalio.worker"),
    ]
    assert lines[0]["namespace"] == "ns"
    assert lines[0]["name"] == "es"
    assert all("timestamp" in line for line in lines)


def test_json_mode_includes_exceptions(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(mode="json", verbosity=0)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("stackflow.test").exception("failed")
    [line] = _json_lines(capsys.readouterr().err)
    assert line["event"] == "failed"
    assert "RuntimeError: boom" in str(line["exception"])


@pytest.mark.parametrize(
    ("verbosity", "expected"),
    [
        (-2, ["error"]),
        (-1, ["warning", "error"]),
        (0, ["info", "warning", "error"]),
        (1, ["debug", "info", "warning", "error"]),
    ],
)
def test_verbosity_filters(
    capsys: pytest.CaptureFixture[str], verbosity: int, expected: list[str]
) -> None:
    configure_logging(mode="json", verbosity=verbosity)
    log = structlog.get_logger("stackflow.test")
    log.debug("d")
    log.info("i")
    logging.getLogger("stackflow.scope").warning("w")
    log.error("e")
    assert [line["level"] for line in _json_lines(capsys.readouterr().err)] == expected


def test_configuring_twice_keeps_one_handler(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(mode="console", verbosity=0)
    configure_logging(mode="json", verbosity=0)
    logging.getLogger("stackflow.test").info("once")
    [line] = _json_lines(capsys.readouterr().err)
    assert line["event"] == "once"


def test_console_mode_is_not_json(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(mode="console", verbosity=0)
    structlog.get_logger("stackflow.test").info("hello", key="value")
    [line] = capsys.readouterr().err.splitlines()
    assert "hello" in line
    assert "key=value" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


@pytest.mark.parametrize("verbosity", [1, 3])
def test_library_loggers_stay_at_their_floor_at_any_verbosity(
    capsys: pytest.CaptureFixture[str], verbosity: int
) -> None:
    configure_logging(mode="json", verbosity=verbosity)
    # What kubernetes_asyncio logs at DEBUG: the body of every response, a Secret's data.
    logging.getLogger("kubernetes_asyncio.client.rest").debug("response body: %s", "c2VjcmV0")
    logging.getLogger("aiohttp.client").debug("request headers: Authorization: Bearer t0ken")
    logging.getLogger("temporalio.worker._activity").debug("activity args: password")
    logging.getLogger("urllib3.connectionpool").info("https://x:443 GET /api")
    logging.getLogger("kubernetes_asyncio.client.rest").warning("retrying")
    logging.getLogger("temporalio.worker").info("worker started")
    structlog.get_logger("stackflow.test").debug("ours")
    lines = _json_lines(capsys.readouterr().err)
    assert [(line["logger"], line["event"]) for line in lines] == [
        ("kubernetes_asyncio.client.rest", "retrying"),
        ("temporalio.worker", "worker started"),
        ("stackflow.test", "ours"),
    ]


def test_a_library_logger_set_to_debug_by_its_library_is_still_held(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(mode="json", verbosity=1)
    # kubernetes_asyncio's Configuration.debug = True sets DEBUG on its own loggers.
    pinned = logging.getLogger("kubernetes_asyncio.client.rest")
    pinned.setLevel(logging.DEBUG)
    try:
        pinned.debug("response body: %s", "c2VjcmV0")
        logging.getLogger("client").debug("send: b'GET /api/v1/secrets'")
    finally:
        pinned.setLevel(logging.NOTSET)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("name", "floor"),
    [
        ("kubernetes_asyncio", logging.WARNING),
        ("kubernetes_asyncio.client.rest", logging.WARNING),
        ("temporalio.core", logging.INFO),
        ("asyncio", logging.WARNING),
        ("aiohttp.access", logging.WARNING),
        ("stackflow.kube", None),
        ("clients", None),
        ("temporal", None),
    ],
)
def test_library_floor(name: str, floor: int | None) -> None:
    assert library_floor(name) == floor


@dataclass
class _CoreEntry:
    """What the Temporal core hands the forwarder for each line."""

    target: str
    message: str
    level: int
    fields: dict[str, Any]
    time: float = 1_700_000_000.0


def test_temporal_core_lines_are_json_records_without_colour(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(mode="json", verbosity=0)
    temporal_core_forwarding()._on_logs(
        [
            _CoreEntry(
                target="temporalio_sdk_core::worker",
                message="\x1b[33mNetwork error while polling\x1b[0m: transport error",
                level=logging.WARNING,
                fields={"task_queue": "stackflow", "attempt": 3},
            ),
            _CoreEntry(
                target="temporalio_sdk_core", message="polling", level=logging.DEBUG, fields={}
            ),
        ]
    )
    [line] = _json_lines(capsys.readouterr().err)
    assert line["logger"] == "temporalio.core"
    assert line["level"] == "warning"
    assert line["event"] == "Network error while polling: transport error"
    assert line["target"] == "temporalio_sdk_core::worker"
    assert line["fields"] == {"task_queue": "stackflow", "attempt": "3"}
    assert "temporal_log" not in line
