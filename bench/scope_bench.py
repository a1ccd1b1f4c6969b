"""Scoping benchmark: matcher decisions, scoped-list filtering, informer cache memory.

Run: ``.venv/bin/python bench/scope_bench.py`` (also part of ``make bench``). Prints one figure a
line; progress goes to stderr. Bounded: about 30 s on a 2-core machine.

1. A NamespaceMatcher decision (dynamic mode, selector ``env in (prod,staging),!legacy``) over
   1,000 cached namespaces: nanoseconds per ``name_matches``.
2. Scoped-client filtering of a 10,000-object list spread over 1,000 namespaces (half match):
   ``filter_by_namespace``, one decision per namespace.
3. Informer cache memory for 10,000 ConfigMaps: RSS of this process before and after an informer
   lists them from kubesim (run as a subprocess so its memory is not counted).
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stackflow.kube.client import make_api_client
from stackflow.kube.informer import Informer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import filter_by_namespace
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES
from stackflow.scope.matcher import NamespaceMatcher, ScopeConfig
from stackflow.scope.selector import parse_selector_string

NAMESPACE_COUNT = 1_000
OBJECT_COUNT = 10_000


def progress(message: str) -> None:
    """Progress for humans, on stderr."""
    print(f"[scope_bench] {message}", file=sys.stderr, flush=True)


class DictSource:
    """An in-memory NamespaceSource."""

    def __init__(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self._labels = labels

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """Labels of one namespace, None when unknown."""
        return self._labels.get(name)

    def namespace_names(self) -> Iterable[str]:
        """Every known namespace."""
        return self._labels.keys()


def namespace_labels(index: int) -> dict[str, str]:
    """Half the namespaces match the benchmark's selector."""
    return {"env": "prod" if index % 2 == 0 else "dev", "team": f"t{index % 17}"}


def build_matcher() -> NamespaceMatcher:
    """A dynamic-mode matcher over 1,000 namespaces."""
    source = DictSource({f"ns-{i}": namespace_labels(i) for i in range(NAMESPACE_COUNT)})
    selector = parse_selector_string("env in (prod,staging),!legacy")
    return NamespaceMatcher(
        ScopeConfig(operator_namespace="elastic-system", namespace_selector=selector),
        source=source,
    )


def bench_matcher(matcher: NamespaceMatcher) -> float:
    """Median nanoseconds per decision over 5 rounds of 100,000 decisions."""
    names = [f"ns-{i % NAMESPACE_COUNT}" for i in range(100_000)]
    rounds = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for name in names:
            matcher.name_matches(name)
        rounds.append((time.perf_counter_ns() - start) / len(names))
    return statistics.median(rounds)


def bench_filter(matcher: NamespaceMatcher) -> tuple[float, int]:
    """Median milliseconds to filter a 10,000-object list, and how many items were kept."""
    items: list[dict[str, Any]] = [
        {"metadata": {"namespace": f"ns-{i % NAMESPACE_COUNT}", "name": f"cm-{i}"}}
        for i in range(OBJECT_COUNT)
    ]
    rounds = []
    kept = 0
    for _ in range(9):
        start = time.perf_counter()
        kept = len(filter_by_namespace(items, matcher))
        rounds.append((time.perf_counter() - start) * 1000)
    return statistics.median(rounds), kept


def rss_bytes() -> int:
    """Resident set size of this process."""
    status = Path("/proc/self/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) * 1024 if match else 0


async def populate(client: ResourceClient) -> None:
    """100 namespaces holding 10,000 ConfigMaps, written by 16 concurrent clients."""
    namespaces = [f"bench-{i}" for i in range(100)]
    for name in namespaces:
        await client.create(NAMESPACES, {"metadata": {"name": name}}, namespace=None)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(OBJECT_COUNT):
        queue.put_nowait(i)

    async def writer() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            await client.create(
                CONFIGMAPS,
                {
                    "metadata": {
                        "name": f"cm-{i}",
                        "labels": {"app": "bench", "shard": str(i % 10)},
                    },
                    "data": {"key": f"value-{i}", "other": "x" * 64},
                },
                namespace=namespaces[i % len(namespaces)],
            )
            if i % 2000 == 0:
                progress(f"created {i} ConfigMaps")

    await asyncio.gather(*(writer() for _ in range(16)))


async def bench_informer_memory(kubeconfig: Path) -> tuple[int, float]:
    """RSS growth (bytes) of an informer caching 10,000 ConfigMaps, and its sync time (s)."""
    api = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=60)
    try:
        client = ResourceClient(api)
        await populate(client)
        gc.collect()
        before = rss_bytes()
        informer = Informer(client, CONFIGMAPS)
        start = time.perf_counter()
        informer.start()
        await asyncio.wait_for(informer.wait_synced(), timeout=120)
        synced = time.perf_counter() - start
        gc.collect()
        after = rss_bytes()
        assert len(informer.cache) >= OBJECT_COUNT, len(informer.cache)
        await informer.stop()
        return after - before, synced
    finally:
        await api.close()


def start_kubesim(kubeconfig: Path) -> subprocess.Popen[str]:
    """kubesim as a subprocess on a free port; returns once it accepts requests."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening" not in line:
        proc.kill()
        raise RuntimeError(f"kubesim did not start: {line!r}")
    return proc


def main() -> int:
    """Run the three measurements and print their figures."""
    matcher = build_matcher()
    progress("matcher decisions")
    per_decision = bench_matcher(matcher)
    print(f"matcher decision (dynamic, 1,000 namespaces): {per_decision:.0f} ns")
    progress("filtering a 10,000-object list")
    filter_ms, kept = bench_filter(matcher)
    print(
        f"scoped list filtering, 10,000 objects over 1,000 namespaces: {filter_ms:.2f} ms"
        f" ({kept} kept)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        proc = start_kubesim(kubeconfig)
        try:
            progress("populating kubesim with 10,000 ConfigMaps")
            grown, synced = asyncio.run(bench_informer_memory(kubeconfig))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(
        f"informer cache, 10,000 ConfigMaps: {grown / 2**20:.1f} MiB RSS"
        f" ({grown / OBJECT_COUNT / 1024:.2f} KiB per object), synced in {synced:.2f} s"
    )
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    os._exit(status)
