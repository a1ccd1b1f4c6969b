"""Scale-out benchmark: the operator's throughput with one, two and three replicas on one Temporal.

Run: ``.venv/bin/python bench/scale_bench.py [--resources N] [--replicas 1 2 3]``. For each replica
count, a fresh end-to-end stack (``tests/e2e/harness.py``: kubesim + a Temporal dev server + that
many ``stackflow run`` subprocesses with leader election, so the watchers run on the leader only and
every replica runs a worker), then N Elasticsearch resources created at once (the real controllers:
children, certificates, status); the time until every resource's workflow has reconciled it once.
Prints resources reconciled per second for each count, how many replicas did the work, and a last
line a script can parse: ``ratio 3 replicas/1 = 1.42``. On one 2-core machine every replica shares
the same two cores with kubesim and the Temporal server, so the ratio shows the engine's overhead of
spreading out rather than the gain of more machines; docs/engine.md says what limits it further.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e harness lives in tests/

from tests.clusters import kube_cluster
from tests.e2e.harness import (
    ES,
    Operator,
    accept_trial,
    create_namespace,
    manifest,
    temporal_server,
    write_operator_config,
)

NAMESPACE = "bench-scale"
DEFAULT_RESOURCES = 100
WRITE_CONCURRENCY = 16
DEADLINE = 900.0


def progress(message: str) -> None:
    """Progress for humans, on stderr."""
    print(f"[scale_bench] {message}", file=sys.stderr, flush=True)


RECONCILED = (
    f"WorkflowType='ResourceWorkflow' AND StackflowNamespace='{NAMESPACE}'"
    " AND StackflowPhase!='Reconciling'"
)


async def reconciled(client: Client) -> int:
    """Workflows past their first reconcile (visibility: one query, not one per workflow — a query
    waits for the workflow's open task, a visibility count does not)."""
    return (await client.count_workflows(RECONCILED)).count


async def workers_used(client: Client, workflow_ids: list[str]) -> int:
    """How many worker identities completed workflow tasks of these workflows."""
    identities: set[str] = set()
    for workflow_id in workflow_ids:
        async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                identities.add(event.workflow_task_completed_event_attributes.identity)
    return len(identities)


async def one_run(replicas: int, resources: int) -> tuple[float, int]:
    """Resources reconciled per second with ``replicas`` operators, and how many did the work."""
    with tempfile.TemporaryDirectory(prefix="scale_bench-") as workdir:
        directory = Path(workdir)
        async with kube_cluster(directory) as cluster, temporal_server() as temporal:
            kube, kubeconfig = cluster.kube, cluster.operator_kubeconfig
            await create_namespace(kube, "elastic-system", in_scope=False)
            await accept_trial(kube, operator_namespace="elastic-system")
            await create_namespace(kube, NAMESPACE, in_scope=True)
            config = write_operator_config(directory / "operator.yaml", temporal=temporal)
            operators = [
                Operator(config=config, kubeconfig=kubeconfig, log=directory / f"op-{index}.log")
                for index in range(replicas)
            ]
            for operator in operators:
                await operator.start()
            try:
                names = [f"es-{index}" for index in range(resources)]
                spec = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}
                limit = asyncio.Semaphore(WRITE_CONCURRENCY)

                async def create(name: str) -> None:
                    async with limit:
                        body = manifest("Elasticsearch", name, NAMESPACE, spec)
                        await kube.create(ES, body, namespace=NAMESPACE)

                began = time.monotonic()
                await asyncio.gather(*(create(name) for name in names))
                ids = [f"elasticsearch/{NAMESPACE}/{name}" for name in names]
                done, last_report = 0, began
                while done < resources:
                    if time.monotonic() - began > DEADLINE:
                        raise TimeoutError(f"{resources - done} resources not reconciled in time")
                    done = await reconciled(temporal.client)
                    if time.monotonic() - last_report > 5:
                        progress(f"{replicas} replicas: {done}/{resources}")
                        last_report = time.monotonic()
                    await asyncio.sleep(0.2)
                elapsed = time.monotonic() - began
                used = await workers_used(temporal.client, ids)
            finally:
                for operator in operators:
                    await operator.stop()
    return resources / elapsed, used


async def run(replica_counts: list[int], resources: int) -> dict[int, tuple[float, int]]:
    """One fresh stack per replica count, one after another."""
    results: dict[int, tuple[float, int]] = {}
    for replicas in replica_counts:
        progress(f"{replicas} replicas, {resources} resources")
        results[replicas] = await one_run(replicas, resources)
        progress(f"{replicas} replicas: {results[replicas][0]:.1f} reconciled/s")
    return results


def main() -> None:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resources", type=int, default=DEFAULT_RESOURCES)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    if args.resources < 1 or any(count < 1 for count in args.replicas):
        parser.error("--resources and --replicas must be at least 1")
    results = asyncio.run(run(args.replicas, args.resources))
    print(
        f"{args.resources} Elasticsearch resources created at once, full controllers, on kubesim"
        f" and one Temporal dev server ({os.cpu_count()} CPUs shared by everything)"
    )
    for replicas, (rate, used) in results.items():
        print(f"{replicas} replica(s): {rate:.1f} reconciled/s, {used} did the work")
    first, last = min(results), max(results)
    print(f"ratio {last} replicas/{first} = {results[last][0] / results[first][0]:.2f}")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
