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

__all__ = ["FAULTS", "Fault", "Witness", "schedule"]

#: How long a window of proxy or Elasticsearch faults, or a Temporal outage, lasts.
WINDOW_SECONDS = 10.0

#: Makes the fault's witness change (see ``Fault``).
Witness = Callable[[], Awaitable[None]]
#: A fault: breaks something, calls ``witness()`` once while it is broken (or, for a kill,
#: just before, so the change is in flight), and returns when the thing works again. The
#: witness is a cluster no other change touches, so a change lost to the fault stays visible
#: at the end instead of being repaired by a later change of the same cluster.
Fault = Callable[[Rig, Load, random.Random, Witness], Awaitable[None]]


async def _aim(load: Load, rng: random.Random, witness: Witness) -> None:
    """Issue a flip, a few spec changes and the witness, then wait a random moment: what a kill
    interrupts."""
    await load.flip(namespace := rng.choice(load.namespaces), not load.in_scope[namespace])
    for _ in range(3):
        await load.change_once()
    await witness()
    await asyncio.sleep(rng.uniform(0.0, 1.0))  # the moment of the kill, seeded


async def _window(witness: Witness) -> None:
    """The fault's duration, with the witness change in its middle."""
    await asyncio.sleep(WINDOW_SECONDS / 2)  # the fault lasts this long
    await witness()
    await asyncio.sleep(WINDOW_SECONDS / 2)


async def kill_every_replica(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """SIGKILL every replica at once (the single-replica case: nobody left to take over) mid-work."""
    await _aim(load, rng, witness)
    for index in range(len(rig.operators)):
        await rig.kill_operator(index)


async def kill_leader(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """SIGKILL the replica holding the Lease mid-work; the other must take over."""

    async def led() -> bool:
        return await rig.leader() is not None

    await eventually(led, within=120, what="a replica holds the Lease")
    await _aim(load, rng, witness)
    leader = await rig.leader()
    await rig.kill_operator(leader if leader is not None else 0)


async def restart_temporal(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """SIGKILL the Temporal server and start it again on its database at once."""
    await rig.stop_temporal(crash=True)
    await witness()
    await rig.start_temporal()


async def temporal_outage(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """Temporal unreachable for a while: the changes of that window must not be lost."""
    await rig.stop_temporal(crash=False)
    await _window(witness)
    await rig.start_temporal()


async def restart_apiserver(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """Stop the API server (every watch ends) and start it again on its state file; the witness
    is the first change after it (while the operator's watches resume into 410 Expired)."""
    await rig.restart_kubesim()
    await witness()


async def cut_watches(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """Drop every open watch three times in a row; resumed watches meet the small history window."""
    rig.proxy.cut_watches()
    await witness()
    for _ in range(2):
        await asyncio.sleep(1.0)  # the gap between the cuts: part of the fault
        rig.proxy.cut_watches()


async def _proxy_window(rig: Rig, faults: Faults, witness: Witness) -> None:
    rig.proxy.faults = faults
    try:
        await _window(witness)
    finally:
        rig.proxy.faults = Faults()


async def api_errors(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """A third of the operator's API requests answered 503 for a while."""
    await _proxy_window(rig, Faults(error_rate=0.33), witness)


async def api_latency(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """Half a second added to every API request for a while."""
    await _proxy_window(rig, Faults(latency=0.5), witness)


async def api_conflicts(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """Half of the operator's updates answered 409 Conflict for a while."""
    await _proxy_window(rig, Faults(conflict_rate=0.5), witness)


async def elasticsearch_down(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """The clusters' HTTP API refuses connections for a while."""
    await rig.stop_elasticsearch()
    try:
        await _window(witness)
    finally:
        await rig.start_elasticsearch()


async def elasticsearch_slow(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """The clusters' HTTP API answers after 3 seconds for a while."""
    rig.elasticsearch.state.latency = 3.0
    try:
        await _window(witness)
    finally:
        rig.elasticsearch.state.latency = 0.0


async def elasticsearch_errors(rig: Rig, load: Load, rng: random.Random, witness: Witness) -> None:
    """The clusters' HTTP API answers 503 (no master) for a while."""
    rig.elasticsearch.state.unavailable = True
    try:
        await _window(witness)
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
