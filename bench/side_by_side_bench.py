"""Side-by-side benchmark: the bare Temporal loop, Stackflow and kopf on one kubesim, one by one.

Run: ``.venv/bin/python bench/side_by_side_bench.py [--batches 500 5000] [--samples 40]
[--subjects bare stackflow kopf] [--one-temporal-server] [--workdir DIR]``. One kubesim (a
subprocess: the CRDs, no simulated controllers) serves the whole run; each Temporal subject gets a
fresh Temporal dev server (``_stack.start_temporal``, shut down after it), or with
``--one-temporal-server`` all share one. The subjects run one after another, each as its own
subprocess, each on a fresh namespace labelled into Stackflow's dynamic scope, each with a no-op
handler that appends
``<time.time()> <reason> <namespace> <name> <generation>`` to an events file when it STARTS:

* ``bare``: ``bench/_bare_operator.py`` — ``_bare_loop.BareEntity`` (one no-op activity per batch
  of signals) behind a cluster-wide informer that signal-with-starts the entity on ADDED and on
  every generation change; no scope or license check;
* ``stackflow``: ``bench/_stackflow_operator.py`` — ``stackflow.cli.operator.run_operator`` (real
  worker settings, watchers, workflows, reconcile step with scope check and license gate; dynamic
  namespace selector; enterprise license; leader election off; own task queue) with the
  Elasticsearch row alone, its reconcile a no-op;
* ``kopf``: ``bench/_kopf_operator.py`` as is, on its namespace only (``clusterwide=False``).

Every subject is measured by the same code (``_kopf_side``: ``SubjectProcess``, ``HandlerLog``,
``measure_change_latencies``, ``measure_batch``); CPU and memory come from ``/proc/<pid>``:

1. start → the ``WARM_OBJECTS`` warm-up objects handled, then the operator is let idle;
2. spec change → handler start: ``--samples`` merge patches of ``spec`` (generation bumps), one
   at a time, each from just before the PATCH until the handler line of that generation;
3. for each ``--batches`` size N: N objects created at once (16 writers), from just before the
   first create until the last create handler started: N / seconds;
4. CPU per handled: user+system CPU of the operator process, of the Temporal dev server (bare
   and Stackflow) and of kubesim, from just before each batch until the operator is idle again,
   summed over the batches, divided by their objects; RSS of the operator after the largest batch;
5. Temporal subjects: history events and ``WorkflowExecutionSignaled`` events of ``HISTORY_SAMPLE``
   workflows of every batch (``fetch_history_events``), divided by the handler lines of those
   objects ("first reconcile") and by the objects (signals per new resource); and the events the
   spec-change samples appended to the warm-up workflows' histories, divided by the changes.

Between subjects the previous operator is stopped and its objects deleted, so the next subject
starts on a kubesim holding only its own objects, and on a quiet Temporal server: a fresh one
(the default: the second Temporal subject does not run on a server whose in-memory store holds
the first one's thousands of closed workflows, and nothing waits for thousands of terminations),
or, with ``--one-temporal-server``, the shared one once the previous subject's running workflows
are terminated (skipped when no Temporal subject follows). Progress goes to stderr; stdout gets the table (one row per figure, one column
per subject, the ratio Stackflow / bare and how far kopf is ahead of Stackflow where it is) and,
last, ``ratio operator/bare = <float>``: Stackflow's creates/s at the largest batch over the bare
loop's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import itertools
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _kopf_side import (
    WARM_OBJECTS,
    BatchResult,
    KopfOperator,
    SubjectProcess,
    create_objects,
    delete_objects,
    measure_batch,
    measure_change_latencies,
    process_cpu_seconds,
    stop_reporting,
)
from _operator_bench import (
    OPERATOR_NAMESPACE,
    SCOPE_LABEL,
    SIGNAL_CONCURRENCY,
    enterprise_license,
    license_secret,
)
from _stack import KubesimProcess, bounded, progress, quiet_logs, start_temporal
from engine_bench import percentile
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from stackflow.cli.sizing import sticky_cache_size
from stackflow.config import OperatorConfig
from stackflow.controllers.elasticsearch import ELASTICSEARCH_CONTROLLER
from stackflow.kube import errors
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES, SECRETS

BENCH = Path(__file__).resolve().parent
SUBJECTS = ("bare", "stackflow", "kopf")
TITLES = {"bare": "bare loop", "stackflow": "Stackflow", "kopf": "kopf"}
TEMPORAL_SUBJECTS = frozenset({"bare", "stackflow"})
TASK_QUEUES = {"bare": "side-by-side-bare", "stackflow": "side-by-side-stackflow"}
DEFAULT_BATCHES = (500, 5000)
DEFAULT_SAMPLES = 40
#: Workflows of each batch whose histories are counted.
HISTORY_SAMPLE = 50
START_WITHIN = 120.0
#: The Temporal dev server is quiet when it used less than this share of a core over a second.
QUIET_CPU_SHARE = 0.05
QUIET_WITHIN = 60.0


# --- processes ----------------------------------------------------------------------------------


def temporal_server_pid(address: str) -> int:
    """The pid of this process's ``temporal`` child serving ``address`` (``host:port``)."""
    me, port = os.getpid(), address.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        listens = any(
            flag == b"--port" and value == port.encode()
            for flag, value in itertools.pairwise(arguments)
        )
        if parent == me and comm == "temporal" and listens:
            return int(entry.name)
    raise RuntimeError(f"no temporal child process of {me} serving {address}")


