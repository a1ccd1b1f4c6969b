"""``stackflow crds [--out-dir DIR]``: print every CRD as multi-document YAML, or write one file each."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from stackflow.api.crds import render_all, write_files


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``stackflow crds``."""
    parser = argparse.ArgumentParser(
        prog="stackflow crds",
        description="Print the CustomResourceDefinitions of every ECK kind, generated from the models.",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="write one <group>_<plural>.yaml per CRD into DIR instead of printing them",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status (2 for bad arguments, as argparse)."""
    try:
        args = build_parser().parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if args.out_dir is None:
        sys.stdout.write(render_all())
        return 0
    try:
        paths = write_files(args.out_dir)
    except OSError as error:
        print(f"stackflow crds: cannot write to {args.out_dir}: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0
