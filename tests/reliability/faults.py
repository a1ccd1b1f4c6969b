"""The faults the rig injects, one async function per kind, and the seeded schedule that orders them.

Each fault breaks one dependency of the operator and returns when the dependency is back (a
restarted process, the proxy healthy again); the scenario then times the recovery with a probe
change. Kills are aimed: a flip or a burst of spec changes is issued just before, so the kill lands
mid-flip fan-out or mid-reconcile; the Temporal server suggests continue-as-new early (see rig.py),
so kills and restarts also land mid-continue-as-new.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from tests.polling import eventually
from tests.reliability.load import Load
from tests.reliability.proxy import Faults
from tests.reliability.rig import Rig

__all__ = ["FAULTS", "Fault", "schedule"]

#: How long a window of proxy faults (errors, latency, conflicts) or a Temporal outage lasts.
WINDOW_SECONDS = 10.0

Fault = Callable[[Rig, Load, random.Random], Awaitable[None]]


async def _aim(load: Load, rng: random.Random) -> None:
    """Issue a flip and a few spec changes, then wait a random moment: what a kill interrupts."""
    await load.flip(namespace := rng.choice(load.namespaces), not load.in_scope[namespace])
    for _ in range(3):
        await load.change_once()
    await asyncio.sleep(rng.uniform(0.0, 1.0))  # the moment of the kill, seeded


async def kill_every_replica(rig: Rig, load: Load, rng: random.Random) -> None:
    """SIGKILL every replica at once (the single-replica case: nobody left to take over) mid-work."""
    await _aim(load, rng)
    for index in range(len(rig.operators)):
        await rig.kill_operator(index)


async def kill_leader(rig: Rig, load: Load, rng: random.Random) -> None:
    """SIGKILL the replica holding the Lease mid-work; the other must take over."""

    async def led() -> bool:
        return await rig.leader() is not None

    await eventually(led, within=120, what="a replica holds the Lease")
    await _aim(load, rng)
    leader = await rig.leader()
    await rig.kill_operator(leader if leader is not None else 0)


async def restart_temporal(rig: Rig, load: Load, rng: random.Random) -> None:
    """SIGKILL the Temporal server and start it again on its database at once."""
    await rig.restart_temporal(crash=True)


async def temporal_outage(rig: Rig, load: Load, rng: random.Random) -> None:
    """Temporal unreachable for a while: the load's changes in that window must not be lost."""
    await rig.restart_temporal(outage=WINDOW_SECONDS)


async def restart_apiserver(rig: Rig, load: Load, rng: random.Random) -> None:
    """Stop the API server (every watch ends) and start it again on its state file."""
    await rig.restart_kubesim()


async def cut_watches(rig: Rig, load: Load, rng: random.Random) -> None:
    """Drop every open watch three times in a row; resumed watches meet the small history window."""
    for _ in range(3):
        rig.proxy.cut_watches()
        await asyncio.sleep(1.0)  # the gap between the cuts: part of the fault


async def _proxy_window(rig: Rig, faults: Faults) -> None:
    rig.proxy.faults = faults
    try:
        await asyncio.sleep(WINDOW_SECONDS)  # the fault lasts this long
    finally:
        rig.proxy.faults = Faults()


async def api_errors(rig: Rig, load: Load, rng: random.Random) -> None:
    """A third of the operator's API requests answered 503 for a while."""
    await _proxy_window(rig, Faults(error_rate=0.33))


async def api_latency(rig: Rig, load: Load, rng: random.Random) -> None:
    """Half a second added to every API request for a while."""
    await _proxy_window(rig, Faults(latency=0.5))


async def api_conflicts(rig: Rig, load: Load, rng: random.Random) -> None:
    """Half of the operator's updates answered 409 Conflict for a while."""
    await _proxy_window(rig, Faults(conflict_rate=0.5))


async def elasticsearch_down(rig: Rig, load: Load, rng: random.Random) -> None:
    """The clusters' HTTP API refuses connections for a while."""
    await rig.elasticsearch_outage(WINDOW_SECONDS)


async def elasticsearch_slow(rig: Rig, load: Load, rng: random.Random) -> None:
    """The clusters' HTTP API answers after 3 seconds for a while."""
    rig.elasticsearch.state.latency = 3.0
    try:
        await asyncio.sleep(WINDOW_SECONDS)  # the fault lasts this long
    finally:
        rig.elasticsearch.state.latency = 0.0


async def elasticsearch_errors(rig: Rig, load: Load, rng: random.Random) -> None:
    """The clusters' HTTP API answers 503 (no master) for a while."""
    rig.elasticsearch.state.unavailable = True
    try:
        await asyncio.sleep(WINDOW_SECONDS)  # the fault lasts this long
    finally:
        rig.elasticsearch.state.unavailable = False


#: Every kind of fault, by the name the figures use.
FAULTS: dict[str, Fault] = {
    "operator-kill": kill_every_replica,
    "leader-kill": kill_leader,
    "temporal-restart": restart_temporal,
    "temporal-outage": temporal_outage,
    "apiserver-restart": restart_apiserver,
    "watch-cut": cut_watches,
    "api-5xx": api_errors,
    "api-latency": api_latency,
    "api-409": api_conflicts,
    "es-down": elasticsearch_down,
    "es-slow": elasticsearch_slow,
    "es-5xx": elasticsearch_errors,
}


def schedule(rng: random.Random, *, rounds: int) -> list[str]:
    """``rounds`` shuffled rounds of every fault kind (each round in its own seeded order)."""
    order: list[str] = []
    for _ in range(rounds):
        kinds = list(FAULTS)
        rng.shuffle(kinds)
        order += kinds
    return order