async def until_quiet(pid: int, *, what: str) -> None:
    """Until process ``pid`` used < ``QUIET_CPU_SHARE`` of a core over one second (or give up)."""
    deadline = time.monotonic() + QUIET_WITHIN
    while time.monotonic() < deadline:
        before = process_cpu_seconds(pid)
        await asyncio.sleep(1.0)
        if process_cpu_seconds(pid) - before < QUIET_CPU_SHARE:
            return
    progress(f"{what} still busy after {QUIET_WITHIN:.0f} s; going on")


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs of the machine spent busy so far (``/proc/stat``, not idle/iowait)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


class OthersMeter:
    """CPU the machine spent outside the bench's processes (other users of the machine)."""

    def __init__(self, pids: Sequence[int]) -> None:
        """Count every CPU second but those of ``pids``, from now."""
        self.pids = list(pids)
        self.began = time.monotonic()
        self.busy = machine_busy_seconds()
        self.own = self._own()

    def _own(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self.pids)

    def seconds(self) -> tuple[float, float]:
        """(CPU seconds of other processes, wall seconds) since construction."""
        busy, own = machine_busy_seconds() - self.busy, self._own() - self.own
        return max(0.0, busy - own), time.monotonic() - self.began


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryCost:
    """Events counted in some workflows' histories, and what caused them."""

    workflows: int
    events: int
    signals: int
    #: Handler lines (reconciles) of those workflows' objects, or the spec changes made.
    reconciles: int

    def __add__(self, other: HistoryCost) -> HistoryCost:
        """Both samples together."""
        return HistoryCost(
            self.workflows + other.workflows,
            self.events + other.events,
            self.signals + other.signals,
            self.reconciles + other.reconciles,
        )

    def __sub__(self, other: HistoryCost) -> HistoryCost:
        """What was added since ``other`` (the same workflows, earlier)."""
        return HistoryCost(
            self.workflows,
            self.events - other.events,
            self.signals - other.signals,
            self.reconciles - other.reconciles,
        )


