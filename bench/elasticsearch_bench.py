"""Real Elasticsearch benchmark: how long a three-node cluster takes to be green, and a node to
come back after its Pod is deleted.

Run: ``.venv/bin/python bench/elasticsearch_bench.py [--rounds N] [--cluster kubesim|apiserver]``
(also part of ``make bench``; needs root, a Java and ``make tools``' distributions, else it says
why and exits 0). The stack is the tier's (``tests/elasticsearch/real_stack.py``): the cluster, the
runner running each Elasticsearch Pod as a real node, a Temporal dev server and ``stackflow run``.
Each round creates a three-node Elasticsearch in a namespace of its own and measures:

* ``formed``: from the create to the cluster itself answering green with three nodes;
* ``reported``: to the resource's ``status.health`` green with three available nodes;
* ``pod back``: from deleting one Pod (its pre-stop wait set to 1 s) to the cluster green again
  with three nodes.

Prints p50 and max of each over the rounds (default 2), progress on stderr; the last line is
``elasticsearch bench: formed p50 X s``. Bounded: each wait gives up after 5 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tier's stack lives in tests/

from controlplane import ControlPlane
from controlplane.processes import free_port
from stackflow.models.kinds import PODS
from tests.clusters import APISERVER, KUBESIM, apiserver_unavailable, install_crds
from tests.e2e.harness import ES
from tests.elasticsearch.real_stack import (
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    in_scope_namespace,
    real_stack,
    unavailable,
)

WAIT = 300.0


def progress(message: str) -> None:
    """A progress line on stderr."""
    print(f"[elasticsearch bench] {message}", file=sys.stderr, flush=True)


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> float:
    """Seconds until ``check`` holds (polled every 0.25 s), or an error after WAIT."""
    began = time.monotonic()
    while not await check():
        if time.monotonic() - began > WAIT:
            raise TimeoutError(f"{what}: not within {WAIT:g} s")
        await asyncio.sleep(0.25)
    return time.monotonic() - began


async def one_round(stack: RealStack, index: int) -> dict[str, float]:
    """Create a cluster, time it to green, delete a Pod, time it back."""
    namespace = f"bench-{index}"
    await in_scope_namespace(stack.kube, namespace)
    es = ElasticsearchOf(stack.kube, namespace, "bench")

    async def formed() -> bool:
        health = await es.health()
        return health is not None and health["status"] == "green" and health["number_of_nodes"] == 3

    async def reported() -> bool:
        status = (await stack.kube.get(ES, namespace=namespace, name="bench")).get("status") or {}
        return status.get("health") == "green" and status.get("availableNodes") == 3

    began = time.monotonic()
    await stack.kube.create(ES, elasticsearch(namespace, "bench"), namespace=namespace)
    figures = {"formed": await _until(formed, "formed")}
    await _until(reported, "reported")
    figures["reported"] = time.monotonic() - began
    pod = "bench-es-default-1"
    before = (await stack.kube.get(PODS, namespace=namespace, name=pod))["metadata"]["uid"]
    await stack.kube.delete(PODS, namespace=namespace, name=pod)

    async def back() -> bool:
        pods = await stack.kube.list(PODS, namespace=namespace)
        uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods["items"]}
        return uids.get(pod) not in (None, before) and await formed()

    figures["pod back"] = await _until(back, "pod back")
    await stack.kube.delete(ES, namespace=namespace, name="bench")
    return figures


async def run(rounds: int, cluster: str) -> int:
    """Every round on one stack; the figures printed."""
    reason = unavailable() or (apiserver_unavailable() if cluster == APISERVER else None)
    if reason:
        print(f"elasticsearch bench skipped: {reason}")
        return 0
    with tempfile.TemporaryDirectory(prefix="es-bench-") as scratch:
        directory = Path(scratch)
        port = free_port()
        plane = None
        if cluster == APISERVER:
            plane = ControlPlane(directory / "plane", scheduler_extender=f"http://127.0.0.1:{port}")
            plane.start()
            install_crds(plane)
        try:
            async with real_stack(directory, cluster, plane=plane, extender_port=port) as stack:
                results = []
                for index in range(rounds):
                    progress(f"round {index + 1}/{rounds}")
                    results.append(await one_round(stack, index))
                    progress(", ".join(f"{k} {v:.1f} s" for k, v in results[-1].items()))
        finally:
            if plane is not None:
                plane.stop()
    print(f"three-node cluster on {cluster}, {rounds} rounds")
    print(f"{'measure':<10} {'p50 s':>7} {'max s':>7}")
    for measure in ("formed", "reported", "pod back"):
        values = [result[measure] for result in results]
        print(f"{measure:<10} {statistics.median(values):>7.1f} {max(values):>7.1f}")
    print(
        f"elasticsearch bench: formed p50 {statistics.median(r['formed'] for r in results):.1f} s"
    )
    return 0


def main() -> int:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cluster", choices=(KUBESIM, APISERVER), default=KUBESIM)
    args = parser.parse_args()
    return asyncio.run(run(args.rounds, args.cluster))


if __name__ == "__main__":
    sys.exit(main())
