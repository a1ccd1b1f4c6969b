"""Logging: structlog for Stackflow's own logs, with the stdlib loggers routed through it.

`configure_logging` sets up one handler on the root logger whose ``ProcessorFormatter`` renders
both structlog events and stdlib records (``temporalio``, ``aiohttp``, ``stackflow.scope``...), so
every line has the same format: JSON in production, coloured key/value lines in development.
Verbosity follows ECK's ``log-verbosity``: -2 errors only, -1 warnings, 0 info, 1 and more debug.

The verbosity is Stackflow's own: the libraries' loggers are held at a floor whatever it is
(`LIBRARY_FLOORS`), because at DEBUG they log what the operator must never write down —
kubernetes_asyncio every response body, Secrets' data included. `forward_temporal_core_logs`
sends the Temporal core's own log lines (Rust, written to standard error in colour by default)
through the same handler, so they are JSON records too.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

if TYPE_CHECKING:
    from temporalio.runtime import LogForwardingConfig

LogMode = Literal["json", "console"]

_HANDLER_NAME = "stackflow"

#: The logger the Temporal core's log lines are forwarded to.
TEMPORAL_CORE_LOGGER = "temporalio.core"

#: The lowest level each library logger (and its children) may log at, whatever the verbosity.
LIBRARY_FLOORS: Mapping[str, int] = {
    # DEBUG: "response body: ..." of every API call, the data of every Secret read.
    "kubernetes_asyncio": logging.WARNING,
    # kubernetes_asyncio's Configuration names its package logger "client".
    "client": logging.WARNING,
    "aiohttp": logging.WARNING,
    "urllib3": logging.WARNING,
    "asyncio": logging.WARNING,
    "charset_normalizer": logging.WARNING,
    "hpack": logging.WARNING,
    "h2": logging.WARNING,
    "grpc": logging.WARNING,
    "elastic_transport": logging.WARNING,
    "elasticsearch": logging.WARNING,
    # The SDK's INFO lines (a worker starting, a failed activity) are worth having, its DEBUG
    # ones carry activity and workflow payloads.
    "temporalio": logging.INFO,
}

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def library_floor(logger_name: str) -> int | None:
    """The floor `LIBRARY_FLOORS` sets for `logger_name` (the closest ancestor's), else None."""
    name = logger_name
    while True:
        if name in LIBRARY_FLOORS:
            return LIBRARY_FLOORS[name]
        if "." not in name:
            return None
        name = name.rpartition(".")[0]


class LibraryFloorFilter(logging.Filter):
    """Drops a library record below its floor: the logger levels already hold the floors, this
    holds them for a child logger whose level a library set itself (kubernetes_asyncio's
    ``Configuration.debug`` sets DEBUG on its loggers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether `record` may be written."""
        floor = library_floor(record.name)
        return floor is None or record.levelno >= floor


def _temporal_core_entry(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    # A forwarded core line carries its entry as the record's extra "temporal_log": its target
    # and fields become keys of the event instead of an object's repr.
    entry = event_dict.pop("temporal_log", None)
    if entry is not None:
        event_dict["target"] = str(getattr(entry, "target", ""))
        try:
            fields = dict(entry.fields)
        except Exception:  # the SDK documents the conversion as able to fail
            fields = {}
        if fields:
            event_dict["fields"] = {key: str(value) for key, value in fields.items()}
    return event_dict


def _no_ansi_escapes(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    # Colour codes from a library's own formatting are noise in a JSON log.
    event = event_dict.get("event")
    if isinstance(event, str) and "\x1b" in event:
        event_dict["event"] = _ANSI_ESCAPE.sub("", event)
    return event_dict


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
        _temporal_core_entry,
        _no_ansi_escapes,
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

    Logs go to standard error, one line per event, filtered at the level `verbosity` maps to;
    the libraries' loggers no lower than their `LIBRARY_FLOORS`.
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
    handler.addFilter(LibraryFloorFilter())
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == _HANDLER_NAME:
            root.removeHandler(existing)
            existing.close()
    root.addHandler(handler)
    root.setLevel(level)
    for name, floor in LIBRARY_FLOORS.items():
        logging.getLogger(name).setLevel(max(level, floor))


def temporal_core_forwarding() -> LogForwardingConfig:
    """Where the Temporal core's log lines go: `TEMPORAL_CORE_LOGGER`, with the core's target and
    fields kept as the record's extra (`_temporal_core_entry` makes them keys of the event)."""
    from temporalio.runtime import LogForwardingConfig

    return LogForwardingConfig(
        logger=logging.getLogger(TEMPORAL_CORE_LOGGER),
        append_target_to_name=False,
        prepend_target_on_message=False,
        append_log_fields_to_message=False,
    )


def forward_temporal_core_logs() -> None:
    """Make the Temporal core write its log lines through Python logging (`TEMPORAL_CORE_LOGGER`)
    instead of colouring them onto standard error, so they are rendered as every other line.

    It replaces the SDK's default runtime: call it before the first Temporal client connects
    (clients connected before keep the runtime they had).
    """
    from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    telemetry = TelemetryConfig(
        logging=LoggingConfig(
            # The SDK's default levels: the core's warnings (a lost connection), others' errors.
            filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
            forwarding=temporal_core_forwarding(),
        )
    )
    Runtime.set_default(Runtime(telemetry=telemetry), error_if_already_set=False)