@dataclass
class SubjectResult:
    """What one subject measured."""

    subject: str
    startup_seconds: float = math.nan
    latencies: list[float] = field(default_factory=list)
    batches: dict[int, BatchResult] = field(default_factory=dict)
    temporal_cpu: dict[int, float] = field(default_factory=dict)
    kubesim_cpu: dict[int, float] = field(default_factory=dict)
    #: Batch size -> (CPU seconds of processes outside the bench, wall seconds) during it.
    others: dict[int, tuple[float, float]] = field(default_factory=dict)
    rss_bytes: int = 0
    #: First reconciles: the sampled workflows of every batch.
    first: HistoryCost | None = None
    #: Spec changes: what the latency samples appended to the warm-up workflows.
    change: HistoryCost | None = None

    def handled(self) -> int:
        """Objects of all batches."""
        return sum(self.batches)

    def cpu_per_handled(self) -> float:
        """Operator CPU seconds per handled create, over the batches."""
        return sum(batch.cpu_seconds for batch in self.batches.values()) / self.handled()

    def temporal_per_handled(self) -> float:
        """Temporal dev server CPU seconds per handled create (nan for kopf)."""
        if not self.temporal_cpu:
            return math.nan
        return sum(self.temporal_cpu.values()) / self.handled()

    def kubesim_per_handled(self) -> float:
        """kubesim CPU seconds per handled create."""
        return sum(self.kubesim_cpu.values()) / self.handled()

    def others_cores(self) -> float:
        """Cores other processes of the machine kept busy during the batches, on average."""
        return sum(cpu for cpu, _ in self.others.values()) / sum(
            wall for _, wall in self.others.values()
        )


# --- one subject --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemporalServer:
    """A Temporal dev server of ``start_temporal``: a client, its address, its process."""

    client: Client
    address: str
    pid: int

    @classmethod
    def of(cls, env: WorkflowEnvironment) -> TemporalServer:
        """The server behind ``env``."""
        address = env.client.service_client.config.target_host
        return cls(client=env.client, address=address, pid=temporal_server_pid(address))


@dataclass(frozen=True)
class Bench:
    """What a subject runs against: kubesim, Temporal (None: none up), the license, the work dir."""

    kube: ResourceClient
    kubesim: KubesimProcess
    public_key: Path
    workdir: Path
    server: TemporalServer | None = None
    #: How Stackflow's Elasticsearch row runs its reconcile step: "local" or "activity".
    step: str = "activity"

    @property
    def temporal_server(self) -> TemporalServer:
        """The Temporal dev server (there must be one)."""
        if self.server is None:
            raise RuntimeError("no Temporal dev server is up")
        return self.server

    @property
    def temporal(self) -> Client:
        """A client of the Temporal dev server."""
        return self.temporal_server.client

    @property
    def temporal_address(self) -> str:
        """``host:port`` of the Temporal dev server."""
        return self.temporal_server.address

    @property
    def temporal_pid(self) -> int:
        """The Temporal dev server's process id."""
        return self.temporal_server.pid

    @property
    def kubesim_pid(self) -> int:
        """kubesim's process id."""
        assert self.kubesim.process is not None
        return self.kubesim.process.pid

    def subject_process(self, subject: str, namespace: str) -> SubjectProcess:
        """The subject's operator process (not started)."""
        if subject == "kopf":
            return KopfOperator(
                kubeconfig=self.kubesim.kubeconfig, workdir=self.workdir, namespace=namespace
            )
        kubeconfig = ["--kubeconfig", str(self.kubesim.kubeconfig)]
        temporal = ["--temporal-address", self.temporal_address]
        if subject == "bare":
            arguments = [*kubeconfig, *temporal, "--task-queue", TASK_QUEUES[subject]]
            script = BENCH / "_bare_operator.py"
        else:
            arguments = [
                *kubeconfig,
                *temporal,
                "--task-queue",
                TASK_QUEUES[subject],
                "--license-public-key",
                str(self.public_key),
                "--operator-namespace",
                OPERATOR_NAMESPACE,
                "--scope-label",
                SCOPE_LABEL,
                "--step",
                self.step,
            ]
            script = BENCH / "_stackflow_operator.py"
        return SubjectProcess(
            name=subject, script=script, arguments=arguments, workdir=self.workdir
        )


def workflow_id(subject: str, namespace: str, name: str) -> str:
    """The workflow of an object: ``bare/<ns>/<name>`` or ``elasticsearch/<ns>/<name>``."""
    prefix = "bare" if subject == "bare" else "elasticsearch"
    return f"{prefix}/{namespace}/{name}"


