"""The kopf half of the side-by-side benchmark: a no-op kopf operator for Elasticsearch on kubesim.

``run_kopf_side(kubeconfig, namespace=…, batches=…, latency_samples=…)`` starts
``bench/_kopf_operator.py`` (kopf, standalone, cluster-wide, Events posting off, no finalizers,
otherwise kopf's defaults — its docstring says what was chosen and why) as a subprocess against
the kubesim behind ``kubeconfig``, and measures it the way the Stackflow half measures its
operator:

* startup: ``WARM_OBJECTS`` Elasticsearch objects are created and waited for (kopf is ready once
  it has handled them), then the operator's CPU is let settle (see ``SubjectProcess.settle``) so
  that whatever it found already in the cluster is handled before anything is measured;
* ``change_latencies``: one at a time, a merge patch of ``spec`` (a generation bump) on one of
  those objects, from just before the PATCH is sent until kopf's update handler starts;
* ``creates_per_second``: for each batch size N, N objects created at once (``WRITE_CONCURRENCY``
  writers, as the Stackflow half's ``create_many``), from just before the first create until the
  last of the N create handlers starts: N / seconds;
* ``cpu_seconds_per_handled``: the operator process's user+system CPU (``/proc/<pid>/stat``, all
  its threads) from just before each batch until it is idle again after it (so kopf's follow-up
  PATCH of its ``last-handled-configuration`` annotation and the watch event that PATCH causes
  are counted), summed over the batches, divided by the objects of the batches;
* ``rss_bytes``: the process's ``VmRSS`` once it settled after the largest batch.

The handler writes ``time.time()`` when it starts, so every interval is wall-clock time across
the two processes, read from the events file the operator appends to and this side tails.

``SubjectProcess`` (any operator script appending those events lines), ``HandlerLog``,
``measure_change_latencies`` and ``measure_batch`` are not kopf's own: ``side_by_side_bench.py``
measures the bare Temporal loop and Stackflow with them too; ``KopfOperator`` is the kopf one.

Shared kubesim: a cluster-wide kopf handles every Elasticsearch object of the cluster, so other
objects present when it starts are handled (as creations) before measuring, and are reported;
do not run another operator on the same kubesim while this runs. ``cleanup`` (the default)
deletes the objects this side created once the operator has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from _operator_bench import WRITE_CONCURRENCY, elasticsearch
from _stack import bounded, progress

from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube import errors
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES

ES = ELASTICSEARCH
OPERATOR_SCRIPT = Path(__file__).resolve().with_name("_kopf_operator.py")
#: Objects created (and waited for) at startup; the latency samples cycle through them.
WARM_OBJECTS = 10
#: How often the events file (and the process's CPU, when settling) is read.
POLL_SECONDS = 0.02
SETTLE_POLL_SECONDS = 0.1
#: The operator is idle when it used less than this share of one core over ``SETTLE_WINDOW``.
IDLE_CPU_SHARE = 0.03
SETTLE_WINDOW = 1.0
START_WITHIN = 120.0
STOP_WITHIN = 15.0
LOG_TAIL_LINES = 40

Key = tuple[str, str]


@dataclass(frozen=True)
class KopfResult:
    """What the kopf half measured (all times in seconds)."""

    #: spec merge patch (generation bump) -> update handler start, one at a time.
    change_latencies: list[float]
    #: batch size N -> N created at once, until all N create handlers started: N / seconds.
    creates_per_second: dict[int, float]
    #: operator CPU (user+sys) per handled object, over the create batches until idle again.
    cpu_seconds_per_handled: float
    #: operator RSS once idle after the largest batch.
    rss_bytes: int
    #: batch size N -> N / seconds until the last create of the batch returned (the writer's pace,
    #: a ceiling on ``creates_per_second``).
    writes_per_second: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class HandlerCall:
    """One line of the events file: a handler started."""

    time: float
    reason: str
    namespace: str
    name: str
    generation: int


class HandlerLog:
    """The operator's events file, read incrementally; calls indexed by ``(namespace, name)``."""

    def __init__(self, path: Path) -> None:
        """Tail ``path`` (emptied here: lines of an earlier run must not count)."""
        path.write_bytes(b"")
        self._stream = path.open("rb")
        self._partial = b""
        self.calls: list[HandlerCall] = []
        self.by_key: dict[Key, list[HandlerCall]] = {}
        self.first_create: dict[Key, float] = {}

    def poll(self) -> int:
        """Read the lines appended since the last poll; how many there were."""
        data = self._partial + self._stream.read()
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            moment, reason, namespace, name, generation = line.decode().split(" ")
            call = HandlerCall(float(moment), reason, namespace, name, int(generation))
            self.calls.append(call)
            self.by_key.setdefault((namespace, name), []).append(call)
            if reason == "create":
                self.first_create.setdefault((namespace, name), call.time)
        return len(lines)

    def update_of(self, key: Key, generation: int) -> HandlerCall | None:
        """The first update handler call of ``key`` that saw ``generation``."""
        return next(
            (
                call
                for call in self.by_key.get(key, ())
                if call.reason == "update" and call.generation == generation
            ),
            None,
        )

    def has_update(self, key: Key, generation: int) -> bool:
        """Whether the update handler of ``key`` saw ``generation``."""
        return self.update_of(key, generation) is not None

    def created(self, keys: Collection[Key]) -> int:
        """How many of ``keys`` had their create handler called."""
        return sum(1 for key in keys if key in self.first_create)

    def outside(self, namespace: str) -> int:
        """Handler calls for objects of other namespaces."""
        return sum(1 for call in self.calls if call.namespace != namespace)

    def close(self) -> None:
        """Close the file."""
        self._stream.close()


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from ``/proc``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    # Fields after "pid (comm) ": state is field 3, utime 14 and stime 15.
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` in bytes (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a text file ("" when absent)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class SubjectProcess:
    """An operator under test as a subprocess: its handler calls (events file), CPU and memory.

    ``script`` is run with this interpreter as ``script --events <events file> *arguments``; it
    appends one ``HandlerLog`` line per handler start. ``name`` labels its files and messages.
    """

    def __init__(self, *, name: str, script: Path, arguments: Sequence[str], workdir: Path) -> None:
        """Prepare (events file and stderr log in ``workdir``); nothing runs until ``start``."""
        self.name = name
        self.script = script
        self.arguments = list(arguments)
        self.events_path = workdir / f"{name}-events.log"
        self.stderr_path = workdir / f"{name}-stderr.log"
        self.log = HandlerLog(self.events_path)
        self.process: asyncio.subprocess.Process | None = None
        self._stderr: TextIO | None = None

    @property
    def pid(self) -> int:
        """The running operator's process id."""
        if self.process is None:
            raise RuntimeError(f"the {self.name} operator is not running")
        return self.process.pid

    async def start(self) -> None:
        """Start the process (readiness is the caller's: handle an object, see ``wait_for``)."""
        self._stderr = self.stderr_path.open("a", encoding="utf-8")
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(self.script),
            "--events",
            str(self.events_path),
            *self.arguments,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=self._stderr,
        )

    def cpu_seconds(self) -> float:
        """The operator's user + system CPU seconds so far."""
        return process_cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        """The operator's resident memory now."""
        return process_rss_bytes(self.pid)

    def _check_alive(self) -> None:
        if self.process is None or self.process.returncode is not None:
            status = None if self.process is None else self.process.returncode
            raise RuntimeError(
                f"the {self.name} operator exited (status {status}); its stderr ends with:\n"
                + tail(self.stderr_path)
            )

    async def wait_for(self, condition: Callable[[], bool], *, within: float, what: str) -> None:
        """Poll the events file until ``condition()`` holds; TimeoutError after ``within`` s."""
        deadline = time.monotonic() + within
        while True:
            self.log.poll()
            if condition():
                return
            self._check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: {what} not within {within:.0f} s")
            await asyncio.sleep(POLL_SECONDS)

    async def settle(self, *, within: float = 300.0) -> None:
        """Until the operator used < ``IDLE_CPU_SHARE`` of a core over the last ``SETTLE_WINDOW``."""
        deadline = time.monotonic() + within
        samples: deque[tuple[float, float]] = deque()
        while True:
            self._check_alive()
            now, cpu = time.monotonic(), self.cpu_seconds()
            samples.append((now, cpu))
            while len(samples) > 1 and now - samples[1][0] >= SETTLE_WINDOW:
                samples.popleft()
            began, cpu_began = samples[0]
            if now - began >= SETTLE_WINDOW and cpu - cpu_began < IDLE_CPU_SHARE * (now - began):
                self.log.poll()
                return
            if now > deadline:
                raise TimeoutError(f"{self.name}: still busy after {within:.0f} s")
            await asyncio.sleep(SETTLE_POLL_SECONDS)

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after ``STOP_WITHIN`` s; the exit status (None: never started)."""
        process, self.process = self.process, None
        status: int | None = None
        if process is not None:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), timeout=STOP_WITHIN)
                except TimeoutError:
                    progress(f"{self.name}: no exit {STOP_WITHIN:.0f} s after SIGTERM; killing it")
                    process.kill()
                    await process.wait()
            status = process.returncode
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self.log.close()
        return status


class KopfOperator(SubjectProcess):
    """``bench/_kopf_operator.py`` as a subprocess: its handler calls, CPU and memory."""

    def __init__(self, *, kubeconfig: Path, workdir: Path, namespace: str | None = None) -> None:
        """Prepare (events file and stderr log in ``workdir``); nothing runs until ``start``.

        ``namespace`` None runs kopf cluster-wide; otherwise it watches that namespace only.
        """
        scope = [] if namespace is None else ["--namespace", namespace]
        super().__init__(
            name="kopf",
            script=OPERATOR_SCRIPT,
            arguments=["--kubeconfig", str(kubeconfig), *scope],
            workdir=workdir,
        )
        self.kubeconfig = kubeconfig
        self.namespace = namespace


async def stop_reporting(operator: SubjectProcess, name: str, *, failed: bool) -> None:
    """Stop ``operator``; after a failure show the end of its stderr, else a non-zero status."""
    status = await operator.stop()
    if failed:
        progress(f"{name}: failed; its stderr ({operator.stderr_path}) ends with:")
        print(tail(operator.stderr_path), file=sys.stderr, flush=True)
    elif status not in (0, None):
        progress(f"{name}: exited with status {status}")


async def ensure_namespace(kube: ResourceClient, namespace: str) -> None:
    """Create the namespace unless it exists."""
    with contextlib.suppress(errors.AlreadyExists):
        await kube.create(NAMESPACES, {"metadata": {"name": namespace}})


async def create_objects(kube: ResourceClient, namespace: str, names: Sequence[str]) -> None:
    """Create an Elasticsearch per name, ``WRITE_CONCURRENCY`` at a time (as ``create_many``)."""

    async def create(name: str) -> None:
        await kube.create(ES, elasticsearch(namespace, name), namespace=namespace)

    await bounded(names, create, limit=WRITE_CONCURRENCY)


async def delete_objects(kube: ResourceClient, namespace: str, names: Sequence[str]) -> None:
    """Delete the named Elasticsearch objects (absent ones are fine)."""

    async def delete(name: str) -> None:
        with contextlib.suppress(errors.NotFound):
            await kube.delete(ES, namespace=namespace, name=name)

    await bounded(names, delete, limit=WRITE_CONCURRENCY)


async def measure_change_latencies(
    operator: SubjectProcess,
    kube: ResourceClient,
    namespace: str,
    names: Sequence[str],
    *,
    samples: int,
) -> list[float]:
    """Patch ``spec`` of one object at a time (cycling through ``names``); seconds to handler."""
    latencies: list[float] = []
    for index in range(samples):
        key = (namespace, names[index % len(names)])
        began = time.time()
        patched = await kube.merge_patch(
            ES,
            {"spec": {"nodeSets": [{"name": "default", "count": 2 + index}]}},
            namespace=namespace,
            name=key[1],
        )
        generation = int(patched["metadata"]["generation"])
        await operator.wait_for(
            functools.partial(operator.log.has_update, key, generation),
            within=60,
            what=f"update handler of {key[1]} generation {generation}",
        )
        call = operator.log.update_of(key, generation)
        assert call is not None
        latencies.append(call.time - began)
    return latencies


@dataclass(frozen=True)
class BatchResult:
    """One create batch: its handled rate, the writer's rate, CPU used and RSS when idle."""

    creates_per_second: float
    writes_per_second: float
    cpu_seconds: float
    rss_bytes: int


async def measure_batch(
    operator: SubjectProcess, kube: ResourceClient, namespace: str, names: Sequence[str]
) -> BatchResult:
    """Create ``names`` at once; until every create handler started, then until kopf is idle."""
    keys = [(namespace, name) for name in names]
    cpu_before = operator.cpu_seconds()
    began = time.time()
    await create_objects(kube, namespace, names)
    written = time.time()
    await operator.wait_for(
        lambda: operator.log.created(keys) == len(keys),
        within=max(120.0, len(keys) * 0.2),
        what=f"{len(keys)} create handlers",
    )
    last = max(operator.log.first_create[key] for key in keys)
    await operator.settle()
    return BatchResult(
        creates_per_second=len(keys) / (last - began),
        writes_per_second=len(keys) / (written - began),
        cpu_seconds=operator.cpu_seconds() - cpu_before,
        rss_bytes=operator.rss_bytes(),
    )


async def run_kopf_side(
    kubeconfig: Path,
    *,
    namespace: str,
    batches: Sequence[int],
    latency_samples: int,
    kube: ResourceClient | None = None,
    clusterwide: bool = True,
    cleanup: bool = True,
    workdir: Path | None = None,
) -> KopfResult:
    """Run the kopf operator against the kubesim of ``kubeconfig`` and measure it.

    Objects are created in ``namespace`` (created if missing) through ``kube``, or through a
    client of our own on ``kubeconfig`` when None. ``clusterwide`` False runs kopf on
    ``namespace`` only. ``cleanup`` deletes the created objects once kopf has stopped.
    ``workdir`` keeps kopf's events file and stderr log (default: a temporary directory).
    On failure the tail of kopf's stderr is printed (to stderr) before the error propagates.
    """
    if not batches or min(batches) < 1 or latency_samples < 1:
        raise ValueError("batches must be positive sizes and latency_samples at least 1")
    async with contextlib.AsyncExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kopf_side-")))
        if kube is None:
            api_client = await make_api_client(kubeconfig=kubeconfig, context=None, timeout=60)
            stack.push_async_callback(close_api_client, api_client)
            kube = ResourceClient(api_client)
        operator = KopfOperator(
            kubeconfig=kubeconfig, workdir=workdir, namespace=None if clusterwide else namespace
        )
        result = await _run(
            kube,
            operator,
            namespace=namespace,
            batches=batches,
            latency_samples=latency_samples,
            cleanup=cleanup,
        )
    return result


async def _run(
    kube: ResourceClient,
    operator: KopfOperator,
    *,
    namespace: str,
    batches: Sequence[int],
    latency_samples: int,
    cleanup: bool,
) -> KopfResult:
    warm = [f"kopf-warm-{index}" for index in range(WARM_OBJECTS)]
    batch_names = [
        [f"kopf-b{number}-{index}" for index in range(size)] for number, size in enumerate(batches)
    ]
    await ensure_namespace(kube, namespace)
    failed = True
    try:
        await operator.start()
        began = time.monotonic()
        await create_objects(kube, namespace, warm)
        warm_keys = [(namespace, name) for name in warm]
        await operator.wait_for(
            lambda: operator.log.created(warm_keys) == len(warm_keys),
            within=START_WITHIN,
            what=f"the {len(warm)} warm-up objects",
        )
        progress(f"kopf: ready in {time.monotonic() - began:.1f} s; waiting for it to idle")
        await operator.settle()
        if outside := operator.log.outside(namespace):
            progress(f"kopf: also handled {outside} objects outside {namespace} at startup")
        progress(f"kopf: {latency_samples} spec-change latencies")
        latencies = await measure_change_latencies(
            operator, kube, namespace, warm, samples=latency_samples
        )
        results: dict[int, BatchResult] = {}
        cpu, handled = 0.0, 0
        rss = 0
        for size, names in zip(batches, batch_names, strict=True):
            progress(f"kopf: creating {size} objects at once")
            result = await measure_batch(operator, kube, namespace, names)
            results[size] = result
            cpu += result.cpu_seconds
            handled += size
            if size == max(batches):
                rss = result.rss_bytes
            progress(
                f"kopf: {size} handled at {result.creates_per_second:.1f}/s"
                f" (written at {result.writes_per_second:.1f}/s),"
                f" {result.cpu_seconds / size * 1000:.2f} ms CPU each"
            )
        failed = False
    finally:
        await stop_reporting(operator, "kopf", failed=failed)
        if cleanup:
            try:
                await delete_objects(kube, namespace, [*warm, *(n for b in batch_names for n in b)])
            except errors.KubeError as error:
                progress(f"kopf: could not delete the bench objects: {error!r}")
    return KopfResult(
        change_latencies=latencies,
        creates_per_second={size: result.creates_per_second for size, result in results.items()},
        cpu_seconds_per_handled=cpu / handled,
        rss_bytes=rss,
        writes_per_second={size: result.writes_per_second for size, result in results.items()},
    )


def describe() -> str:
    """One sentence on what the kopf operator is, for a bench's printed header."""
    return (
        "kopf = bench/_kopf_operator.py (kopf, standalone, cluster-wide, async no-op on.create +"
        " on.update(field=spec) + on.resume; Events posting off; no finalizers; otherwise kopf's"
        " defaults, incl. its last-handled-configuration annotation PATCH) as a subprocess"
    )
