"""ECK and Stackflow side by side, on one real API server, in one run.

Run: ``.venv/bin/python bench/eck_side_by_side_bench.py [--repeats N] [--namespaces 6|N]``.
Stackflow runs as the image runs it, with its runtime dependencies only (``bench/_runtime.py``;
``--environment dev`` runs it from the development venv instead, test and lint tools and all).
``--keep DIR`` keeps the logs, the plane and every Stackflow workflow's history (JSON, per run);
``--only eck|stackflow`` runs one operator alone (its figures, no ratio), to work on its speed.

One control plane of ``make tools`` (``controlplane.ControlPlane``); ECK's operator of ``make eck``
first, then Stackflow, each isolated as the parity tier isolates it (its own network namespace,
only the API server's and Temporal's ports relayed: tests/parity/isolate.py). ECK goes first so
that Stackflow, whose figures are the claim, runs on the server after it has already served a
whole run (a larger etcd, warm caches of nothing of its own): never to Stackflow's advantage.
ECK runs with its own CRDs (from Go's module cache), Stackflow with deploy/crds, applied over them
between the two, as each product's users install them. Each operator manages only its own
namespaces (``eck-…`` or ``sf-…``), selected by its own label value (``bench-scope=eck`` or
``bench-scope=stackflow``), with its own operator namespace (``eck-system``, ``stackflow-system``);
what the first made is deleted, and its namespaces gone, before the second starts.

``--namespaces 6`` (the default): each of ``--repeats`` runs starts the operator afresh (Stackflow
with a fresh Temporal dev server) in front of six namespaces, and measures:

- operator start → ready, from the operator process's start (``/proc``'s start time, 10 ms
  ticks; the isolation wrapper that starts it, about 0.1 s of a Python interpreter and relays, is
  not counted for either). ECK: the ``Starting workers`` line of its Elasticsearch controller (its
  informers synced and its reconcilers running; ECK 3.5 serves no readiness probe), from its log's
  timestamp. Stackflow: the first 200 of ``/readyz`` (informers synced, worker polling), polled in
  the operator's network namespace; its Temporal server, started afresh, has settled first (it
  burns a core for about half a second after it answers; deployed, it runs long before);
- trial Secret (``eck-trial`` in the operator namespace) → the StatefulSet of an Elasticsearch that
  waited on the license gate (the dynamic namespace selector is enterprise-gated in both);
- create an Elasticsearch → its StatefulSet exists;
- a namespace labelled into scope → the StatefulSet of the Elasticsearch already in it;
- relabel: the namespace of an Elasticsearch taken out of scope, its Pod template changed while
  out (a label; checked not applied for 2 s), labelled back → the change on the StatefulSet;
- a Kibana in another namespace referencing the Elasticsearch: the Elasticsearch's namespace
  leaves scope → the Kibana's ``status.elasticsearchAssociationStatus`` reads ``Pending`` (both
  write that field), comes back → ``Established``;
- each latency from the start of the action to the change, as a watch the API server opened
  before the action reports it (no polling interval in the figure);
- at the end of each run: RSS and CPU seconds (since its start) of the operator process (under
  the isolation wrapper, whose relays are not counted) and of Stackflow's Temporal dev server.

``--namespaces N`` (N > 6; 1,000 in the docs): one run per operator: N namespaces created at once
with one Elasticsearch each, every other one in scope; the time from the first creation until every
in-scope StatefulSet exists, then RSS and CPU once the operator is quiet (< 5 % of a core over
10 s, or 10 minutes).

Prints a table (one row per figure: ECK p50/p99, Stackflow p50/p99, the ratio of the p50s) and,
last, ``ratio stackflow/eck worst latency = X`` (the largest ratio over the latency rows).
Progress goes to stderr. Every wait is bounded; a wait that runs out drops that sample and says
so. Skips with one line without ECK's binary, the control plane, or ``unshare --net``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ holds the harness

from _eck_side import (
    Row,
    children,
    eck_ready_at,
    process_age,
    process_cpu_seconds,
    process_rss_mib,
    readyz_in_netns,
    render,
    temporal_pid,
    worst_latency_ratio,
)
from _runtime import add_environment_argument, operator_python, runtime_environment
from _stack import compile_project, start_temporal

from controlplane import ControlPlane
from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.kube.client import make_api_client
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES, SECRETS, STATEFULSETS
from tests.clusters import (
    OPERATOR_SERVICE_ACCOUNT,
    apiserver_unavailable,
    install_chart,
    install_crds,
)
from tests.e2e.harness import Operator, write_operator_config
from tests.parity.isolate import host_relays, isolated_argv, isolation_unavailable
from tests.parity.worlds import ECK, Isolated, eck_crds, eck_unavailable, fresh_plane

ES = kind_resource("Elasticsearch")
KB = kind_resource("Kibana")
VERSION = "9.4.3"
SCOPE_KEY = "bench-scope"
#: Stackflow's probe port inside its own network namespace (nothing else listens there).
HEALTH_PORT = 18081
POLL = 0.05
WAIT = 120.0
READY_WITHIN = 120.0
#: How long a relabel sample waits for the operator to see the namespace leave scope before the
#: template changes, then checks that the change is not applied while out (no event says it).
OUT_OF_SCOPE_SECONDS = 2.0
SCALE_WITHIN = 3600.0
QUIET_SHARE = 0.05
QUIET_WINDOW = 10.0
QUIET_WITHIN = 600.0
#: Stackflow's fresh Temporal server is settled when quiet over this window (seconds).
TEMPORAL_SETTLE_WINDOW = 0.25
CLEANUP_WITHIN = 900.0

_STARTED = time.monotonic()

START, TRIAL, CREATE, LABEL, RELABEL, PENDING, ESTABLISHED = (
    "operator start → ready",
    "trial Secret → StatefulSet of a gated Elasticsearch",
    "create Elasticsearch → StatefulSet",
    "namespace labelled into scope → StatefulSet",
    "relabel → pending template change on the StatefulSet",
    "association Pending after the Elasticsearch's namespace leaves scope",
    "association Established after it comes back",
)
ALL_IN_SCOPE = "all in-scope StatefulSets exist (from the first creation)"
LATENCIES = (CREATE, LABEL, RELABEL, PENDING, ESTABLISHED, TRIAL, START)


def progress(message: str) -> None:
    """Progress for humans, on stderr, with the seconds since the bench started."""
    elapsed = time.monotonic() - _STARTED
    # The wall clock too, to find a sample in the kept logs and histories.
    now = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
    print(f"[eck_side_by_side_bench {elapsed:7.1f}s {now}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Side:
    """One operator's share of the API server: its names, its label value, its namespace."""

    name: str
    prefix: str
    operator_namespace: str
    scope_value: str

    def labels(self, in_scope: bool) -> dict[str, str]:
        """The labels of one of its namespaces."""
        return {SCOPE_KEY: self.scope_value} if in_scope else {}


