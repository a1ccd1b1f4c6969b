"""The reliability rig: every server the operator depends on, each one the rig can break.

The fake Elasticsearch HTTP API (one for every cluster, the operator's ``elasticsearch-url``),
kubesim (restartable on its state file, with a small watch history so resumed watches get
``410 Expired``), the fault proxy in front of it (the operator's only way to the API), a Temporal dev
server on its database file (restartable on the same port) and ``stackflow run`` replicas as
subprocesses with known leader-election identities. The test's own admin client talks to kubesim
directly: the user is not the one under test.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from kubesim.cli import apply_crds
from kubesim.testing import KubeSim, write_kubeconfig
from stackflow.cli.dev_temporal import TemporalDevServer
from stackflow.kube import errors
from stackflow.kube.client import make_api_client
from stackflow.kube.leader import DEFAULT_LEASE_NAME
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import LEASES
from tests.clusters import CRDS, ensure_namespace
from tests.e2e.harness import SCOPE_LABEL, Operator, accept_trial
from tests.fakes.fake_cluster_nodes import following_pods
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.reliability.proxy import FaultProxy

__all__ = ["OPERATOR_NAMESPACE", "Rig", "open_rig"]

OPERATOR_NAMESPACE = "elastic-system"
#: Watch events kubesim keeps for resumption: small, so a watch resumed after a cut or a restart
#: often starts from a resourceVersion already gone (``410 Expired``) and must list again.
HISTORY_WINDOW = 50
#: Workflows are told to continue as new after this many history events (the server's default
#: is thousands): under the load, kills and restarts land mid-continue-as-new too.
CONTINUE_AS_NEW_AFTER_EVENTS = 120


@dataclass
class Rig:
    """The running servers and replicas of one reliability run."""

    directory: Path
    seed: int
    sim: KubeSim
    proxy: FaultProxy
    temporal: TemporalDevServer
    kube: ResourceClient
    #: The fake Elasticsearch HTTP API every cluster is reached at (``elasticsearch-url``).
    elasticsearch: FakeElasticsearch
    operators: list[Operator] = field(default_factory=list)
    #: Operator exit statuses seen when a replica was killed or restarted (for the final check).
    exits: list[int] = field(default_factory=list)

    async def client(self) -> Client:
        """A Temporal client (a new one: the server may have restarted since the last)."""
        return await Client.connect(self.temporal.address, data_converter=pydantic_data_converter)

    async def leader(self) -> int | None:
        """The index of the replica holding the Lease, or None when none holds it."""
        with contextlib.suppress(errors.KubeError):
            lease = await self.kube.get(
                LEASES, namespace=OPERATOR_NAMESPACE, name=DEFAULT_LEASE_NAME
            )
            holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
            for index, _ in enumerate(self.operators):
                if holder == identity(index):
                    return index
        return None

    async def kill_operator(self, index: int) -> None:
        """SIGKILL one replica and start it again (its Lease, if it led, is left to expire)."""
        operator = self.operators[index]
        self.exits.append(await operator.stop(signal.SIGKILL))
        await operator.start()

    async def restart_kubesim(self) -> None:
        """Stop the API server (state saved, every watch ends) and start a new one on its file."""
        port = self.sim.port
        await self.sim.stop()
        self.sim = _kubesim(self.directory, port=port)
        await self.sim.start()

    async def stop_elasticsearch(self) -> None:
        """Stop the Elasticsearch API (connections refused from now on)."""
        await self.elasticsearch.stop()

    async def start_elasticsearch(self) -> None:
        """Serve the Elasticsearch API again on the same address, with the same state."""
        old = self.elasticsearch
        self.elasticsearch = FakeElasticsearch(any_credentials=True, port=old.port)
        self.elasticsearch.state = old.state
        await self.elasticsearch.start()

    async def stop_temporal(self, *, crash: bool) -> None:
        """Stop the Temporal server: SIGKILL when ``crash``, else as Ctrl-C would."""
        if crash:
            await self.temporal.kill()
        else:
            await self.temporal.stop()

    async def start_temporal(self) -> None:
        """Start the Temporal server again on the same port and database."""
        await self.temporal.start()


def identity(index: int) -> str:
    """The leader-election identity of replica ``index``."""
    return f"replica-{index}"


def _kubesim(directory: Path, *, port: int = 0) -> KubeSim:
    return KubeSim(
        port=port,
        pod_ready_delay=0.2,
        history_window=HISTORY_WINDOW,
        state_file=directory / "kubesim-state.json",
    )


def _operator_config(path: Path, *, temporal_address: str, elasticsearch_url: str) -> Path:
    config: dict[str, Any] = {
        "operator-namespace": OPERATOR_NAMESPACE,
        "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
        "temporal-address": temporal_address,
        "elasticsearch-url": elasticsearch_url,
    }
    path.write_text(yaml.safe_dump(config))
    return path


@contextlib.asynccontextmanager
async def open_rig(directory: Path, *, seed: int, replicas: int) -> AsyncIterator[Rig]:
    """Start everything (CRDs, the operator namespace, a trial license); stop everything after."""
    sim = _kubesim(directory)
    await sim.start()
    temporal = TemporalDevServer(
        state_dir=directory,
        headless=True,
        dynamic_config={
            "limit.historyCount.suggestContinueAsNew": str(CONTINUE_AS_NEW_AFTER_EVENTS)
        },
    )
    elasticsearch = FakeElasticsearch(any_credentials=True)
    rig: Rig | None = None
    try:
        await elasticsearch.start()
        apply_crds(sim, CRDS)
        await sim.settle()
        await temporal.start()
        admin = sim.write_kubeconfig(directory / "admin.kubeconfig")
        api_client = await make_api_client(kubeconfig=admin, context=None, timeout=30)
        try:
            kube = ResourceClient(api_client)
            await ensure_namespace(kube, OPERATOR_NAMESPACE)
            await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)
            async with (
                FaultProxy(upstream=sim.url, seed=seed) as proxy,
                # The one fake serves every cluster: its nodes follow their Pods, so a downscale
                # can tell that a leaving node's data has moved.
                following_pods(elasticsearch, kube),
            ):
                operator_kubeconfig = write_kubeconfig(directory / "operator.kubeconfig", proxy.url)
                config = _operator_config(
                    directory / "operator.yaml",
                    temporal_address=temporal.address,
                    elasticsearch_url=elasticsearch.url,
                )
                rig = Rig(directory, seed, sim, proxy, temporal, kube, elasticsearch)
                for index in range(replicas):
                    operator = Operator(
                        config=config,
                        kubeconfig=operator_kubeconfig,
                        log=directory / f"operator-{index}.log",
                    )
                    operator.argv += ["--identity", identity(index)]
                    rig.operators.append(operator)
                    await operator.start()
                try:
                    yield rig
                finally:
                    for operator in rig.operators:
                        rig.exits.append(await operator.stop())
        finally:
            await api_client.close()
    finally:
        await temporal.stop()
        await (rig.sim if rig is not None else sim).stop()
        await (rig.elasticsearch if rig is not None else elasticsearch).stop()
