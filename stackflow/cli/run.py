"""``stackflow run``: load and validate the operator configuration, then run the operator.

A bad configuration never starts the operator: it exits with status 2 and one line naming the key
and the problem. ``--check`` stops after validation and prints the effective configuration.
Otherwise the operator runs (``stackflow.cli.operator``) until SIGTERM or SIGINT, then exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog

from stackflow.cli.allocator import cap_malloc_arenas
from stackflow.cli.imports import collector_paused
from stackflow.config import (
    ConfigError,
    UnusableSettingError,
    describe_effective,
    empty_selector_log_line,
    load_config,
)
from stackflow.logging import configure_logging, forward_temporal_core_logs

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
        "--kubeconfig",
        type=Path,
        help="kubeconfig file (default: in-cluster config in a Pod, else $KUBECONFIG)",
    )
    parser.add_argument(
        "--health-host",
        default="0.0.0.0",  # the kubelet probes the Pod IP
        help="address of the /healthz, /readyz and /metrics listener (0.0.0.0)",
    )
    parser.add_argument(
        "--health-port",
        type=int,
        default=8081,
        help="port of /healthz, /readyz and /metrics (8081; 0 picks a free port)",
    )
    parser.add_argument(
        "--graceful-shutdown-timeout",
        type=float,
        default=20.0,
        help="seconds in-flight activities get to finish on SIGTERM (20)",
    )
    parser.add_argument(
        "--identity", default="", help="leader election identity (default: pod name + random)"
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
    # Before the Temporal runtime and the executors start their threads.
    arenas = cap_malloc_arenas(os.environ)
    configure_logging(mode=args.log_format, verbosity=config.log_verbosity)
    forward_temporal_core_logs()  # before any client: the core's lines in the same format
    log = structlog.get_logger("stackflow.cli.run")
    if (line := empty_selector_log_line(config)) is not None:
        log.info(line)
    if arenas is not None:
        log.debug("allocator.arenas_capped", arenas=arenas)
    # Imported here so that --check stays fast and needs no Temporal or Kubernetes libraries.
    with collector_paused():
        from stackflow.cli.operator import OperatorOptions, install_stop_signals, run_operator
        from stackflow.webhooks.server import WebhookPortInUseError

    options = OperatorOptions(
        kubeconfig=args.kubeconfig,
        health_host=args.health_host,
        health_port=args.health_port,
        graceful_shutdown_seconds=args.graceful_shutdown_timeout,
        identity=args.identity,
        config_file=args.config,
    )

    async def operate() -> int:
        stop = asyncio.Event()
        remove_handlers = install_stop_signals(stop)
        try:
            return await run_operator(config, options=options, stop=stop)
        finally:
            remove_handlers()

    try:
        status = asyncio.run(operate())
    except (WebhookPortInUseError, UnusableSettingError) as exc:
        print(f"stackflow: {exc}", file=sys.stderr)
        status = EXIT_BAD_CONFIG
    except Exception as exc:
        log.error("operator.failed", error=str(exc) or repr(exc), exc_info=True)
        status = 1
    # temporalio#300: interpreter teardown after a worker can abort in PyGILState_Release.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
