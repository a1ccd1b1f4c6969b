"""Secret cache benchmark: what the operator's informers hold with many unrelated Secrets around.

Run: ``.venv/bin/python bench/secret_cache_bench.py [--namespaces 20] [--secrets 2000]``. kubesim
runs as a subprocess, and so does the writer: it makes ``--namespaces`` namespaces labelled into
the operator's scope (the namespace-selector mode), each with one Elasticsearch whose
``secureSettings`` names a user Secret and one Secret labelled with the cluster's name (as the
operator's own are), and ``--secrets`` unrelated Secrets (1 KiB of data each) spread over them.

Each measurement is a process of its own holding the operator's Namespace informer and
``InformerSet`` with every watcher handler (``watchers.wiring.Watchers``, never leader: nothing
is sent), as ``bench/memory_bench.py --caches`` does:

* ``narrowed``: as the operator runs, the unfiltered Secret informer holding only what its users
  need (the labelled Secrets, the referenced ones);
* ``unnarrowed``: the same set with nobody saying what they need (``InformerSet.keep`` ignored),
  which is how every Secret was held before (metadata and a digest of each).

Figures: the Secret objects held (``InformerSet.cached_objects``), the Python heap the set holds
once synced (``tracemalloc``'s current size, after a garbage collection: what stays allocated),
and the RSS growth of building and syncing it (VmRSS; it includes the freed but not returned
memory of decoding the lists, which both do alike). The last line is parseable:
``secret cache: held 40 vs 2040 Secrets, heap 5.1 MB vs 8.0 MB``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, cast

from _stack import KubesimProcess, bounded, quiet_logs
from temporalio.client import Client

from stackflow.config import OperatorConfig
from stackflow.controllers import CONTROLLERS
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.informer import NamespaceInformer, Selects
from stackflow.kube.resources import ResourceClient
from stackflow.metrics import Registry
from stackflow.models.kinds import NAMESPACES, SECRETS, Kind
from stackflow.scope import NamespaceMatcher
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL
from watchers.informers import InformerSet
from watchers.signals import Signaller
from watchers.wiring import Watchers

OPERATOR_NAMESPACE = "elastic-system"
SCOPE_LABEL = "bench.stackflow.io/managed"
TASK_QUEUE = "stackflow-secret-cache-bench"
WRITE_CONCURRENCY = 16
#: Bytes of data in each unrelated Secret (a small certificate or a config file).
SECRET_BYTES = 1024

_STARTED = time.monotonic()


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    elapsed = time.monotonic() - _STARTED
    print(f"[secret_cache_bench {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)


def rss() -> int:
    """VmRSS of this process, in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key == "VmRSS":
                return int(value.split()[0]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def namespace_name(index: int) -> str:
    """The ``index``-th bench namespace."""
    return f"secrets-{index:03d}"


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch whose secure settings name the Secret ``user-settings``."""
    return {
        "apiVersion": ELASTICSEARCH.api_version,
        "kind": ELASTICSEARCH.kind,
        "metadata": {"name": "es", "namespace": namespace},
        "spec": {
            "version": "9.1.0",
            "nodeSets": [{"name": "default", "count": 1}],
            "secureSettings": [{"secretName": "user-settings"}],
        },
    }


def secret(namespace: str, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Secret of ``SECRET_BYTES`` bytes of data."""
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "stringData": {"value": "x" * SECRET_BYTES},
    }


# --- the writer (a subprocess) -------------------------------------------------------------------


async def populate(kubeconfig: Path, namespaces: int, secrets: int) -> None:
    """The operator namespace, the labelled namespaces with their objects, the unrelated Secrets."""
    api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=120)
    kube = ResourceClient(api_client)
    try:
        await kube.create(NAMESPACES, {"metadata": {"name": OPERATOR_NAMESPACE}})

        async def one_namespace(index: int) -> None:
            name = namespace_name(index)
            await kube.create(
                NAMESPACES, {"metadata": {"name": name, "labels": {SCOPE_LABEL: "true"}}}
            )
            await kube.create(SECRETS, secret(name, "user-settings"), namespace=name)
            labels = {ES_CLUSTER_NAME_LABEL: "es"}
            await kube.create(SECRETS, secret(name, "es-owned", labels), namespace=name)
            await kube.create(ELASTICSEARCH, elasticsearch(name), namespace=name)

        await bounded(range(namespaces), one_namespace, limit=WRITE_CONCURRENCY)

        async def unrelated(index: int) -> None:
            name = namespace_name(index % namespaces)
            await kube.create(SECRETS, secret(name, f"unrelated-{index:05d}"), namespace=name)

        await bounded(range(secrets), unrelated, limit=WRITE_CONCURRENCY)
    finally:
        await close_api_client(api_client)


