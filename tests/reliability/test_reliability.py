"""The reliability suite, in the size CI runs: a steady load over two operator replicas while every
kind of fault is injected once, in a seeded order; nothing may be lost.

``STACKFLOW_RELIABILITY_SEED`` replays a run's schedule (the seed is printed first);
``bench/reliability_bench.py`` runs the longer version and prints the figures.

How it fails: a change the operator lost leaves its cluster short of the node count the load last
asked for (or its generation unobserved) after the final convergence deadline; ``report.lost``
names each such cluster and what it shows, and the first assertion below prints them.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import pytest

from tests.reliability.scenario import Size, run

pytestmark = [pytest.mark.reliability]

#: The CI size: about 20 clusters (a few hundred objects with their children), every fault once.
CI_SIZE = Size(namespaces=4, per_namespace=5, rounds=1)


def _seed() -> int:
    configured = os.environ.get("STACKFLOW_RELIABILITY_SEED")
    return int(configured) if configured else random.SystemRandom().randrange(1, 2**31)


@pytest.mark.timeout(1800)
async def test_nothing_is_lost_under_faults(tmp_path: Path) -> None:
    report = await run(tmp_path, CI_SIZE, seed=_seed())
    figures = "\n".join(report.lines())
    print(figures)
    assert not report.lost, f"changes lost:\n{figures}"
    assert not report.stuck, f"activities stuck retrying:\n{figures}"
    assert set(report.faults) == {
        "operator-kill",
        "leader-kill",
        "temporal-restart",
        "temporal-outage",
        "apiserver-restart",
        "watch-cut",
        "api-5xx",
        "api-latency",
        "api-409",
        "es-down",
        "es-slow",
        "es-5xx",
    }, figures
    # Killed replicas died of SIGKILL; every other stop was clean.
    assert all(code in (0, -signal.SIGKILL) for code in report.exits), report.exits
    assert report.exits.count(0) == CI_SIZE.replicas, report.exits
