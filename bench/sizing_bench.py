"""Sizing benchmark: the RSS of ``stackflow run`` with many namespaces, some in scope, each of
those holding one Elasticsearch reconciled by the real controllers, against a memory limit.

Run: ``.venv/bin/python bench/sizing_bench.py [--namespaces 1000] [--in-scope 500]
[--memory-limit 512Mi]`` (15 to 25 minutes at the defaults on a 2-core machine). The stack is the
end-to-end one (``tests/e2e/harness.py``): kubesim (in this process), a Temporal dev server, and
the operator as the subprocess ``stackflow run`` in namespace-selector mode, as the chart runs it.
The namespaces and Elasticsearch resources exist before the operator starts (a restart or an
upgrade at that size: every informer lists and every in-scope cluster is reconciled at once).

The operator's sticky cache is sized as it sizes itself in a Pod whose cgroup limit is
``--memory-limit`` (``stackflow.cli.sizing``; the machine the bench runs on usually has no such
limit, so the size is passed to the operator as ``temporal-max-cached-workflows``). The figures
are the operator process's own, from ``/proc/<pid>/status``: VmRSS while the reconciles progress,
after they are all done and the operator settled, and VmHWM (its peak). The last line is
parseable: ``settled 512 MiB, peak 540 MiB, limit 512 MiB: exceeds``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e harness lives in tests/

from stackflow.cli.sizing import CacheSizing, max_cached_workflows
from stackflow.models.kinds import NAMESPACES
from tests.clusters import kube_cluster
from tests.e2e.harness import (
    ES,
    SCOPE_LABEL,
    Operator,
    accept_trial,
    manifest,
    temporal_server,
    write_operator_config,
)

MiB = 1024 * 1024
#: The chart's default ``resources.limits.memory`` (deploy/stackflow/values.yaml).
CHART_LIMIT = 512 * MiB
WRITE_CONCURRENCY = 16
PROGRESS_SECONDS = 5.0
#: How long the operator runs on after the last first reconcile before the settled figure: the
#: reconciles that follow the children's creation go on for minutes, and so does the growth.
DEFAULT_SETTLE_SECONDS = 480.0
DEADLINE_SECONDS = 2400.0
#: Settle without the last few first reconciles once none has come for this long.
STALL_SECONDS = 180.0
RECONCILED = (
    "WorkflowType='ResourceWorkflow' AND StackflowController='elasticsearch'"
    " AND StackflowPhase!='Reconciling'"
)

_STARTED = time.monotonic()


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    print(
        f"[sizing_bench {time.monotonic() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True
    )


def parse_quantity(text: str) -> int:
    """A Kubernetes memory quantity in bytes (``512Mi``, ``1Gi``, ``536870912``)."""
    units = {"Ki": 1024, "Mi": MiB, "Gi": 1024 * MiB}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(float(text.removesuffix(suffix)) * factor)
    return int(text)


@dataclass(frozen=True)
class Memory:
    """A process's VmRSS and VmHWM, in bytes."""

    rss: int
    peak: int


def memory_of(pid: int) -> Memory:
    """VmRSS and VmHWM of the process ``pid``."""
    figures: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                figures[key] = int(value.split()[0]) * 1024
    return Memory(rss=figures["VmRSS"], peak=figures["VmHWM"])


def namespace_name(index: int) -> str:
    """The ``index``-th bench namespace."""
    return f"size-{index:05d}"


async def reconciled(client: Client) -> int:
    """Elasticsearch workflows past their first reconcile (one visibility count)."""
    return (await client.count_workflows(RECONCILED)).count


@dataclass
class Outcome:
    """What one run measured."""

    cached: int
    samples: list[tuple[int, Memory]]
    settled: Memory
    seconds_to_reconcile: float
    #: How many clusters were past their first reconcile when the settling began.
    reconciled: int
    #: Workflows running once settled (the sticky cache holds at most ``cached`` of them).
    running: int
    #: The memory each minute after the first reconciles (the later reconciles go on).
    minutes: list[Memory]


