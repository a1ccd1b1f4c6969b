"""The steady load: Elasticsearch clusters over several namespaces, changed at a fixed rate.

Every change is a user's write (through the admin client, straight to kubesim) with a known end
state: the node count each cluster must end with, and which namespaces are in scope. A write the API
server did not accept (it is restarting) is retried until it is; only then is the change counted, so
the expectation is exactly what the API server holds. At the end every namespace is flipped into
scope and every cluster must reach its expected state: a change the operator lost shows up there as a
cluster that never does, named in the failure.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp

from stackflow.kube import errors
from stackflow.kube.resources import ResourceClient
from tests.e2e.harness import ES, STATEFULSETS, create_namespace, manifest, set_in_scope

__all__ = ["ClusterKey", "Load", "cluster_state", "retrying"]

T = TypeVar("T")
VERSION = "9.1.0"
#: The namespace of the probe clusters: always in scope, changed only to time a recovery.
PROBE_NAMESPACE = "rel-probe"
#: The namespace of the witness clusters: always in scope, each changed once, during one fault.
WITNESS_NAMESPACE = "rel-witness"
#: How long a user keeps retrying one write while the API server is down.
WRITE_RETRY_SECONDS = 120.0


@dataclass(frozen=True, order=True)
class ClusterKey:
    """One Elasticsearch of the load."""

    namespace: str
    name: str

    def __str__(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


async def retrying(write: Callable[[], Awaitable[T]], *, what: str) -> T:
    """``write()``, retried while the API server is unreachable or answers 5xx (as kubectl's user
    would retry); any other error is the test's own bug and propagates."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WRITE_RETRY_SECONDS
    delay = 0.1
    while True:
        try:
            return await write()
        except (errors.KubeError, aiohttp.ClientError, OSError) as error:
            if isinstance(error, errors.KubeError) and not error.retryable:
                raise
            if loop.time() > deadline:
                raise AssertionError(f"{what}: the API server refused it for too long") from error
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


def _spec(count: int) -> dict[str, Any]:
    return {"version": VERSION, "nodeSets": [{"name": "default", "count": count}]}


async def cluster_state(
    kube: ResourceClient, key: ClusterKey, count: int, *, health: str = "green"
) -> str | None:
    """None when the cluster is as expected (its generation observed, ``count`` nodes available,
    its ``health`` as reported, its StatefulSet at ``count`` replicas), else what is not.

    ``health`` is ``green`` where a (fake) Elasticsearch answers the operator, ``unknown`` where
    nothing does: the operator reports only what it measured."""
    try:
        es = await kube.get(ES, namespace=key.namespace, name=key.name)
        sts = await kube.get(STATEFULSETS, namespace=key.namespace, name=f"{key.name}-es-default")
    except errors.NotFound as missing:
        return f"missing: {missing}"
    status = es.get("status") or {}
    generation = es["metadata"].get("generation")
    seen = {
        "observedGeneration": status.get("observedGeneration"),
        "availableNodes": status.get("availableNodes"),
        "health": status.get("health"),
        "replicas": (sts.get("spec") or {}).get("replicas"),
    }
    wanted = {
        "observedGeneration": generation,
        "availableNodes": count,
        "health": health,
        "replicas": count,
    }
    if seen == wanted:
        return None
    return ", ".join(
        f"{k} {seen[k]!r} (want {wanted[k]!r})" for k in wanted if seen[k] != wanted[k]
    )