async def history_cost(
    bench: Bench,
    operator: SubjectProcess,
    subject: str,
    namespace: str,
    names: Sequence[str],
) -> HistoryCost:
    """Events and signals in the histories of ``names``' workflows; their handler lines."""
    counts: dict[str, tuple[int, int]] = {}

    async def count(name: str) -> None:
        handle = bench.temporal.get_workflow_handle(workflow_id(subject, namespace, name))
        events = signals = 0
        async for event in handle.fetch_history_events():
            events += 1
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                signals += 1
        counts[name] = (events, signals)

    await bounded(names, count, limit=8)
    operator.log.poll()
    return HistoryCost(
        workflows=len(names),
        events=sum(events for events, _ in counts.values()),
        signals=sum(signals for _, signals in counts.values()),
        reconciles=sum(len(operator.log.by_key.get((namespace, name), ())) for name in names),
    )


async def event_types(bench: Bench, workflow: str) -> list[str]:
    """The types of a workflow's history events, in order, without the ``EVENT_TYPE_`` prefix."""
    handle = bench.temporal.get_workflow_handle(workflow)
    prefix = "EVENT_TYPE_"
    return [
        EventType.Name(event.event_type).removeprefix(prefix)
        async for event in handle.fetch_history_events()
    ]


async def show_histories(
    bench: Bench, subject: str, namespace: str, *, changed: str, created: str
) -> None:
    """Progress lines: a created object's whole history, what a changed one's last change added."""
    first = await event_types(bench, workflow_id(subject, namespace, created))
    progress(f"{subject}: history of {created} (first reconcile): {' '.join(first)}")
    history = await event_types(bench, workflow_id(subject, namespace, changed))
    signaled = [i for i, kind in enumerate(history) if kind == "WORKFLOW_EXECUTION_SIGNALED"]
    last = history[signaled[-1] :] if signaled else history
    progress(f"{subject}: events of {changed}'s last spec change: {' '.join(last)}")