ECK_SIDE = Side("ECK", "eck", "eck-system", "eck")
STACKFLOW_SIDE = Side("Stackflow", "sf", "stackflow-system", "stackflow")


@dataclass
class Running:
    """A started operator: its process, its Temporal server's (Stackflow), its start → ready."""

    pid: int
    temporal: int | None
    ready_seconds: float | None
    gone: Callable[[], str | None]


@dataclass
class Bench:
    """The control plane and the admin client every step uses."""

    plane: ControlPlane
    kube: ResourceClient
    directory: Path
    token: Path | None = None
    keep_histories: bool = False
    #: The interpreter Stackflow runs on (the runtime venv, or the development venv's).
    python: Path = Path(sys.executable)


def elasticsearch(namespace: str, *, change: str | None = None) -> dict[str, Any]:
    """ECK's sample Elasticsearch (one node) named ``es``; ``change`` labels its Pod template."""
    labels = {"foo": "bar"} | ({"bench-change": change} if change else {})
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": "es", "namespace": namespace},
        "spec": {
            "version": VERSION,
            "nodeSets": [
                {
                    "name": "default",
                    "count": 1,
                    "config": {"node.store.allow_mmap": False},
                    "podTemplate": {"metadata": {"labels": labels}},
                }
            ],
        },
    }


