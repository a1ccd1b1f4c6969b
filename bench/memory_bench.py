"""Memory benchmark: the operator's RSS with N namespaces each holding one Elasticsearch.

Run: ``.venv/bin/python bench/memory_bench.py [--count N]`` (default 10000; ``--count 1000`` for a
quick run). kubesim runs as a subprocess, and so does the writer that creates the namespaces and
the Elasticsearch resources (so its garbage is not this process's RSS); the Temporal dev server is
a subprocess too. The operator is ``stackflow.cli.operator.run_operator`` in this process with the
default settings (leader election on, the sticky cache sized automatically) in the static
all-namespace mode (``namespaces: []``), with the full controller table
(``stackflow.controllers.CONTROLLERS``) and every real implementation except the Elasticsearch
reconcile, which is a no-op that records when it ran (``bench/_stack.py``). The license controller
(the other row on Elasticsearch) runs its real reconcile, counted too.

Figures, from ``/proc/self/status`` (VmRSS; VmHWM is the peak):
1. baseline: after the imports, kubesim and Temporal up, before the operator starts;
2. informers synced: the operator ready (its caches listed, the worker up, the triggers of the
   initial list queued, nothing reconciled);
3. all reconciled: every Elasticsearch and license reconcile done and the worker idle, its sticky
   cache full (``temporal-max-cached-workflows``, sized automatically unless ``--max-cached``);
4. the informer caches alone: the operator's Namespace informer and ``InformerSet`` with the
   watchers' handlers, no worker and no leader, in a process of their own (``--caches``).

The last line is parseable: ``rss after N/N = 287 MB (target < 300 MB)``. Progress goes to stderr.
Two runs with different ``--max-cached`` sizes (say 250 and 1000; not 0, which makes every workflow
task replay and cancels the local activities in flight) give the cost of one cached workflow: the
difference of the final RSS over the difference of the sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from _stack import (
    BenchControllers,
    CountWaiter,
    InProcessOperator,
    KubesimProcess,
    ReconcileRecorder,
    bounded,
    quiet_logs,
    recording_family,
    start_temporal,
)
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from activities.binding import ControllerActivities, Primary
from activities.cluster_license_secret import LicenseActivities
from activities.context import ControllerContext
from activities.registry import FAMILIES
from stackflow.config import OperatorConfig
from stackflow.controllers import CONTROLLERS, Controller
from stackflow.controllers.elasticsearch import (
    ELASTICSEARCH,
    ELASTICSEARCH_CONTROLLER,
    LICENSE_CONTROLLER,
)
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.metrics import Registry
from stackflow.models.engine import ReconcileInput, ReconcileResult
from stackflow.models.kinds import NAMESPACES
from stackflow.scope import NamespaceMatcher
from watchers.informers import InformerSet
from watchers.signals import Signaller
from watchers.wiring import Watchers

DEFAULT_COUNT = 10_000
TARGET_MB = 300
OPERATOR_NAMESPACE = "elastic-system"
TASK_QUEUE = "stackflow-memory-bench"
WRITE_CONCURRENCY = 16
PROGRESS_SECONDS = 5.0
#: After the last reconcile: let the workflows finish their tasks (details, search attributes).
SETTLE_SECONDS = 5.0

_STARTED = time.monotonic()


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    elapsed = time.monotonic() - _STARTED
    print(f"[memory_bench {elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)


def memory_status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    figures: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                figures[key] = int(value.split()[0]) * 1024
    return figures


def rss_mb() -> float:
    """The resident set size now, in MB."""
    return memory_status()["VmRSS"] / 2**20


def namespace_name(index: int) -> str:
    """The name of the ``index``-th bench namespace."""
    return f"mem-{index:05d}"


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch named ``es``."""
    return {
        "apiVersion": ELASTICSEARCH.api_version,
        "kind": ELASTICSEARCH.kind,
        "metadata": {"name": "es", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


@contextlib.asynccontextmanager
async def temporal_server(attempts: int = 3) -> AsyncIterator[WorkflowEnvironment]:
    """``start_temporal``, tried again when the dev server is slow to come up (a busy machine)."""
    for attempt in range(1, attempts + 1):
        server = start_temporal()
        try:
            env = await server.__aenter__()
        except RuntimeError as exc:
            if attempt == attempts:
                raise
            progress(f"the Temporal dev server did not start ({exc}); again")
            continue
        try:
            yield env
        finally:
            await server.__aexit__(None, None, None)
        return


# --- the writer (a subprocess) -------------------------------------------------------------------


async def populate(kubeconfig: Path, count: int) -> None:
    """Create the operator namespace and ``count`` namespaces, each with one Elasticsearch."""
    api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=120)
    kube = ResourceClient(api_client)
    created = 0
    last = time.monotonic()
    try:
        await kube.create(NAMESPACES, {"metadata": {"name": OPERATOR_NAMESPACE}})

        async def create(index: int) -> None:
            nonlocal created, last
            namespace = namespace_name(index)
            await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
            await kube.create(ELASTICSEARCH, elasticsearch(namespace), namespace=namespace)
            created += 1
            if time.monotonic() - last >= PROGRESS_SECONDS:
                last = time.monotonic()
                progress(f"writer: {created}/{count} namespaces with their Elasticsearch")

        await bounded(range(count), create, limit=WRITE_CONCURRENCY)
        progress(f"writer: {created}/{count} namespaces with their Elasticsearch")
    finally:
        await close_api_client(api_client)


async def run_writer(kubeconfig: Path, count: int) -> None:
    """This script with ``--populate`` as a subprocess; raises if it fails."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--populate",
        str(kubeconfig),
        "--count",
        str(count),
    )
    if await process.wait() != 0:
        raise RuntimeError(f"the writer exited with status {process.returncode}")


# --- the informer caches alone (a subprocess) ----------------------------------------------------


async def measure_caches(kubeconfig: Path) -> None:
    """The operator's informers and handlers without worker or leader: RSS growth as JSON."""
    quiet_logs()
    api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=120)
    resources = ResourceClient(api_client)
    gc.collect()
    before = memory_status()["VmRSS"]
    namespaces = NamespaceInformer(resources)
    config = OperatorConfig.model_validate({"operator-namespace": OPERATOR_NAMESPACE})
    matcher = NamespaceMatcher(config.scope(), source=namespaces)
    namespaces.start()
    await namespaces.wait_synced()
    gc.collect()
    after_namespaces = memory_status()["VmRSS"]
    informers = InformerSet(resources, matcher)
    nobody = cast(Client, None)  # never leader: nothing is sent
    Watchers(
        controllers=CONTROLLERS,
        informers=informers,
        namespaces=namespaces,
        signaller=Signaller(
            nobody, task_queue=TASK_QUEUE, is_leader=lambda: False, metrics=Registry()
        ),
        temporal=nobody,
        task_queue=TASK_QUEUE,
        metrics=Registry(),
    )
    informers.start()
    await informers.wait_synced()
    gc.collect()
    after = memory_status()["VmRSS"]
    print(
        json.dumps(
            {"namespaces": after_namespaces - before, "informer_set": after - after_namespaces}
        ),
        flush=True,
    )
    await informers.stop()
    await namespaces.stop()
    await close_api_client(api_client)


