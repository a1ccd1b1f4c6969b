"""Start-up benchmark: ``stackflow run`` from process start to its first ``/readyz`` 200.

Run: ``.venv/bin/python bench/start_bench.py [--runs N] [--environment runtime|dev]`` (default 5,
runtime). kubesim (with the CRDs) and the Temporal dev server run once; the operator is started
``--runs`` times as the chart runs it (``stackflow run``, namespace-selector mode, a subprocess),
``/readyz`` polled every 10 ms. ``runtime`` runs it with only the runtime dependencies, as the image
does (``bench/_runtime.py``); ``dev`` from the development venv, test and lint tools and all. Ready
means what the probe means: the Namespace and controller informers synced, the worker running and
Temporal answering. Each run prints its wall time to ready and the CPU time the process used until
then (``/proc/<pid>/stat``: the figure that moves least when the machine is busy with other work).

The last line is parseable: ``start to ready p50 = 1.42 s (cpu 1.30 s)``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from _kopf_side import process_cpu_seconds
from _runtime import add_environment_argument, operator_python, runtime_environment
from _stack import KubesimProcess, compile_project, start_temporal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e harness lives in tests/

from controlplane.processes import free_port
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES
from tests.e2e.harness import write_operator_config

POLL_SECONDS = 0.01
#: A busy 2-core machine has taken 100 s to ready (other test runs holding both cores).
WITHIN_SECONDS = 300.0

_STARTED = time.monotonic()


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    print(
        f"[start_bench {time.monotonic() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True
    )


async def start_once(python: Path, config: Path, kubeconfig: Path) -> tuple[float, float]:
    """Start the operator with ``python``, wait for ``/readyz``, stop it: (wall seconds, CPU
    seconds) to ready."""
    port = free_port()
    began = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(python),
        "-m",
        "stackflow.cli",
        "run",
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
        "--health-host",
        "127.0.0.1",
        "--health-port",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=runtime_environment(os.environ),
    )
    try:
        async with aiohttp.ClientSession() as session:
            while time.monotonic() - began < WITHIN_SECONDS:
                try:
                    async with session.get(f"http://127.0.0.1:{port}/readyz") as answer:
                        if answer.status == 200:
                            return time.monotonic() - began, process_cpu_seconds(process.pid)
                except aiohttp.ClientError:
                    pass  # not listening yet
                await asyncio.sleep(POLL_SECONDS)
        raise TimeoutError(f"not ready within {WITHIN_SECONDS:.0f} s")
    finally:
        process.terminate()
        await process.wait()


async def bench(runs: int, python: Path) -> list[tuple[float, float]]:
    """kubesim and Temporal once, then ``runs`` starts of the operator with ``python``."""
    with tempfile.TemporaryDirectory(prefix="start_bench-") as workdir:
        kubesim = KubesimProcess(kubeconfig=Path(workdir) / "kubeconfig")
        await kubesim.start()
        try:
            async with start_temporal() as env:
                api_client = await make_api_client(
                    kubeconfig=kubesim.kubeconfig, context=None, timeout=60
                )
                try:
                    kube = ResourceClient(api_client)
                    await kube.create(NAMESPACES, {"metadata": {"name": "elastic-system"}})
                finally:
                    await close_api_client(api_client)
                config = write_operator_config(Path(workdir) / "operator.yaml", temporal=env)
                figures = []
                for run in range(runs):
                    wall, cpu = await start_once(python, config, kubesim.kubeconfig)
                    progress(f"run {run + 1}/{runs}: ready after {wall:.2f} s, cpu {cpu:.2f} s")
                    figures.append((wall, cpu))
                return figures
        finally:
            await kubesim.stop()


def main() -> None:
    """Parse the flags, run, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="operator starts to measure")
    add_environment_argument(parser)
    args = parser.parse_args()
    compile_project()
    python, environment = operator_python(args.environment, progress)
    figures = asyncio.run(bench(args.runs, python))
    walls = [wall for wall, _ in figures]
    cpus = [cpu for _, cpu in figures]
    print(
        f"operator = stackflow run on kubesim, {environment} environment,"
        f" {args.runs} starts ({os.cpu_count()} CPUs)"
    )
    print(f"wall to ready: min {min(walls):.2f} s, max {max(walls):.2f} s")
    print(f"cpu to ready: min {min(cpus):.2f} s, max {max(cpus):.2f} s")
    print(
        f"start to ready p50 = {statistics.median(walls):.2f} s"
        f" (cpu {statistics.median(cpus):.2f} s)"
    )
    sys.stdout.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