# --- one measurement (a subprocess) --------------------------------------------------------------


class UnnarrowedInformerSet(InformerSet):
    """The set as it was before narrowing: what its users need is not asked."""

    def keep(self, resource: Kind, keeps: Selects) -> None:
        """Ignored: every object stays held."""


async def measure(kubeconfig: Path, *, narrowed: bool) -> dict[str, int]:
    """Sync the informers and the watchers' handlers: Secrets held and RSS growth."""
    quiet_logs()
    api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=120)
    resources = ResourceClient(api_client)
    namespaces = NamespaceInformer(resources)
    config = OperatorConfig.model_validate(
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
        }
    )
    matcher = NamespaceMatcher(config.scope(), source=namespaces)
    namespaces.start()
    await namespaces.wait_synced()
    gc.collect()
    before = rss()
    tracemalloc.start()
    informers = (InformerSet if narrowed else UnnarrowedInformerSet)(resources, matcher)
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
    heap, _ = tracemalloc.get_traced_memory()
    figures = {"held": informers.cached_objects(SECRETS), "heap": heap, "rss": rss() - before}
    tracemalloc.stop()
    await informers.stop()
    await namespaces.stop()
    await close_api_client(api_client)
    return figures


async def run_measure(kubeconfig: Path, *, narrowed: bool) -> dict[str, int]:
    """This script with ``--measure`` as a subprocess; its figures."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--measure",
        str(kubeconfig),
        *(() if narrowed else ("--unnarrowed",)),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the measurement exited with status {process.returncode}")
    figures: dict[str, int] = json.loads(out.decode().strip().splitlines()[-1])
    return figures


async def bench(namespaces: int, secrets: int) -> dict[str, dict[str, int]]:
    """kubesim, the writer, then both measurements."""
    with tempfile.TemporaryDirectory(prefix="secret_cache_bench-") as workdir:
        kubesim = KubesimProcess(kubeconfig=Path(workdir) / "kubeconfig")
        await kubesim.start()
        try:
            progress(f"kubesim up; writing {namespaces} namespaces and {secrets} Secrets")
            writer = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--populate",
                str(kubesim.kubeconfig),
                "--namespaces",
                str(namespaces),
                "--secrets",
                str(secrets),
            )
            if await writer.wait() != 0:
                raise RuntimeError(f"the writer exited with status {writer.returncode}")
            results = {}
            for name, narrowed in (("unnarrowed", False), ("narrowed", True)):
                progress(f"measuring the informers {name} (a subprocess)")
                results[name] = await run_measure(kubesim.kubeconfig, narrowed=narrowed)
            return results
        finally:
            await kubesim.stop()


def main() -> int:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=20, help="namespaces in scope")
    parser.add_argument("--secrets", type=int, default=2000, help="unrelated Secrets")
    parser.add_argument("--populate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--unnarrowed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.namespaces < 1 or args.secrets < 0:
        parser.error("--namespaces must be at least 1 and --secrets at least 0")
    if args.populate is not None:
        asyncio.run(populate(args.populate, args.namespaces, args.secrets))
        return 0
    if args.measure is not None:
        figures = asyncio.run(measure(args.measure, narrowed=not args.unnarrowed))
        print(json.dumps(figures), flush=True)
        return 0
    results = asyncio.run(bench(args.namespaces, args.secrets))
    total = args.secrets + 2 * args.namespaces
    print(
        f"{args.namespaces} namespaces in scope (selector mode), each with an Elasticsearch naming"
        f" a user Secret and a Secret labelled with its name; {args.secrets} unrelated Secrets of"
        f" {SECRET_BYTES} bytes; {total} Secrets in all ({os.cpu_count()} CPUs)"
    )
    for name in ("unnarrowed", "narrowed"):
        figures = results[name]
        print(
            f"{name}: {figures['held']} Secrets held, InformerSet heap"
            f" {figures['heap'] / 2**20:.1f} MB, RSS +{figures['rss'] / 2**20:.1f} MB"
        )
    narrowed, unnarrowed = results["narrowed"], results["unnarrowed"]
    print(
        f"secret cache: held {narrowed['held']} vs {unnarrowed['held']} Secrets,"
        f" heap {narrowed['heap'] / 2**20:.1f} MB vs {unnarrowed['heap'] / 2**20:.1f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
