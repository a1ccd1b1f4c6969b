"""Quiet bench: what one Elasticsearch that no cluster answers writes to Temporal while nothing changes.

Run: ``.venv/bin/python bench/quiet_bench.py [--minutes 16] [--settle 6]``. The end-to-end stack of
``make dev`` (``tests/e2e/harness.py``: kubesim + a Temporal dev server + ``stackflow run``): one
Elasticsearch, whose pods turn ready but whose HTTP API nobody serves, so every reconcile ends
"license pending: cluster not reachable" and asks to be retried. Once a minute it prints the history
length and the reconciles so far (progress on stderr); after ``--settle`` minutes it counts the
events the rest of the run adds and prints them per hour, last: ``events per hour = 132``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e harness lives in tests/

from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.harness import ES, create_namespace, manifest, operator_stack

NAMESPACE = "bench-quiet"
WORKFLOW_ID = f"elasticsearch/{NAMESPACE}/quickstart"


def progress(message: str) -> None:
    """Progress for humans, on stderr."""
    print(f"[quiet_bench] {message}", file=sys.stderr, flush=True)


async def history_length(client: Client) -> int:
    """Events in the resource workflow's history so far."""
    count = 0
    async for _ in client.get_workflow_handle(WORKFLOW_ID).fetch_history_events():
        count += 1
    return count


async def run(minutes: int, settle: int) -> tuple[int, int]:
    """Events in the history after ``settle`` minutes and at the end of the run."""
    with tempfile.TemporaryDirectory(prefix="quiet_bench-") as workdir:
        async with operator_stack(Path(workdir), ClusterTarget(KUBESIM)) as stack:
            await create_namespace(stack.kube, NAMESPACE, in_scope=True)
            spec = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}
            body = manifest("Elasticsearch", "quickstart", NAMESPACE, spec)
            await stack.kube.create(ES, body, namespace=NAMESPACE)
            client = stack.temporal.client
            settled = 0
            for minute in range(1, minutes + 1):
                # A fixed sampling period is what this bench measures over, not synchronisation.
                await asyncio.sleep(60)
                events = await history_length(client)
                state = await client.get_workflow_handle(WORKFLOW_ID).query("state")
                progress(
                    f"minute {minute}: {events} events, {state['reconciles']} reconciles,"
                    f" {state['phase']}"
                )
                if minute == settle:
                    settled = events
            return settled, events


def main() -> None:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=int, default=16, help="length of the run (default 16)")
    parser.add_argument(
        "--settle", type=int, default=6, help="minutes before counting starts (default 6)"
    )
    args = parser.parse_args()
    if not 1 <= args.settle < args.minutes:
        parser.error("--settle must be at least 1 and less than --minutes")
    settled, final = asyncio.run(run(args.minutes, args.settle))
    counted = args.minutes - args.settle
    print(
        f"one Elasticsearch no cluster answers, nothing changing: {final - settled} history events"
        f" in minutes {args.settle}-{args.minutes} ({final} in all)"
    )
    print(f"events per hour = {(final - settled) * 60 // counted}")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
