"""What a user of a cluster sees while the operator changes it: a writer that keeps indexing, a
reader that asks ``_cluster/health`` every second, and a watch on the cluster's Pods.

Each runs as a task beside the test and records; the test reads the records once the change is
done: which Pods were replaced (every UID seen per name), how many were unavailable at once, the
health colours and the seconds without an answer, and which documents were acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from stackflow.models.kinds import PODS
from tests.elasticsearch.real_stack import ElasticsearchOf

#: The reader's period, as the issue's user asks: one health call per second.
HEALTH_PERIOD = 1.0
#: The writer's pace: a document every 100 ms keeps writes flowing without loading the machine.
WRITE_PERIOD = 0.1
#: How often the Pods are listed (a node takes many seconds to restart; no replacement is missed).
POD_PERIOD = 0.25


@dataclass
class Observations:
    """What the observers saw."""

    #: Every UID seen for each Pod name, in order.
    uids: dict[str, list[str]] = field(default_factory=dict)
    #: The most Pods of the cluster unavailable (missing, not ready or terminating) at once.
    most_unavailable: int = 0
    #: Health colours by count of one-second samples; ``none`` when no node answered.
    health: Counter[str] = field(default_factory=Counter)
    #: Documents the cluster acknowledged.
    acknowledged: list[str] = field(default_factory=list)
    failed_writes: int = 0

    def replaced(self) -> dict[str, int]:
        """How many times each Pod was replaced (UIDs seen minus one)."""
        return {name: len(uids) - 1 for name, uids in sorted(self.uids.items())}

    def summary(self) -> str:
        """One line for the test's output (the figures the note reports)."""
        return (
            f"replaced {self.replaced()}, most unavailable at once {self.most_unavailable}, "
            f"health samples {dict(self.health)}, acknowledged writes "
            f"{len(self.acknowledged)}, failed writes {self.failed_writes}"
        )


class _AnyNode:
    """Calls to whichever node of the cluster answers (the Pod IPs in turn)."""

    def __init__(self, es: ElasticsearchOf) -> None:
        self.es = es
        self._password: str | None = None
        self._ca: str | None = None

    async def _targets(self) -> list[str]:
        pods = await self.es.kube.list(
            PODS,
            namespace=self.es.namespace,
            label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={self.es.name}",
        )
        return sorted(
            str(pod["status"]["podIP"])
            for pod in pods["items"]
            if (pod.get("status") or {}).get("podIP")
            and not pod["metadata"].get("deletionTimestamp")
        )

    async def call(
        self, session: aiohttp.ClientSession, method: str, path: str, body: Any = None
    ) -> tuple[int, Any] | None:
        """The first answer of any node, or None when none answers."""
        if self._password is None:
            self._password = await self.es.password()
            self._ca = (await self.es.node()).ca_pem
        context = ssl.create_default_context(cadata=self._ca)
        server_hostname = f"{self.es.name}-es-http.{self.es.namespace}.svc"
        data = None if body is None else json.dumps(body)
        for ip in await self._targets():
            try:
                async with session.request(
                    method,
                    f"https://{ip}:9200{path}",
                    data=data,
                    headers={
                        "Content-Type": "application/json",
                        "Authorization": aiohttp.encode_basic_auth("elastic", self._password),
                    },
                    ssl=context,
                    server_hostname=server_hostname,
                ) as response:
                    text = await response.text()
                    if response.status in (502, 503):
                        continue
                    return response.status, json.loads(text) if text.strip() else None
            except (aiohttp.ClientError, OSError, TimeoutError, ValueError):
                continue
        return None


async def _watch_pods(es: ElasticsearchOf, expected: int, seen: Observations) -> None:
    while True:
        pods = await es.kube.list(
            PODS,
            namespace=es.namespace,
            label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={es.name}",
        )
        available = 0
        for pod in pods["items"]:
            name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
            uids = seen.uids.setdefault(name, [])
            if uid not in uids:
                uids.append(uid)
            conditions = {
                c.get("type"): c.get("status")
                for c in (pod.get("status") or {}).get("conditions") or []
            }
            if conditions.get("Ready") == "True" and not pod["metadata"].get("deletionTimestamp"):
                available += 1
        seen.most_unavailable = max(seen.most_unavailable, expected - available)
        await asyncio.sleep(POD_PERIOD)


async def _read_health(node: _AnyNode, seen: Observations) -> None:
    timeout = aiohttp.ClientTimeout(total=HEALTH_PERIOD * 5)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while True:
            answer = await node.call(session, "GET", "/_cluster/health?timeout=1s")
            if answer is None or answer[0] != 200 or not isinstance(answer[1], dict):
                seen.health["none"] += 1
            else:
                seen.health[str(answer[1].get("status"))] += 1
            await asyncio.sleep(HEALTH_PERIOD)


async def _write(node: _AnyNode, index: str, prefix: str, seen: Observations) -> None:
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        number = 0
        while True:
            doc = f"{prefix}-{number}"
            answer = await node.call(session, "PUT", f"/{index}/_doc/{doc}", {"n": number})
            if answer is not None and answer[0] in (200, 201):
                seen.acknowledged.append(doc)
            else:
                seen.failed_writes += 1
            number += 1
            await asyncio.sleep(WRITE_PERIOD)


@contextlib.asynccontextmanager
async def observed(
    es: ElasticsearchOf, *, index: str, prefix: str, expected_pods: int
) -> AsyncIterator[Observations]:
    """Observe the cluster for the span of the block (the pacing sleeps only pace the load)."""
    seen = Observations()
    node = _AnyNode(es)
    tasks = [
        asyncio.create_task(_watch_pods(es, expected_pods, seen)),
        asyncio.create_task(_read_health(node, seen)),
        asyncio.create_task(_write(node, index, prefix, seen)),
    ]
    try:
        yield seen
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
