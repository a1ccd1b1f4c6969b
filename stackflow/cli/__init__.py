"""The ``stackflow`` command line: ``kubesim``, ``dev``, ``run``, ``replay``, ``reconcile``, ``status``, ``license``, ``crds``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from stackflow import __version__
from stackflow.cli.imports import collector_paused, without_pydantic_plugins


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each subcommand's own flags are parsed by its handler."""
    parser = argparse.ArgumentParser(
        prog="stackflow",
        description="Stackflow: the Elastic Stack on Kubernetes, orchestrated by Temporal.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version()}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser(
        "kubesim",
        help="run kubesim, the Kubernetes API emulator",
        add_help=False,
    )
    sub.add_parser("dev", help="run the embedded development environment", add_help=False)
    sub.add_parser("run", help="run the operator", add_help=False)
    sub.add_parser("replay", help="replay workflow histories against this code", add_help=False)
    sub.add_parser("reconcile", help="reconcile one resource now", add_help=False)
    sub.add_parser("status", help="why one resource is, or is not, reconciled", add_help=False)
    sub.add_parser("license", help="create license keys and signed licenses", add_help=False)
    sub.add_parser("crds", help="print the CustomResourceDefinitions", add_help=False)
    return parser


def version() -> str:
    """Stackflow's version (``stackflow.__version__``, which the package metadata is built from;
    reading the metadata would import ``importlib.metadata`` on every start)."""
    return __version__


def _subcommand(command: str) -> Callable[[list[str]], int] | None:
    """The ``main`` of a subcommand, imported only when it runs (start-up stays fast)."""
    modules = {
        # kubesim's command line pulls its server and test helpers: not on the operator's way.
        "kubesim": "kubesim.cli",
        "dev": "stackflow.cli.dev",
        "run": "stackflow.cli.run",
        "replay": "stackflow.cli.replay",
        "reconcile": "stackflow.cli.reconcile",
        "status": "stackflow.cli.status",
        "license": "stackflow.cli.license",
        "crds": "stackflow.cli.crds",
    }
    if command not in modules:
        return None
    entry: Callable[[list[str]], int] = importlib.import_module(modules[command]).main
    return entry


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand; returns the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args or args[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if args else 2
    if args[0] == "--version":
        print(f"{parser.prog} {version()}")
        return 0
    command, rest = args[0], args[1:]
    without_pydantic_plugins(os.environ)
    with collector_paused():
        entry = _subcommand(command)
    if entry is not None:
        return entry(rest)
    parser.print_usage(sys.stderr)
    print(f"stackflow: error: unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
