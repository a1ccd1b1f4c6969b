"""kubesim performance benchmark: write throughput with watchers, 10k LIST, watch fan-out latency.

Run as ``.venv/bin/python bench/kubesim_bench.py`` (also ``make bench``). It starts ``python -m
kubesim`` as a subprocess (so client and server each get a core, as in real use) and talks to it
over HTTP with aiohttp. Results are plain ``name value unit target PASS|MISS`` lines on stdout,
progress goes to stderr; the exit code is 0 whatever the figures (benchmarks measure, tests assert).

``--profile-server PATH`` runs the server under cProfile and writes the stats to PATH on exit;
``--phases writes,list,fanout`` selects phases; ``--no-controllers`` turns the controllers off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parent.parent
TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
WATCHERS = 10
PHASE_TIMEOUT_SECONDS = 180.0
START_TIMEOUT_SECONDS = 30.0


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries only the figures)."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def report(
    name: str, value: float, unit: str, *, target: str | None = None, ok: bool = True
) -> None:
    """One figure on stdout, with its target and PASS/MISS when it has one."""
    line = f"{name} {value:.3f} {unit}"
    if target is not None:
        line += f" target {target} {'PASS' if ok else 'MISS'}"
    print(line, flush=True)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuMeter:
    """CPU use of the server process and of this client over one phase."""

    server_pid: int
    started: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0

    def start(self) -> None:
        """Start counting."""
        self.started = time.perf_counter()
        self.server_cpu = process_cpu_seconds(self.server_pid)
        self.client_cpu = time.process_time()

    def server_seconds(self) -> float:
        """Server CPU seconds since :meth:`start` (steady under CPU contention, unlike rates)."""
        return process_cpu_seconds(self.server_pid) - self.server_cpu

    def summary(self) -> str:
        """``server N% / client M%`` of one core since :meth:`start`."""
        wall = max(time.perf_counter() - self.started, 1e-9)
        server = (process_cpu_seconds(self.server_pid) - self.server_cpu) / wall
        client = (time.process_time() - self.client_cpu) / wall
        return f"CPU over {wall:.1f}s: server {server:.0%}, client {client:.0%} of one core"


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (``fraction`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))
    return ordered[index]


def configmap(name: str, *, generation: int) -> dict[str, Any]:
    """A ConfigMap of a few hundred bytes, like an operator's typical small object."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "bench", "shard": name[-1]}},
        "data": {
            "generation": str(generation),
            "config.yaml": "replicas: 3\nimage: example/app:1.2.3\n" * 4,
        },
    }


@contextlib.asynccontextmanager
async def kubesim_process(
    *, module: str, profile: Path | None, controllers: bool
) -> AsyncIterator[tuple[str, int]]:
    """Run ``python -m kubesim`` (optionally under cProfile) and yield its URL and pid."""
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", str(profile)]
    command += ["-m", module, "--port", "0"]
    if not controllers:
        command.append("--no-controllers")
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        },
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(START_TIMEOUT_SECONDS):
            line = (await process.stdout.readline()).decode().strip()
        if not line.startswith("kubesim listening on "):
            raise RuntimeError(f"kubesim did not start (said {line!r})")
        yield line.removeprefix("kubesim listening on "), process.pid
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(20):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()


@dataclass
class Watcher:
    """One open watch stream; counts events, and (when ``on_event`` is set) parses them."""

    events: int = 0
    arrivals: dict[str, float] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


async def open_watchers(
    session: aiohttp.ClientSession, url: str, *, count: int, parse: bool
) -> list[Watcher]:
    """Open ``count`` watches from the collection's current RV; return once all are streaming."""
    async with session.get(url, params={"limit": "1"}) as response:
        response.raise_for_status()
        rv = (await response.json())["metadata"]["resourceVersion"]
    watchers = [Watcher() for _ in range(count)]
    started: list[asyncio.Future[None]] = [
        asyncio.get_running_loop().create_future() for _ in watchers
    ]
    for watcher, ready in zip(watchers, started, strict=True):
        watcher.task = asyncio.create_task(
            _consume(session, url, rv=rv, watcher=watcher, ready=ready, parse=parse)
        )
    await asyncio.gather(*started)
    return watchers


async def _consume(
    session: aiohttp.ClientSession,
    url: str,
    *,
    rv: str,
    watcher: Watcher,
    ready: asyncio.Future[None],
    parse: bool,
) -> None:
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
    try:
        async with session.get(
            url, params=params, timeout=aiohttp.ClientTimeout(total=None)
        ) as response:
            response.raise_for_status()
            ready.set_result(None)
            if not parse:
                # Consuming every event without decoding it keeps the client off the critical path.
                async for chunk in response.content.iter_any():
                    watcher.events += chunk.count(b"\n")
                return
            async for line in response.content:
                arrived = time.perf_counter()
                event = json.loads(line)
                watcher.events += 1
                watcher.arrivals[event["object"]["metadata"]["resourceVersion"]] = arrived
    except Exception as exc:
        if not ready.done():
            ready.set_exception(exc)
            return
        raise


