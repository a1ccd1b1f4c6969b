"""Shared bench plumbing: kubesim and Temporal processes, a reconcile recorder, the operator.

* ``KubesimProcess``: ``python -m kubesim`` as a subprocess (so its CPU is not the operator's);
* ``start_temporal``: a Temporal dev server on 127.0.0.1 with the engine's search attributes;
* ``ReconcileRecorder`` + ``bench_controllers``: a table of the Elasticsearch controller row
  alone, bound to a no-op reconcile that records when it started and ended, so the engine
  (watch → signal → workflow → scope check → license gate → reconcile) is measured without the
  Elasticsearch builders' cost;
* ``InProcessOperator``: ``stackflow.cli.operator.run_operator`` itself (same worker settings,
  watchers, leader election) with that controller table, in this process.
"""

from __future__ import annotations

import asyncio
import compileall
import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import structlog
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from stackflow.cli import operator
from stackflow.config import OperatorConfig
from stackflow.controllers import ControllerTable
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER
from stackflow.models.engine import (
    SEARCH_ATTRIBUTES,
    FinalizeInput,
    FinalizeResult,
    Phase,
    ReconcileInput,
    ReconcileResult,
)

_Item = TypeVar("_Item")
REPO = Path(__file__).resolve().parents[1]
TEMPORAL = Path(sys.executable).parent / "temporal"


_STARTED = time.monotonic()


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    elapsed = time.monotonic() - _STARTED
    print(f"[engine_bench {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)


#: The project's own packages, byte-compiled as the image compiles them.
PACKAGES = ("stackflow", "activities", "workflows", "watchers")


def compile_project() -> None:
    """Byte-compile the operator's own packages, as the image does (Dockerfile), before a start
    is timed: with ``PYTHONDONTWRITEBYTECODE`` set (these machines set it) every start would
    compile them again, about 0.4 s that no deployed operator spends."""
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)


def quiet_logs() -> None:
    """Drop the operator's structlog lines (they would interleave with the figures)."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    logging.getLogger("temporalio").setLevel(logging.ERROR)


class KubesimProcess:
    """kubesim (with the CRDs, no simulated controllers) as a subprocess on a free port."""

    def __init__(self, *, kubeconfig: Path) -> None:
        """Prepare; nothing runs until ``start``."""
        self.kubeconfig = kubeconfig
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start it and wait for its ``listening`` line."""
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kubesim",
            "--port",
            "0",
            "--no-controllers",
            "--history-window",
            "50000",
            "--crds",
            str(REPO / "deploy" / "crds"),
            "--kubeconfig",
            str(self.kubeconfig),
            stdout=asyncio.subprocess.PIPE,
        )
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout=60)
        if b"listening" not in line:
            raise RuntimeError(f"kubesim did not start: {line!r}")

    async def stop(self) -> None:
        """SIGTERM it and wait."""
        process, self.process = self.process, None
        if process is not None and process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), timeout=30)


@contextlib.asynccontextmanager
async def start_temporal() -> AsyncIterator[WorkflowEnvironment]:
    """A Temporal dev server on 127.0.0.1 (in-memory), stopped on exit."""
    # The dev server prints a banner on the stdout it inherits: keep stdout for the figures.
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        env = await WorkflowEnvironment.start_local(
            data_converter=pydantic_data_converter,
            dev_server_existing_path=str(TEMPORAL),
            search_attributes=SEARCH_ATTRIBUTES,
            dev_server_log_level="error",
            # A loaded machine can exceed the SDK's 5 s default.
            dev_server_startup_timeout=timedelta(seconds=60),
        )
    finally:
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    try:
        yield env
    finally:
        await env.shutdown()


class CountWaiter:
    """Counts completions by key; lets a caller wait until a total is reached."""

    def __init__(self) -> None:
        """Nothing counted yet."""
        self.total = 0
        self.by_key: dict[str, int] = defaultdict(int)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def record(self, key: str) -> None:
        """One more completion for ``key``."""
        self.total += 1
        self.by_key[key] += 1
        still: list[tuple[int, asyncio.Future[None]]] = []
        for target, future in self._waiters:
            if self.total >= target:
                if not future.done():
                    future.set_result(None)
            else:
                still.append((target, future))
        self._waiters = still

    async def wait_total(self, target: int, *, within: float) -> None:
        """Until ``total`` reaches ``target``; TimeoutError after ``within`` seconds."""
        if self.total >= target:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        await asyncio.wait_for(future, timeout=within)


