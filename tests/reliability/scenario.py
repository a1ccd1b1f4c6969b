"""One reliability run: the load runs at a fixed rate while the seeded faults are injected one after
another; after each fault a probe change times the recovery; at the end every cluster must reach its
expected state. Shared by ``tests/reliability`` (a bounded size) and ``bench/reliability_bench.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus

from stackflow.models.kinds import CONFIGMAPS, PODS, SECRETS, SERVICES, STATEFULSETS
from tests.polling import eventually
from tests.reliability.faults import FAULTS, schedule
from tests.reliability.load import PROBE_NAMESPACE, WITNESS_NAMESPACE, Load, cluster_state
from tests.reliability.rig import Rig, open_rig

__all__ = ["Report", "Size", "run"]

#: An activity still retrying after this many attempts at the end counts as stuck.
STUCK_ATTEMPTS = 20


@dataclass(frozen=True)
class Size:
    """How big a run is."""

    namespaces: int
    per_namespace: int
    rounds: int
    replicas: int = 2
    #: Seconds between two changes of the load.
    change_interval: float = 1.0
    #: Seconds of plain load between two faults (the end of one, the start of the next).
    gap: float = 3.0
    #: Deadline of one recovery (a probe change applied) and of the final convergence.
    recovery_within: float = 240.0
    converge_within: float = 420.0


@dataclass
class Report:
    """What a run did and what it found."""

    seed: int
    clusters: int = 0
    objects: int = 0
    changes: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    observed: Counter[str] = field(default_factory=Counter)
    #: Workflow runs that ended by continuing as new (kills and restarts land among them).
    continued_as_new: int = 0
    recovery: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    #: Clusters that never reached their expected state, with what was wrong: changes lost.
    lost: dict[str, str] = field(default_factory=dict)
    #: Activities still retrying at the end (workflow id → attempt and last failure).
    stuck: dict[str, str] = field(default_factory=dict)
    exits: list[int] = field(default_factory=list)
    seconds: float = 0.0
    converge_seconds: float = 0.0

    def lines(self) -> list[str]:
        """The figures, one per line."""
        out = [
            f"seed {self.seed}: {self.clusters} Elasticsearch clusters, {self.objects} objects "
            f"in their namespaces, {self.seconds:.0f} s",
            "changes: "
            + ", ".join(f"{kind} {n}" for kind, n in sorted(self.changes.items()))
            + f" (total {sum(self.changes.values())})",
            "faults: "
            + ", ".join(f"{kind} {n}" for kind, n in sorted(self.faults.items()))
            + f" (total {sum(self.faults.values())})",
            "injected at the HTTP boundary: "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.injected.items())) or "none"),
            "answered by the API server itself: "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.observed.items())) or "none"),
            f"workflow runs continued as new during the run: {self.continued_as_new}",
            "recovery after each kind of fault (fault over → a probe change applied), p50 / p99:",
        ]
        for kind, seconds in sorted(self.recovery.items()):
            out.append(
                f"  {kind:<18} {percentile(seconds, 50):6.1f} s / {percentile(seconds, 99):6.1f} s"
                f"  ({len(seconds)} samples)"
            )
        out.append(f"final convergence after the load: {self.converge_seconds:.1f} s")
        out.append(f"changes lost: {len(self.lost)}")
        out.extend(f"  LOST {key}: {problem}" for key, problem in sorted(self.lost.items()))
        out.append(f"activities stuck retrying: {len(self.stuck)}")
        out.extend(f"  STUCK {key}: {problem}" for key, problem in sorted(self.stuck.items()))
        return out


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (inclusive method; the value itself for one sample)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def _probe(rig: Rig, load: Load, rng: random.Random, *, within: float) -> float:
    """Change a probe cluster and time until the operator applied it (its recovery)."""
    key = rng.choice(load.probe_keys)
    count = 3 - load.expected[key]
    started = time.monotonic()
    await load.set_count(key, count)
    load.changes["probe"] += 1

    async def applied() -> bool:
        return await cluster_state(rig.kube, key, count) is None

    await eventually(applied, within=within, what=f"probe {key} scaled to {count}")
    return time.monotonic() - started


async def _objects(rig: Rig, namespaces: list[str]) -> int:
    total = 0
    for namespace in namespaces:
        for kind in (STATEFULSETS, SERVICES, SECRETS, CONFIGMAPS, PODS):
            total += len((await rig.kube.list(kind, namespace=namespace))["items"])
    return total


async def _stuck(client: Client) -> dict[str, str]:
    """Running workflows with an activity past ``STUCK_ATTEMPTS`` attempts."""
    stuck: dict[str, str] = {}
    async for execution in client.list_workflows("ExecutionStatus = 'Running'"):
        if execution.status != WorkflowExecutionStatus.RUNNING:
            continue
        description = await client.get_workflow_handle(execution.id).describe()
        for pending in description.raw_description.pending_activities:
            if pending.attempt > STUCK_ATTEMPTS:
                stuck[execution.id] = (
                    f"{pending.activity_type.name} attempt {pending.attempt}: "
                    f"{pending.last_failure.message}"
                )
    return stuck


async def _continued_as_new(client: Client) -> int:
    return sum([1 async for _ in client.list_workflows("ExecutionStatus = 'ContinuedAsNew'")])


async def run(
    directory: Path,
    size: Size,
    *,
    seed: int,
    progress: Callable[[str], Any] = print,
) -> Report:
    """One run of ``size`` with ``seed``; the report (the caller asserts on it)."""
    rng = random.Random(seed)
    report = Report(seed=seed)
    started = time.monotonic()
    progress(f"reliability: seed {seed} (rerun with this seed to replay the same schedule)")
    async with open_rig(directory, seed=seed, replicas=size.replicas) as rig:
        namespaces = [f"rel-{i}" for i in range(size.namespaces)]
        faults = schedule(rng, rounds=size.rounds)
        load = Load(
            rig.kube,
            random.Random(rng.random()),
            namespaces,
            size.per_namespace,
            witnesses=len(faults),
        )
        await load.create()
        report.clusters = len(load.expected)

        await eventually(
            lambda: _converged(load), within=size.converge_within, what="the first clusters ready"
        )
        progress(f"reliability: {report.clusters} clusters ready; load and faults start")
        stop = asyncio.Event()
        changer = asyncio.create_task(load.run(interval=size.change_interval, stop=stop))
        try:
            for number, kind in enumerate(faults, start=1):
                await asyncio.sleep(size.gap)  # plain load between faults
                if changer.done():
                    changer.result()  # the load's own failure, if any
                progress(f"reliability: fault {number}: {kind}")
                await FAULTS[kind](rig, load, rng, functools.partial(load.witness, number))
                report.faults[kind] += 1
                seconds = await _probe(rig, load, rng, within=size.recovery_within)
                report.recovery[kind].append(seconds)
                progress(f"reliability: recovered from {kind} in {seconds:.1f} s")
        finally:
            stop.set()
            await changer
        # First the namespaces in scope as the load left them, with no new change: a change
        # lost there stays lost (nothing else would wake its cluster). Then every other
        # namespace flips in, and what changed there while out of scope must be applied.
        converging = time.monotonic()
        lost: dict[str, str] = {}
        for final in (False, True):
            if final:
                await load.all_in_scope()
            # Not reached is reported below, cluster by cluster, rather than raised here.
            with contextlib.suppress(AssertionError):
                await eventually(
                    lambda: _converged(load),
                    within=size.converge_within,
                    what="every cluster in scope in its expected state",
                )
            lost |= {str(key): problem for key, problem in (await load.not_converged()).items()}
        report.converge_seconds = time.monotonic() - converging
        report.lost = lost
        report.changes = load.changes
        report.injected = rig.proxy.injected
        report.objects = await _objects(rig, [*namespaces, PROBE_NAMESPACE, WITNESS_NAMESPACE])
        client = await rig.client()
        report.stuck = await _stuck(client)
        report.continued_as_new = await _continued_as_new(client)
        report.observed = rig.proxy.observed
    report.exits = rig.exits
    report.seconds = time.monotonic() - started
    return report


async def _converged(load: Load) -> bool:
    return not await load.not_converged()