def kibana(namespace: str, es_namespace: str) -> dict[str, Any]:
    """A Kibana named ``kb`` referencing ``es`` of ``es_namespace``."""
    return {
        "apiVersion": KB.api_version,
        "kind": "Kibana",
        "metadata": {"name": "kb", "namespace": namespace},
        "spec": {
            "version": VERSION,
            "count": 1,
            "elasticsearchRef": {"name": "es", "namespace": es_namespace},
        },
    }


async def make_namespace(kube: ResourceClient, side: Side, name: str, *, in_scope: bool) -> None:
    """Create one of ``side``'s namespaces, in its scope or not."""
    await kube.create(NAMESPACES, {"metadata": {"name": name, "labels": side.labels(in_scope)}})


async def set_scope(kube: ResourceClient, side: Side, name: str, in_scope: bool) -> None:
    """Label ``name`` into ``side``'s scope, or take the label off."""
    value = side.scope_value if in_scope else None
    patch = {"metadata": {"labels": {SCOPE_KEY: value}}}
    await kube.merge_patch(NAMESPACES, patch, namespace=None, name=name)


async def get(kube: ResourceClient, kind: Any, namespace: str, name: str) -> dict[str, Any] | None:
    """An object, or None."""
    try:
        found: dict[str, Any] = await kube.get(kind, namespace=namespace, name=name)
    except errors.NotFound:
        return None
    return found


async def until(
    check: Callable[[], Awaitable[bool]], *, started: float, within: float = WAIT
) -> float | None:
    """Seconds from ``started`` (``time.monotonic``) until ``check`` holds; None after ``within``."""
    while time.monotonic() - started < within:
        if await check():
            return time.monotonic() - started
        await asyncio.sleep(POLL)
    return None


SSET = "es-es-default"


def exists(_obj: Mapping[str, Any]) -> bool:
    """Any object: it is there."""
    return True


