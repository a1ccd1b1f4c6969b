"""The bare Temporal loop behind a watch, as an operator process for the side-by-side benchmark.

Run: ``python bench/_bare_operator.py --events FILE --kubeconfig K --temporal-address A
--task-queue Q`` (``side_by_side_bench.py`` starts it as a subprocess, so its CPU and memory are
its own). Stops on SIGTERM/SIGINT.

What it is: the least an operator on Temporal has to do, to compare Stackflow with.

* a worker running ``_bare_loop.BareEntity`` (one no-op activity per batch of pending signals)
  with the same worker settings Stackflow's operator uses by default (workflow runner, the sticky
  cache sized as ``run_operator`` sizes it, graceful shutdown), the pydantic data converter;
* a cluster-wide informer (``stackflow.kube.informer.Informer`` over
  ``stackflow.kube.resources.ResourceClient``) of Elasticsearch objects whose handler queues a
  signal-with-start of the entity ``bare/<namespace>/<name>`` on ADDED and on every generation
  change — no other filtering, no coalescing; ``SENDERS`` tasks send the queue (as many as
  Stackflow's Signaller runs), so the informer never waits for Temporal;
* no scope check, no license check, no search attributes, no status writes.

The activity gets the entity's key ``<namespace>/<name>`` and appends the events line
``<time.time()> <reason> <namespace> <name> <generation>`` (``_kopf_side.HandlerLog``) as it
starts: the time first, then the generation the informer cache holds (as Stackflow's bench
reconcile reads it), reason ``create`` the first time this process handles the key, ``update``
after. ``EventsWriter`` is that line's writer; ``_stackflow_operator.py`` uses it too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from _bare_loop import BareEntity, noop_activity
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from stackflow.api.kinds import kind_info
from stackflow.cli.sizing import SANDBOX_RESTRICTIONS, sticky_cache_size
from stackflow.config import OperatorConfig
from stackflow.kube.cache import EventType
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.informer import Informer
from stackflow.kube.resources import ResourceClient

ES = kind_info("Elasticsearch").resource
#: Concurrent signal-with-start senders (Stackflow's Signaller default).
SENDERS = 8
#: Stackflow's defaults for the worker settings it sets.
DEFAULTS = OperatorConfig()
GRACEFUL_SHUTDOWN = timedelta(seconds=2)


class EventsWriter:
    """Appends one flushed ``HandlerLog`` line per handler start; remembers the keys it saw."""

    def __init__(self, stream: TextIO) -> None:
        """Write to ``stream`` (opened for appending)."""
        self.stream = stream
        self._seen: set[tuple[str, str]] = set()

    def record(self, moment: float, namespace: str, name: str, generation: int) -> None:
        """``<moment> <reason> <namespace> <name> <generation>``: ``create`` on first sight."""
        key = (namespace, name)
        reason = "update" if key in self._seen else "create"
        self._seen.add(key)
        self.stream.write(f"{moment:.6f} {reason} {namespace} {name} {generation}\n")
        self.stream.flush()


def generation_of(obj: dict[str, Any] | None) -> int:
    """``metadata.generation`` (0 when absent)."""
    return int(((obj or {}).get("metadata") or {}).get("generation") or 0)


def workflow_runner() -> WorkflowRunner:
    """Stackflow's default workflow runner (``temporal-workflow-sandbox``)."""
    if DEFAULTS.temporal_workflow_sandbox:
        return SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)
    return UnsandboxedWorkflowRunner()


def cache_size() -> int:
    """Stackflow's default sticky cache size here (``temporal-max-cached-workflows`` unset: sized
    from this process's memory limit, as ``run_operator`` sizes it)."""
    return sticky_cache_size(
        DEFAULTS.temporal_max_cached_workflows, sandboxed=DEFAULTS.temporal_workflow_sandbox
    )


class BareOperator:
    """The watch, the sender tasks and the worker."""

    def __init__(
        self, *, kube: ResourceClient, temporal: Client, task_queue: str, events: EventsWriter
    ) -> None:
        """Wire the informer to the queue and the activity to the events file."""
        self.temporal = temporal
        self.task_queue = task_queue
        self.events = events
        self.informer = Informer(kube, ES)
        self.informer.add_handler(self._on_event)
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.worker = Worker(
            temporal,
            task_queue=task_queue,
            workflows=[BareEntity],
            activities=[noop_activity(self._handled)],
            graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
            max_cached_workflows=cache_size(),
            workflow_runner=workflow_runner(),
        )

    def _on_event(
        self, event_type: EventType, old: dict[str, Any] | None, new: dict[str, Any] | None
    ) -> None:
        if new is None:
            return
        if event_type == "ADDED" or (
            event_type == "MODIFIED" and generation_of(old) != generation_of(new)
        ):
            metadata = new["metadata"]
            self.queue.put_nowait(f"{metadata['namespace']}/{metadata['name']}")

    def _handled(self, key: str) -> None:
        moment = time.time()
        namespace, name = key.split("/", 1)
        cached = self.informer.cache.get(namespace=namespace, name=name)
        self.events.record(moment, namespace, name, generation_of(cached))

    async def _send_loop(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self.temporal.start_workflow(
                    BareEntity.run,
                    key,
                    id=f"bare/{key}",
                    task_queue=self.task_queue,
                    start_signal="trigger",
                    start_signal_args=["watch"],
                )
            except Exception as error:  # the bench notices the missing handler line
                print(f"signal-with-start of {key} failed: {error!r}", file=sys.stderr, flush=True)

    async def run(self, stop: asyncio.Event) -> None:
        """Worker, senders and informer until ``stop``."""
        async with self.worker:
            senders = [asyncio.create_task(self._send_loop()) for _ in range(SENDERS)]
            self.informer.start()
            try:
                await self.informer.wait_synced()
                print(
                    f"bare operator: ready (max_cached_workflows {cache_size()})",
                    file=sys.stderr,
                    flush=True,
                )
                await stop.wait()
            finally:
                await self.informer.stop()
                for task in senders:
                    task.cancel()
                await asyncio.gather(*senders, return_exceptions=True)


async def run(args: argparse.Namespace) -> None:
    """Connect, run until SIGTERM/SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    api_client = await make_api_client(kubeconfig=args.kubeconfig, context=None, timeout=60)
    try:
        temporal = await Client.connect(
            args.temporal_address, namespace="default", data_converter=pydantic_data_converter
        )
        with args.events.open("a", encoding="utf-8") as stream:
            operator = BareOperator(
                kube=ResourceClient(api_client),
                temporal=temporal,
                task_queue=args.task_queue,
                events=EventsWriter(stream),
            )
            await operator.run(stop)
    finally:
        with contextlib.suppress(Exception):
            await close_api_client(api_client)


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, required=True, help="file to append lines to")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="kubeconfig of kubesim")
    parser.add_argument("--temporal-address", required=True, help="host:port of Temporal")
    parser.add_argument("--task-queue", required=True, help="the worker's task queue")
    args = parser.parse_args()
    asyncio.run(run(args))
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(0)


if __name__ == "__main__":
    main()
