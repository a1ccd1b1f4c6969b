"""The ``stackflow`` command line: ``kubesim``, ``dev``, ``run`` (and later ``replay``, ``reconcile``, ``license``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import kubesim.cli


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each subcommand's own flags are parsed by its handler."""
    parser = argparse.ArgumentParser(
        prog="stackflow",
        description="Stackflow: the Elastic Stack on Kubernetes, orchestrated by Temporal.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "kubesim",
        help="run kubesim, the Kubernetes API emulator",
        add_help=False,
    )
    sub.add_parser("dev", help="run the embedded development environment", add_help=False)
    sub.add_parser("run", help="run the operator", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "kubesim":
        return kubesim.cli.main(rest)
    if command == "dev":
        from stackflow.dev import main as dev_main

        return dev_main(rest)
    if command == "run":
        from stackflow.run import main as run_main

        return run_main(rest)
    parser.print_usage(sys.stderr)
    print(f"stackflow: error: unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