async def run_caches(kubeconfig: Path) -> dict[str, int]:
    """This script with ``--caches`` as a subprocess; its figures."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--caches", str(kubeconfig), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the cache measurement exited with status {process.returncode}")
    figures: dict[str, int] = json.loads(out.decode().strip().splitlines()[-1])
    return figures


# --- the operator --------------------------------------------------------------------------------


class LicenseCounter:
    """The real license reconcile, counted."""

    def __init__(self) -> None:
        """Nothing counted yet."""
        self.done = CountWaiter()

    def family(self, context: ControllerContext, controller: Controller) -> ControllerActivities:
        """The license family, its reconciles counted."""
        done = self.done

        class CountedLicenseActivities(LicenseActivities):
            async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
                """Run the real reconcile, then count it."""
                result = await super().reconcile(request, primary)
                done.record(f"{request.ref.namespace}/{request.ref.name}")
                return result

        return CountedLicenseActivities(context, controller)


def full_controllers(recorder: ReconcileRecorder, licenses: LicenseCounter) -> BenchControllers:
    """Every row and real implementation, but the Elasticsearch reconcile records and does
    nothing and the license reconcile is counted."""
    families = dict(FAMILIES)
    families[ELASTICSEARCH_CONTROLLER.name] = recording_family(recorder)
    families[LICENSE_CONTROLLER.name] = licenses.family
    return BenchControllers(table=CONTROLLERS, families=families)


@dataclasses.dataclass
class Sample:
    """One measured moment."""

    name: str
    rss: int
    hwm: int

    def line(self) -> str:
        """``name: RSS MB (peak MB)``."""
        return f"{self.name}: {self.rss / 2**20:.0f} MB (peak {self.hwm / 2**20:.0f} MB)"


def sample(name: str) -> Sample:
    """Collect garbage, then read RSS and its peak."""
    gc.collect()
    status = memory_status()
    figure = Sample(name, status["VmRSS"], status["VmHWM"])
    progress(figure.line())
    return figure


async def wait_reconciled(
    recorder: ReconcileRecorder, licenses: LicenseCounter, count: int, *, within: float
) -> None:
    """Until every Elasticsearch and license reconcile ran once, with progress lines."""
    deadline = time.monotonic() + within
    while len(recorder.ends) < count or len(licenses.done.by_key) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"not reconciled within {within:.0f} s: elasticsearch"
                f" {len(recorder.ends)}/{count}, license {len(licenses.done.by_key)}/{count}"
            )
        progress(
            f"reconciled: elasticsearch {len(recorder.ends)}/{count},"
            f" license {len(licenses.done.by_key)}/{count}; rss {rss_mb():.0f} MB"
        )
        await asyncio.sleep(PROGRESS_SECONDS)
    progress(f"reconciled: elasticsearch {count}/{count}, license {count}/{count}")


@dataclasses.dataclass
class Result:
    """The measured moments, the informer caches alone and what was reconciled."""

    samples: list[Sample]
    caches: dict[str, int]
    reconciled: int
    count: int


async def bench(args: argparse.Namespace) -> Result:
    """kubesim, the writer, Temporal and the operator, measured at each phase."""
    quiet_logs()
    count: int = args.count
    samples = [sample("after imports")]
    async with temporal_server() as env:
        with tempfile.TemporaryDirectory(prefix="memory_bench-") as workdir:
            kubesim = KubesimProcess(kubeconfig=Path(workdir) / "kubeconfig")
            await kubesim.start()
            try:
                progress(f"kubesim up; writing {count} namespaces and Elasticsearch resources")
                await run_writer(kubesim.kubeconfig, count)
                progress("measuring the informer caches alone (a subprocess)")
                caches = await run_caches(kubesim.kubeconfig)
                recorder = ReconcileRecorder()
                licenses = LicenseCounter()
                settings: dict[str, Any] = {
                    "operator-namespace": OPERATOR_NAMESPACE,
                    "namespaces": [],
                    "temporal-address": env.client.service_client.config.target_host,
                    "temporal-task-queue": TASK_QUEUE,
                    "temporal-workflow-sandbox": args.sandbox,
                }
                if args.max_cached is not None:
                    settings["temporal-max-cached-workflows"] = args.max_cached
                operator = InProcessOperator(
                    settings=settings,
                    kubeconfig=kubesim.kubeconfig,
                    controllers=full_controllers(recorder, licenses),
                )
                samples.append(sample("baseline (before the operator starts)"))
                synced: list[Sample] = []
                progress("starting the operator (static all-namespace mode, full table)")
                began = time.monotonic()
                await _start_measuring_ready(operator, synced)
                progress(f"operator ready in {time.monotonic() - began:.1f} s")
                samples.extend(synced)
                try:
                    await wait_reconciled(recorder, licenses, count, within=args.within)
                    progress(f"all reconciled in {time.monotonic() - began:.1f} s; settling")
                    await asyncio.sleep(SETTLE_SECONDS)
                    samples.append(sample("all reconciled (sticky cache full)"))
                finally:
                    status = await operator.stop()
                    if status != 0:
                        progress(f"operator exited with status {status}")
                reconciled = min(len(recorder.ends), len(licenses.done.by_key))
            finally:
                await kubesim.stop()
    return Result(samples=samples, caches=caches, reconciled=reconciled, count=count)


async def _start_measuring_ready(operator: InProcessOperator, synced: list[Sample]) -> None:
    """``operator.start()``, sampling RSS once it is ready (informers synced, leader resync not yet
    run: nothing reconciled)."""
    await operator.start(
        on_ready=lambda: synced.append(
            sample("informers synced (operator ready, nothing reconciled)")
        ),
        within=1800,
    )


def main() -> int:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--count",
        type=int,
        default=DEFAULT_COUNT,
        help=f"namespaces, each with one Elasticsearch (default {DEFAULT_COUNT})",
    )
    parser.add_argument(
        "--max-cached",
        type=int,
        default=None,
        help="temporal-max-cached-workflows (default: the operator's own sizing)",
    )
    parser.add_argument(
        "--sandbox", action="store_true", help="run the workflows in the Temporal sandbox"
    )
    parser.add_argument(
        "--within", type=float, default=3600.0, help="seconds to wait for the reconciles"
    )
    parser.add_argument("--populate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--caches", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count < 1:
        parser.error("--count must be at least 1")
    if args.populate is not None:
        asyncio.run(populate(args.populate, args.count))
        return 0
    if args.caches is not None:
        asyncio.run(measure_caches(args.caches))
        return 0
    result = asyncio.run(bench(args))
    print(
        f"operator = stackflow.cli.operator.run_operator in-process, static all-namespace mode,"
        f" full controller table, no-op Elasticsearch reconcile; {result.count} namespaces with"
        f" one Elasticsearch each; kubesim, the writer and Temporal in other processes"
        f" ({os.cpu_count()} CPUs)"
    )
    for figure in result.samples:
        print(figure.line())
    by_name = {figure.name.split(" (")[0]: figure for figure in result.samples}
    baseline = by_name["baseline"].rss
    synced = by_name["informers synced"].rss
    final = result.samples[-1]
    namespaces, informer_set = result.caches["namespaces"], result.caches["informer_set"]
    print(
        f"informer caches alone: {(namespaces + informer_set) / 2**20:.0f} MB"
        f" (Namespaces {namespaces / 2**20:.0f} MB, InformerSet {informer_set / 2**20:.0f} MB)"
    )
    print(f"operator start-up (informers synced - baseline): {(synced - baseline) / 2**20:.0f} MB")
    print(f"workflows (all reconciled - informers synced): {(final.rss - synced) / 2**20:.0f} MB")
    print(f"peak (VmHWM): {final.hwm / 2**20:.0f} MB")
    print(
        f"rss after {result.reconciled}/{result.count} = {final.rss / 2**20:.0f} MB"
        f" (target < {TARGET_MB} MB)"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
