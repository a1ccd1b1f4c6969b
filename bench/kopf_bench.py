"""The kopf half of the side-by-side benchmark, alone: a no-op kopf operator on kubesim.

Run: ``.venv/bin/python bench/kopf_bench.py [--count 500 [5000 ...]] [--samples 40]``. Starts a
kubesim subprocess (the CRDs, no simulated controllers), runs ``_kopf_side.run_kopf_side``
against it (kopf as a subprocess too), prints the figures; progress goes to stderr. The last line
is ``kopf creates/s = <float>`` for the largest ``--count``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from _kopf_side import KopfResult, describe, run_kopf_side
from _stack import KubesimProcess, progress
from engine_bench import Figure, percentile

NAMESPACE = "bench-kopf"
DEFAULT_COUNT = 500
DEFAULT_SAMPLES = 40


async def run(counts: list[int], samples: int) -> KopfResult:
    """A fresh kubesim, the kopf side against it, kubesim stopped."""
    with tempfile.TemporaryDirectory(prefix="kopf_bench-") as workdir:
        kubesim = KubesimProcess(kubeconfig=Path(workdir) / "kubeconfig")
        await kubesim.start()
        progress("kubesim up; starting kopf")
        try:
            return await run_kopf_side(
                kubesim.kubeconfig,
                namespace=NAMESPACE,
                batches=counts,
                latency_samples=samples,
                cleanup=False,
            )
        finally:
            await kubesim.stop()


def figures(result: KopfResult) -> list[Figure]:
    """The printed results (no targets: this is the comparison side)."""
    latencies = result.change_latencies
    lines = [
        Figure(
            f"kopf spec change -> handler start p50 ({len(latencies)} samples)",
            f"{percentile(latencies, 0.5) * 1000:.0f} ms",
        ),
        Figure(
            "kopf spec change -> handler start p99", f"{percentile(latencies, 0.99) * 1000:.0f} ms"
        ),
        Figure(
            "kopf spec change -> handler start mean", f"{statistics.mean(latencies) * 1000:.0f} ms"
        ),
    ]
    for size, rate in result.creates_per_second.items():
        writes = result.writes_per_second.get(size)
        written = "" if writes is None else f" (objects written at {writes:.1f}/s)"
        lines.append(
            Figure(f"kopf, {size} created at once -> all handled", f"{rate:.1f}/s{written}")
        )
    lines += [
        Figure(
            "kopf operator CPU per handled create (until idle)",
            f"{result.cpu_seconds_per_handled * 1000:.2f} ms",
        ),
        Figure(
            f"kopf operator RSS after {max(result.creates_per_second)} objects",
            f"{result.rss_bytes / 2**20:.1f} MiB",
        ),
    ]
    return lines


def main() -> int:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--count",
        type=int,
        nargs="+",
        default=[DEFAULT_COUNT],
        help=f"objects created at once, one batch per value (default {DEFAULT_COUNT})",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_SAMPLES,
        help=f"spec-change latency samples (default {DEFAULT_SAMPLES})",
    )
    args = parser.parse_args()
    if min(args.count) < 1 or args.samples < 1:
        parser.error("--count and --samples must be at least 1")
    began = time.monotonic()
    result = asyncio.run(run(args.count, args.samples))
    print(f"{describe()}; kubesim on this machine ({os.cpu_count()} CPUs)")
    for figure in figures(result):
        print(figure.line())
    largest = max(result.creates_per_second)
    print(f"kopf creates/s = {result.creates_per_second[largest]:.1f}")
    progress(f"done in {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
