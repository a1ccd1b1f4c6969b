"""``python -m esrunner``: run the Elasticsearch Pods bound to this runner's Node."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from pathlib import Path

from esrunner.containers import unavailable_reason
from esrunner.kubeapi import KubeApi
from esrunner.pods import RunnerSettings
from esrunner.runner import serve

DEFAULT_NODE = "elasticsearch-runner"


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, then run until interrupted."""
    parser = argparse.ArgumentParser(prog="esrunner", description=(__doc__ or "").strip())
    parser.add_argument(
        "--kubeconfig", type=Path, required=True, help="how to reach the API server"
    )
    parser.add_argument(
        "--node-name", default=DEFAULT_NODE, help=f"the runner's Node ({DEFAULT_NODE})"
    )
    parser.add_argument("--state-dir", type=Path, required=True, help="volumes, Pod files and logs")
    parser.add_argument(
        "--extender-port", type=int, default=0, help="serve the scheduler extender on this port"
    )
    parser.add_argument(
        "--heap-ceiling-mb", type=int, default=512, help="the largest heap a node gets (512)"
    )
    args = parser.parse_args(argv)
    reason = unavailable_reason()
    if reason is not None:
        print(f"esrunner: {reason}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s esrunner %(levelname)s %(message)s")
    settings = RunnerSettings(
        node_name=args.node_name, state_dir=args.state_dir, heap_ceiling_mb=args.heap_ceiling_mb
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(KubeApi(args.kubeconfig), settings, extender_port=args.extender_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