async def bench(namespaces: int, in_scope: int, limit: int, settle: float) -> Outcome:
    """kubesim, Temporal, the objects, then the operator, measured until it settled."""
    cached = max_cached_workflows(
        memory_limit=limit, sizing=CacheSizing.for_runner(sandboxed=False)
    )
    with tempfile.TemporaryDirectory(prefix="sizing_bench-") as workdir:
        directory = Path(workdir)
        async with kube_cluster(directory) as cluster, temporal_server() as temporal:
            kube = cluster.kube
            await accept_trial(kube, operator_namespace="elastic-system")
            limiter = asyncio.Semaphore(WRITE_CONCURRENCY)
            spec = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}

            async def create(index: int) -> None:
                name = namespace_name(index)
                scoped = index < in_scope
                labels = {SCOPE_LABEL: "true"} if scoped else {}
                async with limiter:
                    await kube.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})
                    if scoped:
                        await kube.create(
                            ES, manifest("Elasticsearch", "es", name, spec), namespace=name
                        )

            progress(f"writing {namespaces} namespaces, {in_scope} in scope with an Elasticsearch")
            await asyncio.gather(*(create(index) for index in range(namespaces)))
            config = write_operator_config(
                directory / "operator.yaml",
                temporal=temporal,
                settings={"temporal-max-cached-workflows": cached},
            )
            operator = Operator(
                config=config, kubeconfig=cluster.operator_kubeconfig, log=directory / "op.log"
            )
            progress(f"starting the operator (sticky cache {cached}, as under {limit // MiB} MiB)")
            await operator.start()
            try:
                assert operator.process is not None
                pid = operator.process.pid
                began = time.monotonic()
                samples: list[tuple[int, Memory]] = []
                done, last_rise = 0, time.monotonic()
                while done < in_scope:
                    if time.monotonic() - last_rise > STALL_SECONDS:
                        # A few workflows' tasks keep timing out on a starved worker: measure
                        # the settling anyway, and say how many were reconciled.
                        progress(f"no new first reconcile in {STALL_SECONDS:.0f} s; settling")
                        break
                    if time.monotonic() - began > DEADLINE_SECONDS:
                        raise TimeoutError(
                            f"{in_scope - done} of {in_scope} not reconciled in time\n"
                            + operator.tail()
                        )
                    if operator.process.returncode is not None:
                        raise RuntimeError(f"the operator exited\n{operator.tail()}")
                    now_done = await reconciled(temporal.client)
                    if now_done > done:
                        done, last_rise = now_done, time.monotonic()
                    memory = memory_of(pid)
                    samples.append((done, memory))
                    progress(
                        f"reconciled {done}/{in_scope}; rss {memory.rss / MiB:.0f} MiB"
                        f" (peak {memory.peak / MiB:.0f})"
                    )
                    await asyncio.sleep(PROGRESS_SECONDS)
                took = time.monotonic() - began
                progress(f"{done}/{in_scope} reconciled in {took:.0f} s; settling {settle:.0f} s")
                settle_began = time.monotonic()
                minutes: list[Memory] = []
                while time.monotonic() < settle_began + settle:
                    await asyncio.sleep(PROGRESS_SECONDS)
                    memory = memory_of(pid)
                    progress(f"settling: rss {memory.rss / MiB:.0f} MiB")
                    if time.monotonic() - settle_began >= 60 * (len(minutes) + 1):
                        minutes.append(memory)
                settled = memory_of(pid)
                running = (await temporal.client.count_workflows("ExecutionStatus='Running'")).count
            finally:
                status = await operator.stop()
                if status != 0:
                    progress(f"operator exited with status {status}")
    return Outcome(
        cached=cached,
        samples=samples,
        settled=settled,
        seconds_to_reconcile=took,
        reconciled=done,
        running=running,
        minutes=minutes,
    )


def main() -> None:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--in-scope", type=int, default=500)
    parser.add_argument(
        "--memory-limit",
        default="512Mi",
        help="the Pod's memory limit the sticky cache is sized for (default: the chart's, 512Mi)",
    )
    parser.add_argument("--settle", type=float, default=DEFAULT_SETTLE_SECONDS)
    args = parser.parse_args()
    if not 1 <= args.in_scope <= args.namespaces:
        parser.error("--in-scope must be between 1 and --namespaces")
    limit = parse_quantity(args.memory_limit)
    outcome = asyncio.run(bench(args.namespaces, args.in_scope, limit, args.settle))
    print(
        f"stackflow run (namespace-selector mode, real controllers) on kubesim with"
        f" {args.namespaces} namespaces, {args.in_scope} in scope with one Elasticsearch each;"
        f" sticky cache {outcome.cached} (sized for {limit // MiB} MiB); {os.cpu_count()} CPUs"
    )
    for fraction in (0.25, 0.5, 0.75):
        wanted = int(args.in_scope * fraction)
        at = next((memory for done, memory in outcome.samples if done >= wanted), None)
        if at is not None:
            print(f"rss at {wanted}/{args.in_scope} reconciled: {at.rss / MiB:.0f} MiB")
    print(
        f"{outcome.reconciled}/{args.in_scope} reconciled in"
        f" {outcome.seconds_to_reconcile:.0f} s;"
        f" {outcome.running} workflows running (cache {outcome.cached})"
    )
    trend = ", ".join(f"{memory.rss / MiB:.0f}" for memory in outcome.minutes)
    print(f"rss each minute after that: {trend} MiB")
    settled, peak = outcome.settled.rss / MiB, outcome.settled.peak / MiB
    verdict = "fits" if outcome.settled.peak < limit else "exceeds"
    print(f"settled {settled:.0f} MiB, peak {peak:.0f} MiB, limit {limit // MiB} MiB: {verdict}")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
