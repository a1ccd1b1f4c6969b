"""The stack of the ``elasticsearch`` tier: a cluster whose scheduler sends every Elasticsearch Pod
to the runner's Node, the runner (each such Pod a real Elasticsearch node on its own 127.1.x.y
address), a Temporal dev server, and the operator dialling each cluster at its Service's ready
endpoints with TLS verified against the cluster's CA.

On kubesim each stack gets a fresh emulator; on the real API server the tier starts a control
plane of its own (its kube-scheduler is configured with the runner's extender, which the session's
shared control plane is not).
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from controlplane import ControlPlane
from esrunner.containers import unavailable_reason as runner_unavailable
from esrunner.distributions import unavailable_reason as version_unavailable
from esrunner.kubeapi import KubeApi
from esrunner.pods import RunnerSettings
from esrunner.runner import Runner
from stackflow.cli.dev_temporal import TemporalDevServer
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import NAMESPACES, PODS, SECRETS
from tests.clusters import KUBESIM, KubeCluster, ensure_namespace, kube_cluster
from tests.e2e.harness import (
    ES,
    SCOPE_LABEL,
    Operator,
    accept_trial,
    write_operator_config,
)
from tests.polling import eventually

#: The versions the tier runs (an upgrade needs two 8.x minors): the newest first.
VERSION = "9.1.0"
FALLBACK_VERSION = "8.18.0"
#: Each node's heap: three nodes, twice, fit on the 2-core, 24 GiB machine.
HEAP_CEILING_MB = 256
RUNNER_NODE = "elasticsearch-runner"
#: Time for a loaded machine to start three JVMs and form a cluster.
FORM_WITHIN = 240.0
#: The operator's pre-stop hook waits 50 s by default before a node stops; the tier's
#: clusters ask for 1 s, as ECK's documentation suggests for test environments.
PRE_STOP_WAIT = {"name": "PRE_STOP_ADDITIONAL_WAIT_SECONDS", "value": "1"}


def tier_version() -> str:
    """The version the tier's clusters run: 9.1.0 where a Java 21+ exists, else 8.18.0."""
    return VERSION if version_unavailable(VERSION) is None else FALLBACK_VERSION


def unavailable() -> str | None:
    """Why the tier cannot run here (one line), or None."""
    reason = runner_unavailable() or version_unavailable(tier_version())
    return f"elasticsearch tier skipped: {reason}" if reason else None