async def close_watchers(watchers: list[Watcher]) -> None:
    """Cancel the watch streams."""
    for watcher in watchers:
        if watcher.task is not None:
            watcher.task.cancel()
    await asyncio.gather(*(w.task for w in watchers if w.task is not None), return_exceptions=True)


async def wait_for(condition: Callable[[], bool], *, seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def create_namespace(session: aiohttp.ClientSession, base: str, name: str) -> None:
    """Create a namespace (201, or 409 when it exists)."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    async with session.post(f"{base}/api/v1/namespaces", json=body) as response:
        if response.status not in (201, 409):
            raise RuntimeError(f"namespace {name}: HTTP {response.status} {await response.text()}")


async def run_writers(
    session: aiohttp.ClientSession,
    collection: str,
    *,
    count: int,
    concurrency: int,
    update_rvs: dict[str, str] | None,
) -> dict[str, str]:
    """Create (``update_rvs`` None) or update ``count`` ConfigMaps from concurrent tasks.

    Answers name → resourceVersion of the written objects.
    """
    next_index = iter(range(count))
    written: dict[str, str] = {}

    async def worker() -> None:
        for index in next_index:
            name = f"cm-{index:06d}"
            if update_rvs is None:
                body = configmap(name, generation=1)
                request = session.post(collection, json=body)
            else:
                body = configmap(name, generation=2)
                body["metadata"]["resourceVersion"] = update_rvs[name]
                request = session.put(f"{collection}/{name}", json=body)
            async with request as response:
                if response.status not in (200, 201):
                    raise RuntimeError(f"{name}: HTTP {response.status} {await response.text()}")
                written[name] = (await response.json())["metadata"]["resourceVersion"]

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return written


async def phase_writes(
    session: aiohttp.ClientSession, base: str, *, writes: int, concurrency: int, meter: CpuMeter
) -> None:
    """Writes per second (half creates, half updates) while 10 watchers consume every event.

    The target figure counts until every watcher has received every event (a server that
    acknowledges writes faster than it streams them only builds a backlog); the rate of
    acknowledged writes is reported beside it.
    """
    await create_namespace(session, base, "bench-writes")
    collection = f"{base}/api/v1/namespaces/bench-writes/configmaps"
    watchers = await open_watchers(session, collection, count=WATCHERS, parse=False)
    progress(f"writes: {WATCHERS} watchers open; {writes} writes from {concurrency} tasks")
    half = writes // 2
    meter.start()
    started = time.perf_counter()
    created = await run_writers(
        session, collection, count=half, concurrency=concurrency, update_rvs=None
    )
    await run_writers(session, collection, count=half, concurrency=concurrency, update_rvs=created)
    elapsed = time.perf_counter() - started
    delivered = await wait_for(lambda: all(w.events >= 2 * half for w in watchers), seconds=60)
    drained = time.perf_counter() - started
    progress(f"writes: {meter.summary()}")
    server_cpu = meter.server_seconds()
    await close_watchers(watchers)
    rate = 2 * half / drained
    report("writes_per_second", rate, "writes/s", target=">=1000", ok=rate >= 1000 and delivered)
    report("writes_acknowledged_per_second", 2 * half / elapsed, "writes/s")
    report("server_cpu_per_write_ms", server_cpu / (2 * half) * 1000, "ms")
    if not delivered:
        progress(f"writes: watchers saw {[w.events for w in watchers]} of {2 * half} events")


async def phase_list(session: aiohttp.ClientSession, base: str, *, objects: int, runs: int) -> None:
    """p50 time to receive a LIST of ``objects`` ConfigMaps, as JSON and as a kubectl Table."""
    await create_namespace(session, base, "bench-list")
    collection = f"{base}/api/v1/namespaces/bench-list/configmaps"
    async with session.get(collection, params={"limit": "1"}) as response:
        present = bool((await response.json())["items"])
    if not present:
        progress(f"list: creating {objects} ConfigMaps")
        started = time.perf_counter()
        await run_writers(session, collection, count=objects, concurrency=16, update_rvs=None)
        progress(f"list: created in {time.perf_counter() - started:.1f}s")
    for label, headers in (
        ("json", {"Accept": "application/json"}),
        ("table", {"Accept": TABLE_ACCEPT}),
    ):
        timings: list[float] = []
        size = 0
        for _ in range(runs):
            started = time.perf_counter()
            async with session.get(collection, headers=headers) as response:
                payload = await response.read()
            timings.append(time.perf_counter() - started)
            size = len(payload)
        p50 = statistics.median(timings)
        progress(f"list {label}: {size / 1e6:.1f} MB, runs {[round(t, 3) for t in timings]}")
        report(f"list_{objects}_{label}_p50_seconds", p50, "s", target="<0.5", ok=p50 < 0.5)


async def phase_fanout(
    session: aiohttp.ClientSession, base: str, *, writes: int, rate: float
) -> None:
    """Latency from just before a write's request to its event at each of 10 watchers."""
    await create_namespace(session, base, "bench-fanout")
    collection = f"{base}/api/v1/namespaces/bench-fanout/configmaps"
    async with session.post(collection, json=configmap("cm-fanout", generation=0)) as response:
        rv = (await response.json())["metadata"]["resourceVersion"]
    watchers = await open_watchers(session, collection, count=WATCHERS, parse=True)
    progress(f"fanout: {writes} sequential updates paced at {rate:.0f}/s to {WATCHERS} watchers")
    sent: dict[str, tuple[float, float]] = {}
    interval = 1.0 / rate
    for generation in range(1, writes + 1):
        body = configmap("cm-fanout", generation=generation)
        body["metadata"]["resourceVersion"] = rv
        started = time.perf_counter()
        async with session.put(f"{collection}/cm-fanout", json=body) as response:
            rv = (await response.json())["metadata"]["resourceVersion"]
        answered = time.perf_counter()
        sent[rv] = (started, answered)
        await asyncio.sleep(max(0.0, interval - (answered - started)))
    await wait_for(lambda: all(w.events >= writes for w in watchers), seconds=30)
    await close_watchers(watchers)
    from_request = [
        w.arrivals[rv] - t[0] for rv, t in sent.items() for w in watchers if rv in w.arrivals
    ]
    from_response = [
        w.arrivals[rv] - t[1] for rv, t in sent.items() for w in watchers if rv in w.arrivals
    ]
    missing = writes * WATCHERS - len(from_request)
    if missing:
        progress(f"fanout: {missing} events never arrived")
    if not from_request:
        report("fanout_latency_p99_ms", float("inf"), "ms", target="<50", ok=False)
        return
    p99 = percentile(from_request, 0.99) * 1000
    report("fanout_latency_p50_ms", percentile(from_request, 0.5) * 1000, "ms")
    report("fanout_latency_p99_ms", p99, "ms", target="<50", ok=p99 < 50 and not missing)
    report("fanout_latency_after_response_p50_ms", percentile(from_response, 0.5) * 1000, "ms")
    report(
        "write_latency_p50_ms", statistics.median(t[1] - t[0] for t in sent.values()) * 1000, "ms"
    )


async def run(args: argparse.Namespace) -> None:
    """Start the server and run the selected phases, each bounded in time."""
    phases = set(args.phases.split(","))
    async with kubesim_process(
        module=args.server_module, profile=args.profile_server, controllers=not args.no_controllers
    ) as (base, pid):
        progress(f"kubesim at {base} (pid {pid})")
        meter = CpuMeter(pid)
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=connector) as session:
            steps: list[tuple[str, Callable[[], Any]]] = [
                (
                    "writes",
                    lambda: phase_writes(
                        session,
                        base,
                        writes=args.writes,
                        concurrency=args.concurrency,
                        meter=meter,
                    ),
                ),
                (
                    "list",
                    lambda: phase_list(
                        session, base, objects=args.list_objects, runs=args.list_runs
                    ),
                ),
                (
                    "fanout",
                    lambda: phase_fanout(
                        session, base, writes=args.fanout_writes, rate=args.fanout_rate
                    ),
                ),
            ]
            for name, step in steps:
                if name not in phases:
                    continue
                try:
                    async with asyncio.timeout(PHASE_TIMEOUT_SECONDS):
                        await step()
                except TimeoutError:
                    progress(f"{name}: timed out after {PHASE_TIMEOUT_SECONDS:.0f}s")
                    print(f"{name} timed out MISS", flush=True)


def main() -> int:
    """Parse the command line and run the benchmark; always 0 unless the server cannot start."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="writes,list,fanout")
    parser.add_argument("--writes", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--list-objects", type=int, default=10_000)
    parser.add_argument("--list-runs", type=int, default=5)
    parser.add_argument("--fanout-writes", type=int, default=300)
    parser.add_argument("--fanout-rate", type=float, default=100.0, help="paced updates per second")
    parser.add_argument("--no-controllers", action="store_true")
    parser.add_argument("--profile-server", type=Path, metavar="PATH")
    parser.add_argument(
        "--server-module", default="kubesim", help="module run as the server (a patched kubesim)"
    )
    args = parser.parse_args()
    try:
        asyncio.run(run(args))
    except (RuntimeError, aiohttp.ClientError, TimeoutError) as exc:
        progress(f"failed: {exc}")
        print(f"bench failed: {exc}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