class _KeysWaiter:
    """Keys still expected to reconcile at or after ``after``, and the future to resolve."""

    def __init__(self, keys: Iterable[str], *, after: float) -> None:
        self.remaining = set(keys)
        self.after = after
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class ReconcileRecorder:
    """Start and end times (``time.monotonic``) of every bench reconcile, by ``namespace/name``."""

    def __init__(self) -> None:
        """Nothing recorded yet."""
        self.starts: dict[str, list[float]] = defaultdict(list)
        self.ends: dict[str, list[float]] = defaultdict(list)
        self.done = CountWaiter()
        self._waiters: list[_KeysWaiter] = []

    def first_start_after(self, key: str, moment: float) -> float | None:
        """The first reconcile start of ``key`` at or after ``moment``."""
        return next((start for start in self.starts[key] if start >= moment), None)

    def first_end_after(self, key: str, moment: float) -> float | None:
        """The first reconcile end of ``key`` at or after ``moment``."""
        return next((end for end in self.ends[key] if end >= moment), None)

    async def wait_each(self, keys: Iterable[str], *, after: float, within: float) -> None:
        """Until every key has a reconcile that ended at or after ``after``."""
        waiter = _KeysWaiter(
            (key for key in keys if self.first_end_after(key, after) is None), after=after
        )
        if not waiter.remaining:
            return
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.future, timeout=within)
        except TimeoutError:
            raise TimeoutError(
                f"{len(waiter.remaining)} resources not reconciled within {within:.0f} s"
            ) from None
        finally:
            self._waiters.remove(waiter)

    def _ended(self, key: str, moment: float) -> None:
        self.ends[key].append(moment)
        self.done.record(key)
        for waiter in self._waiters:
            if moment >= waiter.after and key in waiter.remaining:
                waiter.remaining.discard(key)
                if not waiter.remaining and not waiter.future.done():
                    waiter.future.set_result(None)

    async def reconcile(
        self, context: ControllerContext, request: ReconcileInput
    ) -> ReconcileResult:
        """The bench controller's reconcile: record, do nothing, report Ready."""
        key = f"{request.ref.namespace}/{request.ref.name}"
        self.starts[key].append(time.monotonic())
        self._ended(key, time.monotonic())
        return ReconcileResult(phase=Phase.READY)

    async def finalize(self, context: ControllerContext, request: FinalizeInput) -> FinalizeResult:
        """Nothing to clean up."""
        return FinalizeResult()


@dataclass(frozen=True)
class BenchControllers:
    """The operator's controller table and the families its names are bound to."""

    table: ControllerTable
    families: Mapping[str, Family]


class _Recording(Protocol):
    """A bench reconcile and finalize of ``(context, request)``."""

    async def reconcile(
        self, context: ControllerContext, request: ReconcileInput
    ) -> ReconcileResult: ...

    async def finalize(
        self, context: ControllerContext, request: FinalizeInput
    ) -> FinalizeResult: ...


def recording_family(recording: _Recording) -> Family:
    """A family whose reconcile and finalize are ``recording``'s (the primary the engine read is
    not used: the bench reconcile reads what it measures itself)."""

    class RecordingActivities(FamilyActivities):
        async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
            return await recording.reconcile(self.context, request)

        async def finalize(self, request: FinalizeInput) -> FinalizeResult:
            return await recording.finalize(self.context, request)

    return RecordingActivities


def bench_controllers(
    recorder: ReconcileRecorder, *, local_step: bool = ELASTICSEARCH_CONTROLLER.local_step
) -> BenchControllers:
    """The Elasticsearch row (gated, same kind and flip strategy, no child watches), bound to the
    recorder's reconcile. ``local_step`` True measures the step as a local activity (what every
    controller but Elasticsearch does); the default is the Elasticsearch row's own (an activity)."""
    row = dataclasses.replace(ELASTICSEARCH_CONTROLLER, children=(), local_step=local_step)
    return BenchControllers(
        table=ControllerTable((row,)),
        families={row.name: recording_family(recorder)},
    )


class InProcessOperator:
    """``run_operator`` as a task of this process, with the bench controller table."""

    def __init__(
        self, *, settings: dict[str, Any], kubeconfig: Path, controllers: BenchControllers
    ) -> None:
        """Validate the configuration; nothing runs until ``start``."""
        self.config = OperatorConfig.model_validate(settings)
        self.options = operator.OperatorOptions(
            kubeconfig=kubeconfig,
            health_host="127.0.0.1",
            health_port=0,
            graceful_shutdown_seconds=2,
        )
        self.controllers = controllers
        self.stop_event = asyncio.Event()
        self.task: asyncio.Task[int] | None = None

    async def start(
        self, *, on_ready: Callable[[], object] | None = None, within: float = 120
    ) -> None:
        """Run the operator; return once its probes are up (informers synced), calling
        ``on_ready`` at that moment (before the leader's resync has reconciled anything)."""
        ready = asyncio.Event()

        def became(_: object) -> None:
            if on_ready is not None:
                on_ready()
            ready.set()

        self.task = asyncio.create_task(
            operator.run_operator(
                self.config,
                options=self.options,
                stop=self.stop_event,
                controllers=self.controllers.table,
                families=self.controllers.families,
                on_ready=became,
            )
        )
        became_ready = asyncio.create_task(ready.wait())
        done, _ = await asyncio.wait(
            {became_ready, self.task}, timeout=within, return_when=asyncio.FIRST_COMPLETED
        )
        if became_ready not in done:
            became_ready.cancel()
            raise RuntimeError("the operator did not become ready")

    async def stop(self) -> int:
        """Stop it; its exit status."""
        self.stop_event.set()
        if self.task is None:
            return 0
        return await asyncio.wait_for(self.task, timeout=60)


async def bounded(
    items: Iterable[_Item], call: Callable[[_Item], Awaitable[object]], *, limit: int
) -> None:
    """Await ``call(item)`` for every item with at most ``limit`` in flight."""
    gate = asyncio.Semaphore(limit)

    async def one(item: _Item) -> None:
        async with gate:
            await call(item)

    await asyncio.gather(*(one(item) for item in items))
