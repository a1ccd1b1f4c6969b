"""Stackflow's operator with a no-op Elasticsearch reconcile, as a process of the side-by-side bench.

Run: ``python bench/_stackflow_operator.py --events FILE --kubeconfig K --temporal-address A
--task-queue Q --license-public-key PEM [--operator-namespace NS] [--scope-label LABEL]``
(``side_by_side_bench.py`` starts it as a subprocess, so its CPU and memory are its own). Stops on
SIGTERM/SIGINT, as ``stackflow run`` does.

What runs: ``stackflow.cli.operator.run_operator`` itself — the real worker settings, workflows,
generic activities (the reconcile step's scope check and license gate, which verifies the operator
license Secret), informers, watchers, Signaller, license watch — with

* the configuration the engine bench uses: dynamic scope (namespaces labelled
  ``<scope label>=true``), an operator license verified with ``--license-public-key``, leader
  election off, its own task queue;
* the controller table of the Elasticsearch row alone (``_stack.bench_controllers``: same kind,
  gate and flip strategy, no child watches), its reconcile bound to a no-op that appends the
  events line ``<time.time()> <reason> <namespace> <name> <generation>`` as it starts (the time
  first, then the generation from the operator's informer cache, or a GET when the cache cannot
  answer; reason ``create`` the first time this process reconciles the object, ``update`` after)
  and reports Ready.

So what the side-by-side bench measures is the engine (watch → Signaller → ResourceWorkflow →
reconcile step with its gates) and nothing of the Elasticsearch builders.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

from _bare_operator import EventsWriter, generation_of
from _stack import quiet_logs, recording_family

from activities.binding import Family
from activities.context import ControllerContext
from stackflow.cli.operator import OperatorOptions, install_stop_signals, run_operator
from stackflow.config import OperatorConfig
from stackflow.controllers import ControllerTable
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER
from stackflow.kube.reader import UNKNOWN
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)

DEFAULT_OPERATOR_NAMESPACE = "elastic-system"
DEFAULT_SCOPE_LABEL = "bench-managed"


class NoopReconcile:
    """The bench controller's activities: note the start in the events file, report Ready."""

    def __init__(self, events: EventsWriter) -> None:
        """Append to ``events``."""
        self.events = events

    async def reconcile(
        self, context: ControllerContext, request: ReconcileInput
    ) -> ReconcileResult:
        """Record the start (time, then the object's generation); do nothing; Ready."""
        moment = time.time()
        ref = request.ref
        cached: Any = UNKNOWN
        if context.cache is not None:
            cached = context.cache.get(ref.resource, namespace=ref.namespace, name=ref.name)
        if cached is UNKNOWN:
            cached = await context.scoped.get(ref.resource, namespace=ref.namespace, name=ref.name)
        self.events.record(moment, ref.namespace, ref.name, generation_of(cached))
        return ReconcileResult(phase=Phase.READY)

    async def finalize(self, context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
        """Nothing to clean up."""
        return FinalizeResult()


def bench_table(
    noop: NoopReconcile, *, local_step: bool
) -> tuple[ControllerTable, dict[str, Family]]:
    """The Elasticsearch row alone (no child watches), bound to ``noop`` (as ``bench_controllers``),
    its reconcile step local or not as ``local_step`` says."""
    row = dataclasses.replace(ELASTICSEARCH_CONTROLLER, children=(), local_step=local_step)
    return ControllerTable((row,)), {row.name: recording_family(noop)}


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """The operator configuration (as ``engine_bench.bench_operator``)."""
    return {
        "operator-namespace": args.operator_namespace,
        "namespace-selector": {"matchLabels": {args.scope_label: "true"}},
        "license-public-key": str(args.license_public_key),
        "temporal-address": args.temporal_address,
        "temporal-task-queue": args.task_queue,
        "enable-leader-election": False,
    }


async def run(args: argparse.Namespace) -> int:
    """``run_operator`` until SIGTERM/SIGINT; its exit status."""
    quiet_logs()
    stop = asyncio.Event()
    remove_signals = install_stop_signals(stop)
    config = OperatorConfig.model_validate(settings(args))
    options = OperatorOptions(
        kubeconfig=args.kubeconfig,
        health_host="127.0.0.1",
        health_port=0,
        graceful_shutdown_seconds=2,
    )
    try:
        with args.events.open("a", encoding="utf-8") as stream:
            table, families = bench_table(
                NoopReconcile(EventsWriter(stream)), local_step=args.step == "local"
            )
            return await run_operator(
                config,
                options=options,
                stop=stop,
                controllers=table,
                families=families,
                on_ready=lambda _: print("stackflow operator: ready", file=sys.stderr, flush=True),
            )
    finally:
        remove_signals()


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, required=True, help="file to append lines to")
    parser.add_argument("--kubeconfig", type=Path, required=True, help="kubeconfig of kubesim")
    parser.add_argument("--temporal-address", required=True, help="host:port of Temporal")
    parser.add_argument("--task-queue", required=True, help="the operator's task queue")
    parser.add_argument(
        "--license-public-key", type=Path, required=True, help="PEM verifying the license"
    )
    parser.add_argument("--operator-namespace", default=DEFAULT_OPERATOR_NAMESPACE)
    parser.add_argument(
        "--scope-label", default=DEFAULT_SCOPE_LABEL, help="namespaces labelled <this>=true"
    )
    parser.add_argument(
        "--step",
        choices=("local", "activity"),
        default="local" if ELASTICSEARCH_CONTROLLER.local_step else "activity",
        help="the reconcile step as a local activity or an activity (default: the row's own)",
    )
    args = parser.parse_args()
    status = asyncio.run(run(args))
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(status)


if __name__ == "__main__":
    main()
