"""Logging: one format for structlog and stdlib loggers, verbosity as in ECK."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from stackflow.logging import configure_logging, level_for_verbosity


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
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
