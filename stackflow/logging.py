"""Logging: structlog for Stackflow's own logs, with the stdlib loggers routed through it.

`configure_logging` sets up one handler on the root logger whose ``ProcessorFormatter`` renders
both structlog events and stdlib records (``temporalio``, ``aiohttp``, ``stackflow.scope``...), so
every line has the same format: JSON in production, coloured key/value lines in development.
Verbosity follows ECK's ``log-verbosity``: -2 errors only, -1 warnings, 0 info, 1 and more debug.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog
from structlog.typing import Processor

LogMode = Literal["json", "console"]

_HANDLER_NAME = "stackflow"


def level_for_verbosity(verbosity: int) -> int:
    """The stdlib level for an ECK ``log-verbosity`` value."""
    if verbosity >= 1:
        return logging.DEBUG
    if verbosity == 0:
        return logging.INFO
    if verbosity == -1:
        return logging.WARNING
    return logging.ERROR


def _shared_processors() -> list[Processor]:
    # Run on structlog events before they reach the formatter, and on stdlib records inside it.
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


def _formatter(mode: LogMode) -> structlog.stdlib.ProcessorFormatter:
    rendering: list[Processor]
    if mode == "json":
        rendering = [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
    else:
        rendering = [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()),
        ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(), processors=rendering
    )


def configure_logging(*, mode: LogMode, verbosity: int) -> None:
    """Configure structlog and the stdlib root logger; calling it again replaces the setup.

    Logs go to standard error, one line per event, filtered at the level `verbosity` maps to.
    """
    level = level_for_verbosity(verbosity)
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # The processor chain is the same for every mode and verbosity (rendering and level
        # live in the stdlib handler), so loggers cached before a reconfiguration stay right.
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(_formatter(mode))
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == _HANDLER_NAME:
            root.removeHandler(existing)
            existing.close()
    root.addHandler(handler)
    root.setLevel(level)
    # The SDK's own loggers inherit the root level; make sure none was pinned elsewhere.
    logging.getLogger("temporalio").setLevel(logging.NOTSET)