@dataclass
class Load:
    """The load's clusters, what each must end as, and the changes made."""

    kube: ResourceClient
    rng: random.Random
    namespaces: list[str]
    per_namespace: int
    probes: int = 2
    #: One witness cluster per fault of the run.
    witnesses: int = 0
    #: The node count each cluster must end with.
    expected: dict[ClusterKey, int] = field(default_factory=dict)
    in_scope: dict[str, bool] = field(default_factory=dict)
    #: Changes made, by kind (``spec``, ``flip-in``, ``flip-out``).
    changes: Counter[str] = field(default_factory=Counter)

    @property
    def probe_keys(self) -> list[ClusterKey]:
        """The probe clusters."""
        return [ClusterKey(PROBE_NAMESPACE, f"probe-{i}") for i in range(self.probes)]

    def witness_key(self, number: int) -> ClusterKey:
        """The witness cluster of fault ``number`` (from 1)."""
        return ClusterKey(WITNESS_NAMESPACE, f"w-{number}")

    async def witness(self, number: int) -> None:
        """The one change of fault ``number``'s witness: two nodes instead of one."""
        await self.set_count(self.witness_key(number), 2)
        self.changes["witness"] += 1

    async def create(self) -> None:
        """Create the namespaces (about half in scope) and the clusters, one node each."""
        await create_namespace(self.kube, PROBE_NAMESPACE, in_scope=True)
        await create_namespace(self.kube, WITNESS_NAMESPACE, in_scope=True)
        for index, namespace in enumerate(self.namespaces):
            self.in_scope[namespace] = index % 2 == 0
            await create_namespace(self.kube, namespace, in_scope=self.in_scope[namespace])
        witnesses = [self.witness_key(n) for n in range(1, self.witnesses + 1)]
        keys = (
            self.probe_keys
            + witnesses
            + [
                ClusterKey(namespace, f"es-{i}")
                for namespace in self.namespaces
                for i in range(self.per_namespace)
            ]
        )
        for key in keys:
            body = manifest("Elasticsearch", key.name, key.namespace, _spec(1))
            await self.kube.create(ES, body, namespace=key.namespace)
            self.expected[key] = 1

    async def set_count(self, key: ClusterKey, count: int) -> int:
        """Change a cluster's node count (a spec change); its new generation."""
        es = await retrying(
            lambda: self.kube.merge_patch(
                ES, {"spec": _spec(count)}, namespace=key.namespace, name=key.name
            ),
            what=f"scale {key}",
        )
        self.expected[key] = count
        return int(es["metadata"]["generation"])

    async def flip(self, namespace: str, in_scope: bool) -> None:
        """Label a namespace into scope or out of it."""
        await retrying(
            lambda: set_in_scope(self.kube, namespace, in_scope), what=f"flip {namespace}"
        )
        self.in_scope[namespace] = in_scope
        self.changes["flip-in" if in_scope else "flip-out"] += 1

    async def change_once(self) -> None:
        """One change: mostly a spec change (in or out of scope), else a namespace flip."""
        if self.rng.random() < 0.75:
            key = self.rng.choice([key for key in self.expected if key.namespace in self.in_scope])
            await self.set_count(key, 3 - self.expected[key])
            self.changes["spec"] += 1
        else:
            namespace = self.rng.choice(self.namespaces)
            await self.flip(namespace, not self.in_scope[namespace])

    async def run(self, *, interval: float, stop: asyncio.Event) -> None:
        """Change something every ``interval`` seconds until ``stop`` is set."""
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not stop.is_set():
            await self.change_once()
            next_at += interval
            # The load's own pace (a fixed rate), not a wait for the operator.
            await asyncio.sleep(max(0.0, next_at - loop.time()))

    async def all_in_scope(self) -> None:
        """Flip every namespace still out of scope back in (the last changes of the run)."""
        for namespace, in_scope in self.in_scope.items():
            if not in_scope:
                await self.flip(namespace, True)

    async def not_converged(self) -> dict[ClusterKey, str]:
        """Every cluster in a namespace in scope not (yet) in its expected state, with what is
        wrong (a cluster out of scope is expected to be left as it is)."""
        wrong: dict[ClusterKey, str] = {}
        for key, count in sorted(self.expected.items()):
            if not self.in_scope.get(key.namespace, True):
                continue
            problem = await cluster_state(self.kube, key, count)
            if problem is not None:
                wrong[key] = problem
        return wrong
