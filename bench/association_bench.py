"""Association benchmark: from a namespace flip to the association's new status, both directions.

Run: ``.venv/bin/python bench/association_bench.py [--flips N]`` (also part of ``make bench``).
The stack is the end-to-end one (``tests/e2e/harness.py``): kubesim + a Temporal dev server +
``stackflow run`` as a subprocess. A Kibana in one namespace references an Elasticsearch in
another; each flip removes the Elasticsearch namespace's scope label (time until the Kibana's
``elasticsearchAssociationStatus`` reads ``Pending``), then puts it back (time until
``Established``). Prints p50/p90 of each direction over the flips (default 20; ECK's reviewers
measured about 8 s for re-establishing). Progress goes to stderr. Bounded: each transition gives
up after 60 s, the whole run after 15 minutes; it exits 0 either way and says what was cut short.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stackflow.api.kinds import kind_resource

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e harness lives in tests/

from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.harness import (
    ES,
    Stack,
    create_namespace,
    manifest,
    operator_stack,
    set_in_scope,
)

VERSION = "8.15.0"
KIBANA_NAMESPACE = "bench-kb"
ES_NAMESPACE = "bench-es"
STATUS_FIELD = "elasticsearchAssociationStatus"
TRANSITION_DEADLINE = 60.0
RUN_DEADLINE = 15 * 60.0
POLL_INTERVAL = 0.05
ECK_REESTABLISH_SECONDS = 8.0


def progress(message: str) -> None:
    """Progress for humans, on stderr."""
    print(f"[association_bench] {message}", file=sys.stderr, flush=True)


async def association_status(stack: Stack) -> str:
    """The Kibana's Elasticsearch association status ("" before the first one)."""
    kibana = await stack.kube.get(kind_resource("Kibana"), namespace=KIBANA_NAMESPACE, name="kb")
    return str((kibana.get("status") or {}).get(STATUS_FIELD) or "")


async def seconds_until(stack: Stack, wanted: str, *, started: float) -> float | None:
    """Seconds from ``started`` until the status reads ``wanted``; None past the deadline."""
    while time.perf_counter() - started < TRANSITION_DEADLINE:
        if await association_status(stack) == wanted:
            return time.perf_counter() - started
        await asyncio.sleep(POLL_INTERVAL)
    return None


async def prepare(stack: Stack) -> bool:
    """An Elasticsearch and a Kibana referencing it across namespaces, Established."""
    kube = stack.kube
    await create_namespace(kube, KIBANA_NAMESPACE, in_scope=True)
    await create_namespace(kube, ES_NAMESPACE, in_scope=True)
    es_spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
    await kube.create(
        ES, manifest("Elasticsearch", "es", ES_NAMESPACE, es_spec), namespace=ES_NAMESPACE
    )
    kb_spec: dict[str, Any] = {
        "version": VERSION,
        "count": 1,
        "elasticsearchRef": {"name": "es", "namespace": ES_NAMESPACE},
    }
    await kube.create(
        kind_resource("Kibana"),
        manifest("Kibana", "kb", KIBANA_NAMESPACE, kb_spec),
        namespace=KIBANA_NAMESPACE,
    )
    started = time.perf_counter()
    took = await seconds_until(stack, "Established", started=started)
    if took is None:
        progress("the association never got Established: giving up")
        return False
    progress(f"association Established {took:.1f}s after creation")
    return True


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank on the sorted values)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def report(name: str, values: list[float], *, wanted: int) -> None:
    """One figure line per direction."""
    if not values:
        print(f"{name}: no measurement ({wanted} attempted)")
        return
    print(
        f"{name}: p50 {statistics.median(values):.2f}s  p90 {percentile(values, 0.9):.2f}s  "
        f"max {max(values):.2f}s  ({len(values)}/{wanted} flips)"
    )


async def measure(flips: int) -> tuple[list[float], list[float]]:
    """Run the flips; the measured seconds to Pending and to Established."""
    to_pending: list[float] = []
    to_established: list[float] = []
    with tempfile.TemporaryDirectory(prefix="association-bench-") as directory:
        async with operator_stack(Path(directory), ClusterTarget(KUBESIM)) as stack:
            if not await prepare(stack):
                return to_pending, to_established
            run_started = time.perf_counter()
            for flip in range(1, flips + 1):
                if time.perf_counter() - run_started > RUN_DEADLINE:
                    progress(f"run deadline reached after {flip - 1} flips")
                    break
                figures: list[str] = []
                for in_scope, wanted, into in (
                    (False, "Pending", to_pending),
                    (True, "Established", to_established),
                ):
                    started = time.perf_counter()
                    await set_in_scope(stack.kube, ES_NAMESPACE, in_scope)
                    took = await seconds_until(stack, wanted, started=started)
                    if took is None:
                        figures.append(f"{wanted} not reached within {TRANSITION_DEADLINE:g}s")
                        # Leave the namespace labelled and the status settled for the next flip.
                        await set_in_scope(stack.kube, ES_NAMESPACE, True)
                        await seconds_until(stack, "Established", started=time.perf_counter())
                        break
                    into.append(took)
                    figures.append(f"{wanted} {took:.2f}s")
                progress(f"flip {flip}/{flips}: {', '.join(figures)}")
    return to_pending, to_established


def main() -> int:
    """Entry point; always exits 0 (the figures say what happened)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flips", type=int, default=20, help="flips per direction (20)")
    args = parser.parse_args()
    # The Temporal dev server and the operator inherit file descriptor 1: send their chatter to
    # stderr and keep stdout for the figures.
    sys.stdout.flush()
    figures = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    to_pending, to_established = asyncio.run(measure(args.flips))
    with contextlib.redirect_stdout(figures):
        print(
            f"association flip → status, Kibana → Elasticsearch across namespaces, {args.flips} flips"
        )
        report("unlabel → Pending", to_pending, wanted=args.flips)
        report("relabel → Established", to_established, wanted=args.flips)
        print(f"(ECK reference: about {ECK_REESTABLISH_SECONDS:g}s to re-establish)")
    figures.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
