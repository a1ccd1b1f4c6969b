"""Engine benchmark: the operator's Temporal overhead against a bare Temporal entity loop.

Run: ``.venv/bin/python bench/engine_bench.py [--resources N]``. Bounded (a few minutes on a
2-core machine with the defaults), exits 0, prints each figure with its target and PASS/MISS;
progress goes to stderr. One Temporal dev server and one kubesim (a subprocess) serve the run.

What runs as "the operator": ``stackflow.cli.operator.run_operator`` in this process — the real worker
settings, workflows, generic activities (scope check against kubesim, license gate verifying the
operator license Secret), informers, watchers, flips and license watch — with the Elasticsearch
controller's reconcile replaced by a no-op that records when it ran (``bench/_stack.py``). The
bare loop is one workflow per entity running one no-op activity per signal, on a worker with the
same (default) settings in the same process. So the ratio is the engine's per-reconcile overhead
(scope check + license check + search attribute/details upserts) and nothing of the builders.

Figures (DESIGN.md "Performance targets"):
1. warm reconciles per second, operator vs bare loop, signals sent straight to running
   workflows: ratio, target ≥ 80%;
2. watch event → reconcile start (an annotation patch until the reconcile activity starts):
   p50 < 250 ms (p99 reported);
3. license restored → first successful reconcile of a waiting resource: p50 < 2 s;
4. a namespace holding N Elasticsearch resources flips into scope → all reconciled, against the
   bare loop signal-with-starting N new entities: within 1.5x.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from _bare_loop import BareEntity, noop_activity
from _operator_bench import (
    FLIP_NAMESPACE,
    OPERATOR_NAMESPACE,
    SCOPE_LABEL,
    SIGNAL_CONCURRENCY,
    WARM_NAMESPACE,
    OperatorBench,
    enterprise_license,
    license_secret,
)
from _stack import (
    CountWaiter,
    InProcessOperator,
    KubesimProcess,
    ReconcileRecorder,
    bench_controllers,
    bounded,
    progress,
    quiet_logs,
    start_temporal,
)
from temporalio.client import Client
from temporalio.worker import Worker

from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES, SECRETS

OPERATOR_QUEUE = "stackflow-bench"
BARE_QUEUE = "bare-bench"
DEFAULT_RESOURCES = 1000
WARM_ENTITIES = 200
WARM_ROUNDS = 2
LATENCY_SAMPLES = 40
LICENSE_ROUNDS = 3
LICENSE_WAITING = 10


@dataclass(frozen=True)
class Figure:
    """One printed result: a value, its target and whether it meets it (None: no target)."""

    name: str
    value: str
    target: str = ""
    met: bool | None = None

    def line(self) -> str:
        """``name: value  (target …) PASS|MISS``."""
        verdict = "" if self.met is None else ("PASS" if self.met else "MISS")
        target = f"  (target {self.target})" if self.target else ""
        return f"{self.name}: {self.value}{target} {verdict}".rstrip()


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``samples``."""
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


# --- the bare loop ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BareResult:
    """Bare-loop figures: warm reconciles per second and the cold (signal-with-start) time for N."""

    warm_per_second: float
    cold_seconds: float