def elasticsearch(
    namespace: str,
    name: str,
    *,
    count: int = 3,
    version: str | None = None,
    labels: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An Elasticsearch of ``count`` nodes (master and data on every node)."""
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "version": version or tier_version(),
            "nodeSets": [
                {
                    "name": "default",
                    "count": count,
                    "podTemplate": {
                        "spec": {"containers": [{"name": "elasticsearch", "env": [PRE_STOP_WAIT]}]}
                    },
                }
            ],
            **dict(extra or {}),
        },
    }


@dataclass
class RealStack:
    """A running stack of the tier."""

    cluster: KubeCluster
    runner: Runner
    #: A dev server on a database file: a test may kill it and start it again (state kept).
    temporal: TemporalDevServer
    client: Client
    operator: Operator

    @property
    def kube(self) -> ResourceClient:
        """The test's own (admin) client."""
        return self.cluster.kube


@contextlib.asynccontextmanager
async def real_stack(
    directory: Path, target: str, *, plane: ControlPlane | None, extender_port: int
) -> AsyncIterator[RealStack]:
    """The whole stack with a trial license; everything it started is stopped after."""
    extender = f"http://127.0.0.1:{extender_port}"
    async with kube_cluster(
        directory,
        target,
        plane=plane,
        scheduler_extender=extender if target == KUBESIM else None,
        # The operator runs outside the cluster: it dials the ready Pods of each cluster's Service.
        chart_values={"config.elasticsearchDial": "endpoints"},
    ) as cluster:
        settings = RunnerSettings(
            node_name=RUNNER_NODE,
            state_dir=directory / "esrunner",
            heap_ceiling_mb=HEAP_CEILING_MB,
        )
        runner = Runner(KubeApi(cluster.admin_kubeconfig), settings, extender_port=extender_port)
        await runner.start()
        try:
            temporal = TemporalDevServer(state_dir=directory, headless=True)
            await temporal.start()
            try:
                await accept_trial(cluster.kube, operator_namespace="elastic-system")
                config = write_operator_config(
                    directory / "operator.yaml",
                    temporal_address=temporal.address,
                    settings={"elasticsearch-dial": "endpoints"},
                )
                operator = Operator(
                    config=config,
                    kubeconfig=cluster.operator_kubeconfig,
                    log=directory / "operator.log",
                )
                client = await Client.connect(
                    temporal.address, data_converter=pydantic_data_converter
                )
                await operator.start()
                try:
                    yield RealStack(cluster, runner, temporal, client, operator)
                finally:
                    status = await operator.stop()
                    if status != 0:
                        raise AssertionError(f"operator exited {status}:\n{operator.tail()}")
            finally:
                await temporal.stop()
            # The real API server removes a Pod only once its kubelet confirms the stop: the
            # runner outlives the namespaces' deletion.
            await delete_namespaces(cluster.kube)
        finally:
            await runner.close()


async def delete_namespaces(kube: ResourceClient, *, within: float = 240.0) -> None:
    """Delete the namespaces the test made and wait until they are gone."""
    system = {"default", "kube-system", "kube-public", "kube-node-lease", "elastic-system"}
    names = [
        item["metadata"]["name"]
        for item in (await kube.list(NAMESPACES))["items"]
        if item["metadata"]["name"] not in system
    ]
    for name in names:
        with contextlib.suppress(Exception):
            await kube.delete(NAMESPACES, namespace=None, name=name)

    async def gone() -> bool:
        left = {item["metadata"]["name"] for item in (await kube.list(NAMESPACES))["items"]}
        return not left & set(names)

    await eventually(gone, within=within, what=f"namespaces {names} deleted")


async def in_scope_namespace(kube: ResourceClient, name: str) -> None:
    """A namespace the operator manages."""
    await ensure_namespace(kube, name, {SCOPE_LABEL: "true"})


# -- talking to the real nodes ------------------------------------------------------------------


def _secret_value(secret: Mapping[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


@dataclass(frozen=True)
class Node:
    """How the test reaches one cluster: a Pod's IP, the public HTTP CA, the Service's name."""

    ip: str
    ca_pem: str
    server_hostname: str


class ElasticsearchOf:
    """Calls to one cluster's real nodes, as a user outside the cluster makes them: at a Pod's
    IP, trusting the cluster's public HTTP CA for the ``<es>-es-http.<ns>.svc`` name."""

    def __init__(self, kube: ResourceClient, namespace: str, name: str) -> None:
        """Nothing is read until the first call."""
        self.kube = kube
        self.namespace = namespace
        self.name = name

    async def password(self, user: str = "elastic") -> str:
        """The ``elastic`` user's password from its Secret."""
        secret = await self.kube.get(
            SECRETS, namespace=self.namespace, name=f"{self.name}-es-elastic-user"
        )
        return _secret_value(secret, user)

    async def node(self, pod: str | None = None) -> Node:
        """A Pod of the cluster (the first running one, or ``pod``)."""
        pods = await self.kube.list(
            PODS,
            namespace=self.namespace,
            label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={self.name}",
        )
        candidates = [
            item
            for item in pods["items"]
            if (pod is None or item["metadata"]["name"] == pod)
            and (item.get("status") or {}).get("podIP")
        ]
        if not candidates:
            raise ConnectionError(f"no Pod of {self.namespace}/{self.name} has an IP yet")
        chosen = sorted(candidates, key=lambda item: str(item["metadata"]["name"]))[0]
        certs = await self.kube.get(
            SECRETS, namespace=self.namespace, name=f"{self.name}-es-http-certs-public"
        )
        return Node(
            ip=str(chosen["status"]["podIP"]),
            ca_pem=_secret_value(certs, "ca.crt"),
            server_hostname=f"{self.name}-es-http.{self.namespace}.svc",
        )

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        user: str = "elastic",
        password: str | None = None,
        pod: str | None = None,
        expect: int | None = 200,
    ) -> tuple[int, Any]:
        """One HTTPS call; (status, decoded body). ``expect`` (unless None) is asserted."""
        node = await self.node(pod)
        secret = password if password is not None else await self.password()
        context = ssl.create_default_context(cadata=node.ca_pem)
        # A string is sent as it is (NDJSON for ``_bulk``); anything else as JSON.
        data = body if isinstance(body, str) or body is None else json.dumps(body)
        kind = "application/x-ndjson" if isinstance(body, str) else "application/json"
        headers = {"Authorization": aiohttp.encode_basic_auth(user, secret)}
        if data is not None:
            headers["Content-Type"] = kind
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.request(
                method,
                f"https://{node.ip}:9200{path}",
                data=data,
                headers=headers,
                ssl=context,
                server_hostname=node.server_hostname,
            ) as response,
        ):
            text = await response.text()
            status = response.status
        decoded: Any = json.loads(text) if text.strip().startswith(("{", "[")) else text
        if expect is not None and status != expect:
            raise AssertionError(f"{method} {path} on {node.ip}: {status} {text[:500]}")
        return status, decoded

    async def answers(self, method: str, path: str, **options: Any) -> tuple[int, Any] | None:
        """Like ``call`` without assertion; None while no node answers."""
        try:
            return await self.call(method, path, expect=None, **options)
        except (aiohttp.ClientError, ConnectionError, OSError, TimeoutError):
            return None

    async def health(self) -> dict[str, Any] | None:
        """``_cluster/health``, or None while the cluster does not answer."""
        answer = await self.answers("GET", "/_cluster/health")
        return answer[1] if answer is not None and answer[0] == 200 else None


async def green_with(es: ElasticsearchOf, nodes: int, *, within: float = FORM_WITHIN) -> None:
    """Wait until the cluster itself answers green with ``nodes`` nodes."""

    async def formed() -> bool:
        health = await es.health()
        return (
            health is not None
            and health["status"] == "green"
            and health["number_of_nodes"] == nodes
        )

    await eventually(
        formed, within=within, what=f"{es.namespace}/{es.name} green with {nodes} nodes"
    )
