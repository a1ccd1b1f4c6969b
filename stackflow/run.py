"""``stackflow run``: load and validate the operator configuration, then run the operator.

A bad configuration never starts the operator: it exits with status 2 and one line naming the key
and the problem. ``--check`` stops after validation and prints the effective configuration.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from stackflow.config import ConfigError, describe_effective, empty_selector_log_line, load_config
from stackflow.logging import configure_logging

EXIT_BAD_CONFIG = 2


def build_parser() -> argparse.ArgumentParser:
    """Flags of ``stackflow run``."""
    parser = argparse.ArgumentParser(
        prog="stackflow run", description="Run the Stackflow operator."
    )
    parser.add_argument("--config", type=Path, help="operator configuration file (YAML)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate the configuration, print the effective configuration and exit",
    )
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="log line format (json in production, console for humans)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``stackflow run``; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config, os.environ)
    except ConfigError as exc:
        print(f"stackflow: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    if args.check:
        sys.stdout.write(describe_effective(config))
        return 0
    configure_logging(mode=args.log_format, verbosity=config.log_verbosity)
    log = structlog.get_logger("stackflow.run")
    if (line := empty_selector_log_line(config)) is not None:
        log.info(line)
    log.error("the operator engine is not built yet; only --check is available")
    return 1