async def bench_bare(
    client: Client, *, entities: int, rounds: int, cold_entities: int
) -> BareResult:
    """Start ``entities`` entities, signal them ``rounds`` times, then start ``cold_entities``."""
    done = CountWaiter()
    worker = Worker(
        client,
        task_queue=BARE_QUEUE,
        workflows=[BareEntity],
        activities=[noop_activity(done.record)],
    )
    async with worker:

        async def start(key: str) -> None:
            await client.start_workflow(
                BareEntity.run,
                key,
                id=key,
                task_queue=BARE_QUEUE,
                start_signal="trigger",
                start_signal_args=["start"],
            )

        warm_keys = [f"bare/warm-{index}" for index in range(entities)]
        await bounded(warm_keys, start, limit=SIGNAL_CONCURRENCY)
        await done.wait_total(entities, within=600)
        progress(f"bare loop: {entities} entities running; {rounds} warm rounds")
        began = time.monotonic()

        async def poke(key: str) -> None:
            await client.get_workflow_handle(key).signal(BareEntity.trigger, "poke")

        for round_number in range(rounds):
            await bounded(warm_keys, poke, limit=SIGNAL_CONCURRENCY)
            await done.wait_total(entities * (round_number + 2), within=600)
        warm = entities * rounds / (time.monotonic() - began)
        progress(f"bare loop: {warm:.1f} warm reconciles/s; {cold_entities} cold entities")
        before = done.total
        began = time.monotonic()
        cold_keys = [f"bare/cold-{index}" for index in range(cold_entities)]
        await bounded(cold_keys, start, limit=SIGNAL_CONCURRENCY)
        await done.wait_total(before + cold_entities, within=1800)
        cold = time.monotonic() - began
        progress(f"bare loop: {cold_entities} cold entities in {cold:.1f} s")

        # Idle entities cost the server nothing, but stopping them keeps the next phase clean.
        async def terminate(key: str) -> None:
            await client.get_workflow_handle(key).terminate("bench over")

        await bounded([*warm_keys, *cold_keys], terminate, limit=SIGNAL_CONCURRENCY)
    return BareResult(warm_per_second=warm, cold_seconds=cold)


# --- the run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OperatorResult:
    """Operator figures."""

    warm_per_second: float
    latencies: list[float]
    license_restores: list[float]
    flip_seconds: float
    flip_latencies: list[float]


async def bench_operator(
    temporal_address: str, client: Client, *, workdir: Path, resources: int, local_step: bool
) -> OperatorResult:
    """kubesim + the in-process operator (dynamic scope, enterprise license) through each phase."""
    kubesim = KubesimProcess(kubeconfig=workdir / "kubeconfig")
    await kubesim.start()
    api_client = await make_api_client(kubeconfig=kubesim.kubeconfig, context=None, timeout=60)
    kube = ResourceClient(api_client)
    public_key, document = enterprise_license(workdir)
    recorder = ReconcileRecorder()
    operator = InProcessOperator(
        settings={
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
            "license-public-key": str(public_key),
            "temporal-address": temporal_address,
            "temporal-task-queue": OPERATOR_QUEUE,
            "enable-leader-election": False,
        },
        kubeconfig=kubesim.kubeconfig,
        controllers=bench_controllers(recorder, local_step=local_step),
    )
    try:
        for name, labels in (
            (OPERATOR_NAMESPACE, {}),
            (WARM_NAMESPACE, {SCOPE_LABEL: "true"}),
            (FLIP_NAMESPACE, {}),
        ):
            await kube.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})
        await kube.create(SECRETS, license_secret(document), namespace=OPERATOR_NAMESPACE)
        progress("operator: kubesim up; starting the operator")
        await operator.start()
        progress("operator: ready; creating the warm resources")
        bench = OperatorBench(kube=kube, temporal=client, recorder=recorder, document=document)
        names = [f"es-{index}" for index in range(WARM_ENTITIES)]
        began = time.monotonic()
        await bench.create_many(WARM_NAMESPACE, names)
        progress(f"operator: {len(names)} resources created")
        await recorder.wait_each(
            [f"{WARM_NAMESPACE}/{name}" for name in names], after=began, within=600
        )
        progress(f"operator: {len(names)} resources reconciled; {WARM_ROUNDS} warm rounds")
        warm = await bench.warm_rounds(names, rounds=WARM_ROUNDS)
        progress(f"operator: {warm:.1f} warm reconciles/s; {LATENCY_SAMPLES} watch latencies")
        latencies = await bench.event_latencies(names, samples=LATENCY_SAMPLES)
        progress(f"operator: license removed and restored {LICENSE_ROUNDS} times")
        restores = await bench.license_restores(
            names, rounds=LICENSE_ROUNDS, waiting=LICENSE_WAITING
        )
        flip, flip_latencies = await bench.flip(resources)
        progress(f"operator: flip of {resources} resources reconciled in {flip:.1f} s")
        return OperatorResult(warm, latencies, restores, flip, flip_latencies)
    finally:
        status = await operator.stop()
        if status != 0:
            progress(f"operator exited with status {status}")
        await close_api_client(api_client)
        await kubesim.stop()