def carries_change(change: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a StatefulSet's Pod template carries the label ``bench-change=change``."""

    def holds(sset: Mapping[str, Any]) -> bool:
        template = (sset.get("spec") or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        return bool(labels.get("bench-change") == change)

    return holds


def association_reads(wanted: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a Kibana's association status reads ``wanted``."""

    def holds(kb: Mapping[str, Any]) -> bool:
        return bool((kb.get("status") or {}).get("elasticsearchAssociationStatus") == wanted)

    return holds


def polled(
    kube: ResourceClient,
    kind: Any,
    namespace: str,
    name: str,
    holds: Callable[[Mapping[str, Any]], bool],
) -> Callable[[], Awaitable[bool]]:
    """A check for ``until``: object ``name`` is there and ``holds`` accepts it."""

    async def check() -> bool:
        obj = await get(kube, kind, namespace, name)
        return obj is not None and holds(obj)

    return check


async def timed(
    kube: ResourceClient,
    kind: Any,
    namespace: str,
    name: str,
    holds: Callable[[Mapping[str, Any]], bool],
    act: Callable[[], Awaitable[Any]],
    *,
    within: float = WAIT,
) -> float | None:
    """Seconds from the start of ``act`` until object ``name`` is seen in a state ``holds``
    accepts; None after ``within``.

    Seen by a watch the API server has opened before ``act`` starts: the figure is when the
    server announced the change (a poll every ``POLL`` would add up to 50 ms, and round every
    figure up to its next poll).
    """
    opened = asyncio.Event()

    async def seen() -> None:
        # From resourceVersion 0, and no list first: a consistent list, or a watch from no
        # version, makes the API server ask etcd for the progress of that kind's watch cache,
        # and a consistent read within the next 100 ms (the operator's own, moments later)
        # waits for the next such request: the bench would slow down the operator it measures.
        # The stream starts with the objects there are (as the server's cache holds them); each
        # caller has checked that they do not satisfy ``holds`` yet.
        async for event in kube.watch(
            kind,
            namespace=namespace,
            resource_version="0",
            timeout_seconds=int(within) + 5,
            opened=opened,
        ):
            obj = event.get("object") or {}
            if (
                event.get("type") in ("ADDED", "MODIFIED")
                and (obj.get("metadata") or {}).get("name") == name
                and holds(obj)
            ):
                return
        raise RuntimeError(f"the watch of {kind.plural} in {namespace} ended")

    watching = asyncio.create_task(seen())
    try:
        opening = asyncio.create_task(opened.wait())
        await asyncio.wait({opening, watching}, return_when=asyncio.FIRST_COMPLETED)
        opening.cancel()
        if watching.done():
            watching.result()  # the watch failed before it opened: raise that
        started = time.monotonic()
        await act()
        try:
            await asyncio.wait_for(asyncio.shield(watching), within)
        except TimeoutError:
            return None
        return time.monotonic() - started
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watching


def record(figures: dict[str, list[float]], name: str, took: float | None, side: Side) -> None:
    """Keep a sample, or say that its wait ran out."""
    if took is None:
        progress(f"{side.name}: {name}: not reached within {WAIT:g} s (sample dropped)")
    else:
        figures[name].append(took)
        progress(f"{side.name}: {name}: {took:.2f} s")


async def trial(kube: ResourceClient, side: Side) -> None:
    """Start the enterprise trial in ``side``'s operator namespace."""
    body = {
        "metadata": {
            "name": "eck-trial",
            "namespace": side.operator_namespace,
            "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
            "annotations": {"elastic.co/eula": "accepted"},
        }
    }
    await kube.create(SECRETS, body, namespace=side.operator_namespace)


async def forget_trial(kube: ResourceClient, side: Side) -> None:
    """Delete the trial and its status, so that the next run starts its own trial afresh (both
    operators start a trial once per ``trial-status`` Secret)."""
    for name in ("eck-trial", "trial-status"):
        with contextlib.suppress(errors.NotFound):
            await kube.delete(SECRETS, namespace=side.operator_namespace, name=name)


def operator_pid(wrapper: Isolated) -> int | None:
    """The operator under the isolation wrapper (the wrapper's one child)."""
    assert wrapper.process is not None
    found = children(wrapper.process.pid)
    return found[0] if found else None


async def wait_pid(wrapper: Isolated) -> int:
    """The operator's pid, once the wrapper has started it."""
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        pid = operator_pid(wrapper)
        if pid is not None:
            return pid
        gone = wrapper.gone()
        if gone:
            raise RuntimeError(gone)
        await asyncio.sleep(POLL)
    raise RuntimeError("the isolation wrapper never started the operator")


def eck_config(path: Path) -> Path:
    """ECK's configuration: ECK's namespaces only, webhook, leader election, metrics off."""
    config = {
        "operator-namespace": ECK_SIDE.operator_namespace,
        "namespace-selector": {"matchLabels": {SCOPE_KEY: ECK_SIDE.scope_value}},
        "enable-webhook": False,
        "enable-leader-election": False,
        "metrics-port": 0,
        "disable-telemetry": True,
    }
    path.write_text(yaml.safe_dump(config))
    return path


@contextlib.asynccontextmanager
async def eck_operator(bench: Bench, directory: Path) -> AsyncIterator[Running]:
    """ECK's operator, isolated, with the admin kubeconfig (as the parity tier runs it)."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    port = bench.plane.apiserver_port
    relays = directory / "relays"
    log = directory / "eck.log"
    command = [str(ECK), "manager", f"--config={eck_config(directory / 'eck.yaml')}"]
    env = {
        **os.environ,
        "KUBECONFIG": str(bench.plane.admin_kubeconfig),
        # Its APM agent would dial the cloud metadata address otherwise.
        "ELASTIC_APM_ACTIVE": "false",
        "ELASTIC_APM_CLOUD_PROVIDER": "none",
    }
    wrapper = Isolated(isolated_argv(relays, [port], command), env=env, log=log)
    async with host_relays(relays, [port]):
        await wrapper.start()
        try:
            ready = await eck_ready_at(log, within=READY_WITHIN)
            pid = await wait_pid(wrapper)
            # From the operator process's own start: the isolation wrapper's is not its.
            started = time.time() - process_age(pid)
            seconds = None if ready is None else ready - started
            yield Running(pid=pid, temporal=None, ready_seconds=seconds, gone=wrapper.gone)
        finally:
            await wrapper.stop()


@contextlib.asynccontextmanager
async def stackflow_operator(bench: Bench, directory: Path) -> AsyncIterator[Running]:
    """``stackflow run`` isolated, with the chart's ServiceAccount token and a fresh Temporal dev
    server (the Temporal server is started before the operator's clock)."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    assert bench.token is not None
    async with start_temporal() as temporal:
        address = temporal.client.service_client.config.target_host
        settings = {
            "disable-telemetry": True,
            "operator-namespace": STACKFLOW_SIDE.operator_namespace,
            "namespace-selector": {"matchLabels": {SCOPE_KEY: STACKFLOW_SIDE.scope_value}},
        }
        config = write_operator_config(
            directory / "operator.yaml", temporal=temporal, settings=settings
        )
        argv = Operator(config=config, kubeconfig=bench.token, log=directory / "unused.log").argv
        argv[argv.index("--health-port") + 1] = str(HEALTH_PORT)
        argv[0] = str(bench.python)
        ports = [bench.plane.apiserver_port, int(address.rsplit(":", 1)[1])]
        # A Temporal server that has just started burns a core for about half a second (its
        # own start-up, the search attributes): deployed, it runs long before the operator.
        temporal_process = temporal_pid(address)
        if temporal_process is not None:
            await quiet(temporal_process, window=TEMPORAL_SETTLE_WINDOW, within=10.0)
        relays = directory / "relays"
        wrapper = Isolated(
            isolated_argv(relays, ports, argv),
            env=runtime_environment({**os.environ, "PYTHONUNBUFFERED": "1"}),
            log=directory / "stackflow.log",
        )
        async with host_relays(relays, ports):
            await wrapper.start()
            try:
                assert wrapper.process is not None
                ready = await readyz_in_netns(wrapper.process.pid, HEALTH_PORT, within=READY_WITHIN)
                pid = await wait_pid(wrapper)
                # From the operator process's own start: the isolation wrapper's is not its.
                started = time.monotonic() - process_age(pid)
                yield Running(
                    pid=pid,
                    temporal=temporal_process,
                    ready_seconds=None if ready is None else ready - started,
                    gone=wrapper.gone,
                )
            finally:
                await wrapper.stop()
                if bench.keep_histories:
                    await dump_histories(temporal.client, directory / "histories")


async def dump_histories(client: Any, directory: Path) -> None:
    """Every workflow's history as JSON (``--keep``): where a latency went, event by event."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    async for execution in client.list_workflows():
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        name = f"{execution.id.replace('/', '_')}-{execution.run_id[:8]}.json"
        await asyncio.to_thread((directory / name).write_text, history.to_json())


def operator(
    bench: Bench, side: Side, directory: Path
) -> contextlib.AbstractAsyncContextManager[Running]:
    """The operator of ``side``."""
    return (eck_operator if side is ECK_SIDE else stackflow_operator)(bench, directory)


def costs(figures: dict[str, list[float]], running: Running) -> None:
    """RSS and CPU seconds of the operator and of its Temporal server, now."""
    rss, cpu = process_rss_mib(running.pid), process_cpu_seconds(running.pid)
    figures["operator RSS"].append(rss)
    figures["operator CPU"].append(cpu)
    if running.temporal is not None:
        temporal_rss = process_rss_mib(running.temporal)
        temporal_cpu = process_cpu_seconds(running.temporal)
        figures["Temporal RSS"].append(temporal_rss)
        figures["Temporal CPU"].append(temporal_cpu)
        rss, cpu = rss + temporal_rss, cpu + temporal_cpu
    figures["RSS summed"].append(rss)
    figures["CPU summed"].append(cpu)


async def delete_stack(kube: ResourceClient, objects: Sequence[tuple[Any, str]]) -> None:
    """Delete the stack objects ``(kind, namespace)`` (named ``es``/``kb``) and wait until they
    are gone (Stackflow's finalizers need the operator still running)."""
    for kind, namespace in objects:
        with contextlib.suppress(errors.NotFound):
            await kube.delete(kind, namespace=namespace, name="kb" if kind is KB else "es")

    async def gone() -> bool:
        for kind, namespace in objects:
            if await get(kube, kind, namespace, "kb" if kind is KB else "es") is not None:
                return False
        return True

    if await until(gone, started=time.monotonic()) is None:
        progress(f"stack objects still there after {WAIT:g} s; going on")


async def one_repeat(bench: Bench, side: Side, index: int, figures: dict[str, list[float]]) -> None:
    """One run of the operator over the six namespaces; its samples into ``figures``."""
    kube = bench.kube

    def ns(what: str) -> str:
        return f"{side.prefix}-r{index}-{what}"

    gate, create, label, aes, akb = ns("gate"), ns("create"), ns("label"), ns("aes"), ns("akb")
    await make_namespace(kube, side, gate, in_scope=True)
    await kube.create(ES, elasticsearch(gate), namespace=gate)
    await make_namespace(kube, side, create, in_scope=True)
    await make_namespace(kube, side, label, in_scope=False)
    await kube.create(ES, elasticsearch(label), namespace=label)
    await make_namespace(kube, side, aes, in_scope=True)
    await make_namespace(kube, side, akb, in_scope=True)
    async with operator(bench, side, bench.directory / f"{side.prefix}-{index}") as running:
        if running.ready_seconds is None:
            progress(f"{side.name}: not ready within {READY_WITHIN:g} s (sample dropped)")
        else:
            record(figures, START, running.ready_seconds, side)
        took = await timed(kube, STATEFULSETS, gate, SSET, exists, lambda: trial(kube, side))
        record(figures, TRIAL, took, side)

        took = await timed(
            kube,
            STATEFULSETS,
            create,
            SSET,
            exists,
            lambda: kube.create(ES, elasticsearch(create), namespace=create),
        )
        record(figures, CREATE, took, side)

        took = await timed(
            kube, STATEFULSETS, label, SSET, exists, lambda: set_scope(kube, side, label, True)
        )
        record(figures, LABEL, took, side)

        await relabel(bench, side, create, f"r{index}", figures)

        # The association's pair is made once the figures above are taken, so that its
        # reconciles do not run beside theirs.
        await kube.create(ES, elasticsearch(aes), namespace=aes)
        await kube.create(KB, kibana(akb, aes), namespace=akb)

        established = polled(kube, KB, akb, "kb", association_reads("Established"))
        if await until(established, started=time.monotonic()) is None:
            progress(f"{side.name}: the association never got Established; no flip measured")
        else:
            for in_scope, wanted, name in (
                (False, "Pending", PENDING),
                (True, "Established", ESTABLISHED),
            ):
                took = await timed(
                    kube,
                    KB,
                    akb,
                    "kb",
                    association_reads(wanted),
                    functools.partial(set_scope, kube, side, aes, in_scope),
                )
                record(figures, name, took, side)
            await set_scope(kube, side, aes, True)

        gone = running.gone()
        if gone:
            raise RuntimeError(gone)
        costs(figures, running)
        await delete_stack(kube, [(KB, akb), (ES, gate), (ES, create), (ES, label), (ES, aes)])
    for name in (gate, create, label, aes, akb):
        with contextlib.suppress(errors.NotFound):
            await kube.delete(NAMESPACES, namespace=None, name=name)
    await forget_trial(kube, side)


async def relabel(
    bench: Bench, side: Side, namespace: str, change: str, figures: dict[str, list[float]]
) -> None:
    """Out of scope, the template changed while out, back in: until the change is applied."""
    kube = bench.kube
    await set_scope(kube, side, namespace, False)
    # No object says that an operator saw a namespace leave its scope: give it time to, then
    # check that the change stays unapplied while out.
    await asyncio.sleep(OUT_OF_SCOPE_SECONDS)
    body = elasticsearch(namespace, change=change)
    await kube.merge_patch(ES, {"spec": body["spec"]}, namespace=namespace, name="es")
    changed = carries_change(change)
    applied = await until(
        polled(kube, STATEFULSETS, namespace, SSET, changed),
        started=time.monotonic(),
        within=OUT_OF_SCOPE_SECONDS,
    )
    took = await timed(
        kube, STATEFULSETS, namespace, SSET, changed, lambda: set_scope(kube, side, namespace, True)
    )
    if applied is not None:
        progress(
            f"{side.name}: relabel: the change was applied while out of scope (sample dropped)"
        )
        return
    record(figures, RELABEL, took, side)


async def quiet(pid: int, *, window: float = QUIET_WINDOW, within: float = QUIET_WITHIN) -> None:
    """Until process ``pid`` used < ``QUIET_SHARE`` of a core over ``window`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = process_cpu_seconds(pid)
        await asyncio.sleep(window)
        if process_cpu_seconds(pid) - before < QUIET_SHARE * window:
            return
    progress(f"still busy after {within:g} s; measuring anyway")


async def scale(bench: Bench, side: Side, count: int, figures: dict[str, list[float]]) -> None:
    """``count`` namespaces, every other one in scope, an Elasticsearch each, created at once."""
    kube = bench.kube
    names = [f"{side.prefix}-s{index:05d}" for index in range(count)]
    in_scope = set(names[::2])
    async with operator(bench, side, bench.directory / f"{side.prefix}-scale") as running:
        if running.ready_seconds is not None:
            record(figures, START, running.ready_seconds, side)
        await trial(kube, side)
        gate = asyncio.Semaphore(8)

        async def one(name: str) -> None:
            async with gate:
                await make_namespace(kube, side, name, in_scope=name in in_scope)
                await kube.create(ES, elasticsearch(name), namespace=name)

        started = time.monotonic()
        await asyncio.gather(*(one(name) for name in names))
        progress(
            f"{side.name}: {count} namespaces and Elasticsearch created in {time.monotonic() - started:.0f} s"
        )
        seen: set[str] = set()
        last = 0.0

        async def all_there() -> bool:
            nonlocal last
            # From the watch cache: a consistent list every 50 ms would make the operator's own
            # consistent StatefulSet lists wait for the server's watch-progress requests.
            listed = await kube.list(
                STATEFULSETS,
                label_selector="common.k8s.elastic.co/type=elasticsearch",
                from_watch_cache=True,
            )
            seen.update(item["metadata"]["namespace"] for item in listed["items"])
            there = len(in_scope & seen)
            if time.monotonic() - last > 30:
                last = time.monotonic()
                progress(f"{side.name}: {there}/{len(in_scope)} StatefulSets")
            gone = running.gone()
            if gone:
                raise RuntimeError(gone)
            return there == len(in_scope)

        took = await until(all_there, started=started, within=SCALE_WITHIN)
        record(figures, ALL_IN_SCOPE, took, side)
        if seen - in_scope:
            progress(
                f"{side.name}: {len(seen - in_scope)} out-of-scope namespaces got a StatefulSet"
            )
        await quiet(running.pid)
        costs(figures, running)
    await forget_trial(kube, side)


async def namespaces_gone(kube: ResourceClient, side: Side) -> None:
    """Delete ``side``'s namespaces and its operator namespace; wait until they are gone."""
    prefix = f"{side.prefix}-"
    listed = await kube.list(NAMESPACES)
    names = [
        item["metadata"]["name"]
        for item in listed["items"]
        if item["metadata"]["name"].startswith(prefix)
        or item["metadata"]["name"] == side.operator_namespace
    ]
    for name in names:
        with contextlib.suppress(errors.NotFound):
            await kube.delete(NAMESPACES, namespace=None, name=name)

    async def gone() -> bool:
        left = {item["metadata"]["name"] for item in (await kube.list(NAMESPACES))["items"]}
        return not left & set(names)

    progress(f"{side.name}: deleting {len(names)} namespaces")
    took = await until(gone, started=time.monotonic(), within=CLEANUP_WITHIN)
    if took is None:
        progress(f"{side.name}: namespaces still terminating after {CLEANUP_WITHIN:g} s; going on")
    else:
        progress(f"{side.name}: its namespaces gone after {took:.0f} s")


async def run_side(
    bench: Bench, side: Side, *, repeats: int, namespaces: int
) -> dict[str, list[float]]:
    """Every run of one operator; its samples by figure."""
    figures: dict[str, list[float]] = defaultdict(list)
    await make_namespace(bench.kube, side, side.operator_namespace, in_scope=False)
    if side is STACKFLOW_SIDE:
        await asyncio.to_thread(install_chart, bench.plane, namespace=side.operator_namespace)
        bench.token = await asyncio.to_thread(
            bench.plane.token_kubeconfig,
            bench.directory / "operator.kubeconfig",
            namespace=side.operator_namespace,
            service_account=OPERATOR_SERVICE_ACCOUNT,
        )
    if namespaces > 6:
        await scale(bench, side, namespaces, figures)
        return figures
    for index in range(1, repeats + 1):
        progress(f"{side.name}: run {index}/{repeats}")
        await one_repeat(bench, side, index, figures)
    return figures


async def measure(
    repeats: int,
    namespaces: int,
    keep: Path | None,
    *,
    only: str | None = None,
    python: Path,
) -> list[Row]:
    """Both operators (or ``only`` one) on one control plane; the table's rows."""
    with contextlib.ExitStack() as stack:
        directory = keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="eck-side-"))
        )
        crds = await asyncio.to_thread(eck_crds)
        progress(f"control plane starting; ECK with {'its own CRDs' if crds else 'deploy/crds'}")
        async with fresh_plane(directory / "plane", crds=crds) as plane:
            client = await make_api_client(
                kubeconfig=plane.admin_kubeconfig, context=None, timeout=30
            )
            try:
                bench = Bench(
                    plane=plane,
                    kube=ResourceClient(client),
                    directory=directory,
                    keep_histories=keep is not None,
                    python=python,
                )
                eck: dict[str, list[float]] = {}
                stackflow: dict[str, list[float]] = {}
                if only in (None, "eck"):
                    eck = await run_side(bench, ECK_SIDE, repeats=repeats, namespaces=namespaces)
                    await namespaces_gone(bench.kube, ECK_SIDE)
                if only in (None, "stackflow"):
                    if crds is not None:
                        await asyncio.to_thread(install_crds, plane)
                    stackflow = await run_side(
                        bench, STACKFLOW_SIDE, repeats=repeats, namespaces=namespaces
                    )
            finally:
                await client.close()
    return rows(eck, stackflow, scale=namespaces > 6)


def rows(
    eck: dict[str, list[float]], stackflow: dict[str, list[float]], *, scale: bool
) -> list[Row]:
    """The table's rows, latencies first (pure)."""
    latencies = (ALL_IN_SCOPE, START) if scale else LATENCIES
    table = [Row(name, "s", True, eck.get(name, []), stackflow.get(name, [])) for name in latencies]
    when = "settled" if scale else "at the end of a run"
    for name, unit in (
        ("operator RSS", "MiB"),
        ("Temporal RSS", "MiB"),
        ("RSS summed", "MiB"),
        ("operator CPU", "CPU s"),
        ("Temporal CPU", "CPU s"),
        ("CPU summed", "CPU s"),
    ):
        table.append(
            Row(f"{name}, {when}", unit, False, eck.get(name, []), stackflow.get(name, []))
        )
    return table


def unavailable() -> str | None:
    """Why the bench cannot run here, or None."""
    why: str | None = apiserver_unavailable() or eck_unavailable() or isolation_unavailable()
    return why


def main() -> int:
    """Entry point; exits 0 with one line when something it needs is missing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="runs per operator (10)")
    parser.add_argument("--namespaces", type=int, default=6, help="6, or more for the scale run")
    parser.add_argument("--keep", type=Path, help="keep the logs and the plane in this directory")
    parser.add_argument(
        "--only",
        choices=("eck", "stackflow"),
        help="run one operator (its figures alone; no ratio): for working on one side's speed",
    )
    add_environment_argument(parser)
    args = parser.parse_args()
    why = unavailable()
    if why:
        print(
            why.replace("parity tier", "eck side-by-side bench").replace(
                "apiserver tier", "eck side-by-side bench"
            )
        )
        return 0
    compile_project()
    python, environment = operator_python(args.environment, progress)
    # Temporal and the operators inherit descriptor 1: keep it for the figures.
    sys.stdout.flush()
    figures = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    table = asyncio.run(
        measure(args.repeats, args.namespaces, args.keep, only=args.only, python=python)
    )
    with contextlib.redirect_stdout(figures):
        mode = "" if args.namespaces > 6 else f", {args.repeats} runs each"
        print(
            f"ECK 3.5.0 and Stackflow ({environment} environment) on one API server,"
            f" {args.namespaces} namespaces{mode}"
        )
        for line in render(table):
            print(line)
        worst = worst_latency_ratio(table)
        print(f"ratio stackflow/eck worst latency = {'n/a' if worst is None else f'{worst:.2f}'}")
    figures.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
