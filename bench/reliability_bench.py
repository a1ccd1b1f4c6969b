"""Reliability benchmark: the fault-injection run of ``tests/reliability`` at a larger size.

Run: ``.venv/bin/python bench/reliability_bench.py [--namespaces 8] [--per-namespace 10]
[--rounds 3] [--seed N]`` (also part of ``make bench``). A steady load of Elasticsearch clusters
over several namespaces (spec changes and namespace flips at a fixed rate, each with a known end
state) runs against kubesim + a Temporal dev server + two ``stackflow run`` replicas while every
kind of fault is injected ``--rounds`` times in a seeded order: replicas and the leader SIGKILLed
mid-work, the Temporal server killed and restarted or unreachable for a while, the API server
restarted on its state file, watches cut (resumed into 410 Expired), API requests answered 503,
slowed, or 409. Prints the figures: clusters and objects, changes and faults of each kind, the
recovery time after each kind (p50/p99), changes lost (must be 0) and activities stuck. Progress on
stderr. Exits 1 when a change was lost or an activity is stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the rig lives in tests/

from tests.reliability.scenario import Size, run


def progress(message: str) -> None:
    """Progress for humans, on stderr."""
    print(f"[reliability_bench] {message}", file=sys.stderr, flush=True)


def main() -> int:
    """Parse the arguments, run, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=8)
    parser.add_argument("--per-namespace", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=3, help="times each kind of fault is injected"
    )
    parser.add_argument("--seed", type=int, default=None, help="replay a run's schedule")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    size = Size(namespaces=args.namespaces, per_namespace=args.per_namespace, rounds=args.rounds)
    with tempfile.TemporaryDirectory(prefix="reliability-bench-") as directory:
        report = asyncio.run(run(Path(directory), size, seed=seed, progress=progress))
    for line in report.lines():
        print(line)
    return 1 if report.lost or report.stuck else 0


if __name__ == "__main__":
    raise SystemExit(main())