def figures(bare: BareResult, operator: OperatorResult, *, resources: int) -> list[Figure]:
    """The printed results, with their targets."""
    ratio = operator.warm_per_second / bare.warm_per_second
    p50, p99 = percentile(operator.latencies, 0.5), percentile(operator.latencies, 0.99)
    restore = statistics.median(operator.license_restores)
    flip_ratio = operator.flip_seconds / bare.cold_seconds
    return [
        Figure(
            f"bare entity loop, warm reconciles/s ({WARM_ENTITIES} entities x {WARM_ROUNDS})",
            f"{bare.warm_per_second:.1f}",
        ),
        Figure(
            "operator, warm reconciles/s (reconcile step: scope check, license gate, no-op reconcile)",
            f"{operator.warm_per_second:.1f}",
        ),
        Figure("operator / bare loop reconciles/s", f"{ratio:.2f}", ">= 0.9", ratio >= 0.9),
        Figure(
            f"watch event -> reconcile start p50 ({len(operator.latencies)} samples)",
            f"{p50 * 1000:.0f} ms",
            "< 250 ms",
            p50 < 0.25,
        ),
        Figure("watch event -> reconcile start p99", f"{p99 * 1000:.0f} ms"),
        Figure(
            "license restored -> first successful reconcile p50"
            f" ({len(operator.license_restores)} waiting resources)",
            f"{restore:.2f} s",
            "< 2 s",
            restore < 2.0,
        ),
        Figure(
            f"bare loop, {resources} new entities (signal-with-start)", f"{bare.cold_seconds:.1f} s"
        ),
        Figure(
            f"namespace of {resources} resources flips into scope -> all reconciled",
            f"{operator.flip_seconds:.1f} s = {flip_ratio:.2f}x the bare loop",
            "<= 1.2x",
            flip_ratio <= 1.2,
        ),
        Figure(
            "namespace flip -> a resource's reconcile start p50",
            f"{statistics.median(operator.flip_latencies):.2f} s",
        ),
    ]


async def run(resources: int, *, local_step: bool) -> tuple[list[Figure], float]:
    """Every phase against one Temporal dev server."""
    quiet_logs()
    async with start_temporal() as env:
        client = env.client
        progress("Temporal dev server up; bare entity loop first")
        bare = await bench_bare(
            client, entities=WARM_ENTITIES, rounds=WARM_ROUNDS, cold_entities=resources
        )
        with tempfile.TemporaryDirectory(prefix="engine_bench-") as workdir:
            operator = await bench_operator(
                client.service_client.config.target_host,
                client,
                workdir=Path(workdir),
                resources=resources,
                local_step=local_step,
            )
    return figures(bare, operator, resources=resources), operator.flip_seconds / bare.cold_seconds


def main() -> int:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--resources",
        type=int,
        default=DEFAULT_RESOURCES,
        help=f"Elasticsearch resources in the flipping namespace (default {DEFAULT_RESOURCES})",
    )
    parser.add_argument(
        "--step",
        choices=("local", "activity"),
        default="activity",
        help="run the reconcile step as a local activity (every controller but Elasticsearch)"
        " or as an activity (the Elasticsearch row's own choice, the default)",
    )
    args = parser.parse_args()
    if args.resources < 1:
        parser.error("--resources must be at least 1")
    began = time.monotonic()
    results, flip_ratio = asyncio.run(run(args.resources, local_step=args.step == "local"))
    print(
        "operator = stackflow.cli.operator.run_operator in-process (real worker settings, workflows,"
        " scope/license activities, watchers) with a no-op Elasticsearch reconcile;"
        f" reconcile step as {'a local activity' if args.step == 'local' else 'an activity'};"
        " dynamic scope with an enterprise license; kubesim and the Temporal dev server on"
        f" this machine ({os.cpu_count()} CPUs)"
    )
    for figure in results:
        print(figure.line())
    print(f"ratio flip operator/bare = {flip_ratio:.2f}")
    progress(f"done in {time.monotonic() - began:.0f} s")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