def sample(names: Sequence[str], size: int) -> list[str]:
    """``size`` names spread evenly over ``names`` (all of them when there are fewer)."""
    if len(names) <= size:
        return list(names)
    return [names[index * len(names) // size] for index in range(size)]


async def terminate_running(temporal: Client, task_queue: str) -> int:
    """Terminate every running workflow of ``task_queue``; how many there were."""
    query = f"ExecutionStatus='Running' AND TaskQueue='{task_queue}'"
    ids = [execution.id async for execution in temporal.list_workflows(query)]

    async def terminate(workflow: str) -> None:
        with contextlib.suppress(Exception):  # already closed: nothing to do
            await temporal.get_workflow_handle(workflow).terminate("side-by-side bench: next")

    await bounded(ids, terminate, limit=SIGNAL_CONCURRENCY)
    return len(ids)


async def prepare_namespace(kube: ResourceClient, namespace: str) -> None:
    """Create ``namespace`` labelled into Stackflow's scope (or label it if it exists)."""
    labels = {SCOPE_LABEL: "true"}
    try:
        await kube.create(NAMESPACES, {"metadata": {"name": namespace, "labels": labels}})
    except errors.AlreadyExists:
        await kube.merge_patch(
            NAMESPACES, {"metadata": {"labels": labels}}, namespace=None, name=namespace
        )


async def run_subject(
    bench: Bench,
    subject: str,
    *,
    batches: Sequence[int],
    samples: int,
    cleanup: bool,
    terminate: bool,
) -> SubjectResult:
    """Start the subject, measure it, stop it; then, as asked, terminate its running workflows
    (``terminate``) and delete its objects (``cleanup``)."""
    namespace = f"sbs-{subject}"
    warm = [f"{subject}-warm-{index}" for index in range(WARM_OBJECTS)]
    batch_names = [
        [f"{subject}-b{number}-{index}" for index in range(size)]
        for number, size in enumerate(batches)
    ]
    temporal = subject in TEMPORAL_SUBJECTS
    result = SubjectResult(subject)
    await prepare_namespace(bench.kube, namespace)
    if bench.server is not None:
        await until_quiet(bench.server.pid, what="the Temporal dev server")
    operator = bench.subject_process(subject, namespace)
    failed = True
    try:
        began = time.monotonic()
        await operator.start()
        await create_objects(bench.kube, namespace, warm)
        warm_keys = [(namespace, name) for name in warm]
        await operator.wait_for(
            lambda: operator.log.created(warm_keys) == len(warm_keys),
            within=START_WITHIN,
            what=f"the {len(warm)} warm-up objects",
        )
        result.startup_seconds = time.monotonic() - began
        progress(f"{subject}: warm-up objects handled {result.startup_seconds:.1f} s after start")
        await operator.settle()
        before = await history_cost(bench, operator, subject, namespace, warm) if temporal else None
        progress(f"{subject}: {samples} spec-change latencies")
        result.latencies = await measure_change_latencies(
            operator, bench.kube, namespace, warm, samples=samples
        )
        await operator.settle()
        if before is not None:
            after = await history_cost(bench, operator, subject, namespace, warm)
            result.change = after - before
        for size, names in zip(batches, batch_names, strict=True):
            progress(f"{subject}: creating {size} objects at once")
            temporal_before = process_cpu_seconds(bench.temporal_pid) if temporal else 0.0
            kubesim_before = process_cpu_seconds(bench.kubesim_pid)
            ours = [os.getpid(), operator.pid, bench.kubesim_pid]
            others = OthersMeter([*ours, *([] if bench.server is None else [bench.server.pid])])
            batch = await measure_batch(operator, bench.kube, namespace, names)
            result.others[size] = others.seconds()
            if temporal:
                result.temporal_cpu[size] = (
                    process_cpu_seconds(bench.temporal_pid) - temporal_before
                )
            result.kubesim_cpu[size] = process_cpu_seconds(bench.kubesim_pid) - kubesim_before
            result.batches[size] = batch
            result.rss_bytes = batch.rss_bytes if size == max(batches) else result.rss_bytes
            progress(
                f"{subject}: {size} handled at {batch.creates_per_second:.1f}/s"
                f" (written at {batch.writes_per_second:.1f}/s),"
                f" {batch.cpu_seconds / size * 1000:.2f} ms operator CPU each"
            )
            if temporal:
                cost = await history_cost(
                    bench, operator, subject, namespace, sample(names, HISTORY_SAMPLE)
                )
                result.first = cost if result.first is None else result.first + cost
        if temporal:
            await show_histories(
                bench,
                subject,
                namespace,
                changed=warm[(samples - 1) % len(warm)],
                created=batch_names[0][0],
            )
        failed = False
    finally:
        await stop_reporting(operator, subject, failed=failed)
        # The operator is gone: its workflows and its objects can go at the same time.
        all_names = [*warm, *(name for names in batch_names for name in names)]
        await asyncio.gather(
            terminate_subject(bench, subject) if temporal and terminate else asyncio.sleep(0),
            delete_subject(bench, subject, namespace, all_names) if cleanup else asyncio.sleep(0),
        )
    return result


async def terminate_subject(bench: Bench, subject: str) -> None:
    """Terminate the subject's running workflows (after its operator stopped)."""
    began = time.monotonic()
    terminated = await terminate_running(bench.temporal, TASK_QUEUES[subject])
    progress(
        f"{subject}: {terminated} running workflows terminated in {time.monotonic() - began:.1f} s"
    )


async def delete_subject(bench: Bench, subject: str, namespace: str, names: Sequence[str]) -> None:
    """Delete the subject's objects (after its operator stopped)."""
    began = time.monotonic()
    await delete_objects(bench.kube, namespace, names)
    progress(f"{subject}: its {len(names)} objects deleted in {time.monotonic() - began:.1f} s")


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One figure: a value per subject (nan: not measured), its unit, which way is better."""

    name: str
    unit: str
    values: dict[str, float]
    digits: int = 1
    #: "higher" or "lower" is better; "" for context figures (no ratios).
    better: str = ""


def fmt(value: float, digits: int) -> str:
    """A value, or "—" when not measured."""
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def stackflow_over_bare(row: Row) -> str:
    """The ratio Stackflow / bare, with which way is better."""
    bare, ours = row.values.get("bare", math.nan), row.values.get("stackflow", math.nan)
    if not row.better or math.isnan(bare) or math.isnan(ours) or bare == 0:
        return ""
    return f"{ours / bare:.2f} ({row.better} is better)"


def kopf_ahead(row: Row) -> str:
    """How many times better kopf is than Stackflow on this figure, when it is."""
    kopf, ours = row.values.get("kopf", math.nan), row.values.get("stackflow", math.nan)
    if not row.better or math.isnan(kopf) or math.isnan(ours) or kopf <= 0 or ours <= 0:
        return ""
    factor = kopf / ours if row.better == "higher" else ours / kopf
    return f"kopf {factor:.2f}x ahead" if factor > 1 else ""


def creates_rate(result: SubjectResult, *, size: int) -> float:
    """Creates handled per second in the batch of ``size``."""
    return result.batches[size].creates_per_second


def writes_rate(result: SubjectResult, *, size: int) -> float:
    """Creates written per second in the batch of ``size``."""
    return result.batches[size].writes_per_second


def rows(results: dict[str, SubjectResult], batches: Sequence[int]) -> list[Row]:
    """The printed figures."""

    def each(value: Callable[[SubjectResult], float]) -> dict[str, float]:
        values: dict[str, float] = {}
        for subject, result in results.items():
            try:
                values[subject] = value(result)
            except (KeyError, ValueError, ZeroDivisionError, IndexError):
                values[subject] = math.nan
        return values

    def history(result: SubjectResult, *, first: bool, per: str) -> float:
        cost = result.first if first else result.change
        if cost is None:
            return math.nan
        if per == "events":
            return cost.events / cost.reconciles
        return cost.signals / (cost.workflows if first else cost.reconciles)

    largest = max(batches)
    samples = max((len(result.latencies) for result in results.values()), default=0)
    table = [
        Row(
            "start -> warm-up objects handled",
            "s",
            each(lambda r: r.startup_seconds),
            digits=1,
        ),
        Row(
            f"spec change -> handler start p50 ({samples} samples)",
            "ms",
            each(lambda r: percentile(r.latencies, 0.5) * 1000),
            digits=0,
            better="lower",
        ),
        Row(
            "spec change -> handler start p99",
            "ms",
            each(lambda r: percentile(r.latencies, 0.99) * 1000),
            digits=0,
            better="lower",
        ),
    ]
    for size in batches:
        table.append(
            Row(
                f"{size} created at once -> all handled",
                "creates/s",
                each(functools.partial(creates_rate, size=size)),
                better="higher",
            )
        )
        table.append(
            Row(
                f"{size} created at once: the writer's pace",
                "creates/s",
                each(functools.partial(writes_rate, size=size)),
            )
        )
    table += [
        Row(
            "operator CPU per reconcile (batches, until idle)",
            "ms",
            each(lambda r: r.cpu_per_handled() * 1000),
            digits=2,
            better="lower",
        ),
        Row(
            "Temporal dev server CPU per reconcile",
            "ms",
            each(lambda r: r.temporal_per_handled() * 1000),
            digits=2,
            better="lower",
        ),
        Row(
            "kubesim CPU per reconcile",
            "ms",
            each(lambda r: r.kubesim_per_handled() * 1000),
            digits=2,
            better="lower",
        ),
        Row(
            "operator + Temporal + kubesim CPU per reconcile",
            "ms",
            each(
                lambda r: (
                    (
                        r.cpu_per_handled()
                        + (
                            0.0
                            if math.isnan(r.temporal_per_handled())
                            else r.temporal_per_handled()
                        )
                        + r.kubesim_per_handled()
                    )
                    * 1000
                )
            ),
            digits=2,
            better="lower",
        ),
        Row(
            "CPU of other processes on the machine during the batches",
            "cores",
            each(lambda r: r.others_cores()),
            digits=2,
        ),
        Row(
            f"operator RSS after the {largest} batch",
            "MiB",
            each(lambda r: r.rss_bytes / 2**20 if r.rss_bytes else math.nan),
            better="lower",
        ),
        Row(
            f"history events per first reconcile ({HISTORY_SAMPLE} workflows per batch)",
            "events",
            each(lambda r: history(r, first=True, per="events")),
            better="lower",
        ),
        Row(
            "signals per new resource",
            "signals",
            each(lambda r: history(r, first=True, per="signals")),
            digits=2,
            better="lower",
        ),
        Row(
            "history events per spec change (warm-up workflows)",
            "events",
            each(lambda r: history(r, first=False, per="events")),
            better="lower",
        ),
        Row(
            "signals per spec change",
            "signals",
            each(lambda r: history(r, first=False, per="signals")),
            digits=2,
            better="lower",
        ),
    ]
    return table


def print_table(table: list[Row], subjects: Sequence[str]) -> None:
    """Columns: figure, unit, one per subject, Stackflow / bare, kopf ahead."""
    header = [
        "figure",
        "unit",
        *(TITLES[s] for s in subjects),
        "Stackflow/bare",
        "kopf vs Stackflow",
    ]
    lines = [
        [
            row.name,
            row.unit,
            *(fmt(row.values.get(s, math.nan), row.digits) for s in subjects),
            stackflow_over_bare(row),
            kopf_ahead(row),
        ]
        for row in table
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    numeric = range(2, 2 + len(subjects))

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()

    print(render(header))
    print(render(["-" * width for width in widths]))
    for line in lines:
        print(render(line))


# --- the run ------------------------------------------------------------------------------------


async def run(
    subjects: Sequence[str],
    *,
    batches: Sequence[int],
    samples: int,
    workdir: Path,
    one_server: bool,
    step: str,
) -> tuple[dict[str, SubjectResult], dict[str, str]]:
    """kubesim, then each subject in turn, each Temporal subject on a Temporal dev server of its
    own (``one_server``: one for the whole run, workflows terminated between subjects)."""
    quiet_logs()
    results: dict[str, SubjectResult] = {}
    failures: dict[str, str] = {}
    kubesim = KubesimProcess(kubeconfig=workdir / "kubeconfig")
    async with contextlib.AsyncExitStack() as stack:
        await kubesim.start()
        stack.push_async_callback(kubesim.stop)
        api_client = await make_api_client(kubeconfig=kubesim.kubeconfig, context=None, timeout=60)
        stack.push_async_callback(close_api_client, api_client)
        kube = ResourceClient(api_client)
        public_key, document = enterprise_license(workdir)
        await kube.create(NAMESPACES, {"metadata": {"name": OPERATOR_NAMESPACE}})
        await kube.create(SECRETS, license_secret(document), namespace=OPERATOR_NAMESPACE)
        shared: TemporalServer | None = None
        if one_server:
            shared = TemporalServer.of(await stack.enter_async_context(start_temporal()))
            progress(f"one Temporal dev server (pid {shared.pid}) for the run")
        base = Bench(kube=kube, kubesim=kubesim, public_key=public_key, workdir=workdir, step=step)
        progress("kubesim up")
        for index, subject in enumerate(subjects):
            progress(f"--- {TITLES[subject]} ---")
            later_temporal = any(later in TEMPORAL_SUBJECTS for later in subjects[index + 1 :])
            try:
                async with contextlib.AsyncExitStack() as own:
                    bench = dataclasses.replace(base, server=shared)
                    if subject in TEMPORAL_SUBJECTS and shared is None:
                        env = await own.enter_async_context(start_temporal())
                        bench = dataclasses.replace(base, server=TemporalServer.of(env))
                        progress(
                            f"{subject}: a fresh Temporal dev server (pid {bench.temporal_pid})"
                        )
                    results[subject] = await run_subject(
                        bench,
                        subject,
                        batches=batches,
                        samples=samples,
                        cleanup=index < len(subjects) - 1,
                        terminate=shared is not None and later_temporal,
                    )
            except Exception as error:
                failures[subject] = f"{type(error).__name__}: {error}"
                progress(f"{subject}: FAILED: {failures[subject]}")
                traceback.print_exc(file=sys.stderr)
    return results, failures


def describe(subjects: Sequence[str], *, step: str) -> list[str]:
    """What ran, for the header lines."""
    parts = {
        "bare": "bare = _bare_loop.BareEntity + no-op activity behind an informer signal-with-starting"
        " on ADDED and generation changes (bench/_bare_operator.py)",
        "stackflow": "Stackflow = run_operator (real worker settings, watchers, workflows, reconcile"
        " step with scope check + license gate; dynamic scope; enterprise license) with a no-op"
        " Elasticsearch reconcile (bench/_stackflow_operator.py)",
        "kopf": "kopf = bench/_kopf_operator.py on its namespace (no-op on.create/update/resume)",
    }
    if "stackflow" in subjects:
        how = "a local activity" if step == "local" else "an activity"
        parts["stackflow"] += f" (its reconcile step as {how})"
    if TEMPORAL_SUBJECTS & set(subjects):
        defaults = OperatorConfig()
        cache = sticky_cache_size(
            defaults.temporal_max_cached_workflows, sandboxed=defaults.temporal_workflow_sandbox
        )
        runner = "sandboxed" if defaults.temporal_workflow_sandbox else "unsandboxed"
        parts["temporal"] = f"Temporal workers: {runner}, sticky cache of {cache} workflows"
    return [parts[key] for key in (*subjects, "temporal") if key in parts]


def main() -> None:
    """Parse flags, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--batches",
        type=int,
        nargs="+",
        default=list(DEFAULT_BATCHES),
        help="objects created at once, one batch per value (default: 500 5000)",
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_SAMPLES,
        help=f"spec-change latency samples per subject (default {DEFAULT_SAMPLES})",
    )
    parser.add_argument(
        "--subjects",
        nargs="+",
        choices=SUBJECTS,
        default=list(SUBJECTS),
        help="which subjects to run, in this order (default: bare stackflow kopf)",
    )
    parser.add_argument(
        "--one-temporal-server",
        action="store_true",
        help="one Temporal dev server for the whole run, each subject's running workflows"
        " terminated after it (default: a fresh dev server for each Temporal subject)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the subjects' events files and stderr logs here (default: a temporary dir)",
    )
    parser.add_argument(
        "--step",
        choices=("local", "activity"),
        default="local" if ELASTICSEARCH_CONTROLLER.local_step else "activity",
        help="Stackflow's reconcile step as a local activity (every controller but"
        " Elasticsearch) or an activity (the Elasticsearch row's own, the default)",
    )
    args = parser.parse_args()
    if min(args.batches) < 1 or args.samples < 1:
        parser.error("--batches and --samples must be at least 1")
    subjects = list(dict.fromkeys(args.subjects))
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        workdir = args.workdir
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="side_by_side-")))
        workdir.mkdir(parents=True, exist_ok=True)
        results, failures = asyncio.run(
            run(
                subjects,
                batches=args.batches,
                samples=args.samples,
                workdir=workdir,
                one_server=args.one_temporal_server,
                step=args.step,
            )
        )
    for line in describe(subjects, step=args.step):
        print(line)
    print(
        f"kubesim and the Temporal dev server on this machine ({os.cpu_count()} CPUs); each subject"
        " a subprocess, measured from its handler-start lines and /proc"
    )
    for subject, failure in failures.items():
        print(f"{TITLES[subject]} FAILED: {failure}")
    print_table(rows(results, args.batches), subjects)
    largest = max(args.batches)
    bare = results.get("bare")
    ours = results.get("stackflow")
    ratio = math.nan
    if bare is not None and ours is not None:
        ratio = ours.batches[largest].creates_per_second / bare.batches[largest].creates_per_second
    progress(f"done in {time.monotonic() - began:.0f} s")
    print(f"ratio operator/bare = {ratio:.2f}")
    sys.stdout.flush()
    sys.stderr.flush()
    # temporalio#300: the Rust core can abort at interpreter exit; nothing is left to clean up.
    os._exit(1 if failures else 0)


if __name__ == "__main__":
    main()
