"""The end-to-end stack: a cluster (kubesim or the real API server) + a Temporal dev server + ``stackflow run`` as a subprocess.

Tests drive it only as a user would: through the Kubernetes API (kubernetes_asyncio through
``stackflow.kube``), never by reaching into the operator. Shared by the e2e tests and the
association benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.kube.resources import ResourceClient
from stackflow.models.engine import (
    SEARCH_ATTRIBUTES,
    TRIGGER_SIGNAL,
    TRIGGERS_SIGNAL,
    Trigger,
    TriggerBatch,
)
from stackflow.models.kinds import DEPLOYMENTS, EVENTS, NAMESPACES, SECRETS, STATEFULSETS, Kind
from stackflow.temporal import DATA_CONVERTER
from tests.clusters import ClusterTarget, KubeCluster, ensure_namespace
from tests.polling import DEV_SERVER_STARTUP

__all__ = [
    "DEPLOYMENTS",
    "ES",
    "EVENTS",
    "SCOPE_LABEL",
    "SECRETS",
    "STATEFULSETS",
    "Operator",
    "Stack",
    "accept_trial",
    "create_namespace",
    "get_or_none",
    "manifest",
    "operator_stack",
    "set_in_scope",
    "temporal_server",
    "workflow_triggers",
    "write_operator_config",
]

REPO = Path(__file__).resolve().parents[2]
TEMPORAL = Path(sys.executable).parent / "temporal"
#: Stack kinds (Elasticsearch, Kibana, Agent…) at their storage version: ``kind_resource(kind)``.
ES = kind_resource("Elasticsearch")
#: The label that puts a namespace in the operator's scope in these tests.
SCOPE_LABEL = "eck-visible"


def manifest(kind: str, name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A stack object of ``kind`` at its storage version."""
    return {
        "apiVersion": kind_resource(kind).api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": dict(spec),
    }


class Operator:
    """``stackflow run`` as a subprocess; its log goes to a file."""

    def __init__(self, *, config: Path, kubeconfig: Path, log: Path) -> None:
        """Configure; nothing runs until ``start``."""
        self.argv = [
            sys.executable,
            "-m",
            "stackflow.cli",
            "run",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--health-host",
            "127.0.0.1",
            "--health-port",
            "0",
            "--graceful-shutdown-timeout",
            "2",
        ]
        self.log = log
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start it."""
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        """Signal it and wait for its exit status."""
        process, self.process = self.process, None
        if process is None:
            return 0
        if process.returncode is None:
            process.send_signal(signum)
        try:
            return await asyncio.wait_for(process.wait(), timeout=60)
        except TimeoutError:
            # Never leave it behind: a test stops what it starts, even an operator that hangs.
            process.kill()
            await process.wait()
            raise AssertionError(f"operator did not exit within 60 s of signal {signum}") from None

    def tail(self, chars: int = 3000) -> str:
        """The end of its log, for failure messages."""
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


@contextlib.asynccontextmanager
async def temporal_server() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server on 127.0.0.1 with Stackflow's search attributes."""
    env = await WorkflowEnvironment.start_local(
        dev_server_startup_timeout=DEV_SERVER_STARTUP,
        data_converter=pydantic_data_converter,
        dev_server_existing_path=str(TEMPORAL),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()


def write_operator_config(
    path: Path,
    *,
    temporal: WorkflowEnvironment | None = None,
    temporal_address: str | None = None,
    webhook_port: int | None = None,
    elasticsearch_url: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Path:
    """An operator configuration: namespaces labelled ``SCOPE_LABEL=true`` are managed.

    The Temporal server is ``temporal`` (an environment) or ``temporal_address``.
    ``webhook_port`` turns the validating webhooks on (with operator-managed certificates);
    ``elasticsearch_url`` points every cluster at one (fake) Elasticsearch; ``settings`` are
    more keys (``enforce-rbac-on-refs``…).
    """
    config: dict[str, Any] = {
        "operator-namespace": "elastic-system",
        "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
        "temporal-address": temporal_address
        or (temporal.client.service_client.config.target_host if temporal is not None else ""),
    }
    if webhook_port is not None:
        config |= {
            "enable-webhook": True,
            "webhook-port": webhook_port,
            "manage-webhook-certs": True,
        }
    if elasticsearch_url is not None:
        config["elasticsearch-url"] = elasticsearch_url
    config |= dict(settings or {})
    path.write_text(yaml.safe_dump(config))
    return path


async def create_namespace(kube: ResourceClient, name: str, *, in_scope: bool) -> None:
    """Create a namespace (or label one the cluster made already), labelled into scope or not."""
    await ensure_namespace(kube, name, {SCOPE_LABEL: "true"} if in_scope else None)


async def set_in_scope(kube: ResourceClient, name: str, in_scope: bool) -> dict[str, Any]:
    """Label a namespace into scope, or remove the label (a flip); the updated Namespace."""
    return await kube.merge_patch(
        NAMESPACES,
        {"metadata": {"labels": {SCOPE_LABEL: "true" if in_scope else None}}},
        namespace=None,
        name=name,
    )


async def accept_trial(kube: ResourceClient, *, operator_namespace: str) -> None:
    """Start an enterprise trial: the gated controllers may reconcile."""
    await kube.create(
        SECRETS,
        {
            "metadata": {
                "name": "eck-trial",
                "namespace": operator_namespace,
                "labels": {"license.k8s.elastic.co/type": "enterprise_trial"},
                "annotations": {"elastic.co/eula": "accepted"},
            }
        },
        namespace=operator_namespace,
    )


async def get_or_none(
    kube: ResourceClient, resource: Kind, *, namespace: str, name: str
) -> dict[str, Any] | None:
    """An object, or None when it does not exist."""
    try:
        return await kube.get(resource, namespace=namespace, name=name)
    except errors.NotFound:
        return None


async def workflow_triggers(client: Client, workflow_id: str) -> list[Trigger]:
    """The triggers a workflow's current run received, in order, from its history (what the
    Temporal UI shows as its signals)."""
    received: list[Trigger] = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        attributes = event.workflow_execution_signaled_event_attributes
        if attributes.signal_name == TRIGGER_SIGNAL:
            (trigger,) = await DATA_CONVERTER.decode(attributes.input.payloads, [Trigger])
            received.append(trigger)
        elif attributes.signal_name == TRIGGERS_SIGNAL:
            (batch,) = await DATA_CONVERTER.decode(attributes.input.payloads, [TriggerBatch])
            received.extend(batch.triggers)
    return received


@dataclass
class Stack:
    """A running cluster (kubesim or the real API server), Temporal dev server and operator."""

    cluster: KubeCluster
    temporal: WorkflowEnvironment
    operator: Operator

    @property
    def kube(self) -> ResourceClient:
        """The test's own (admin) client."""
        return self.cluster.kube


@contextlib.asynccontextmanager
async def operator_stack(
    directory: Path,
    target: ClusterTarget,
    *,
    trial: bool = True,
    settings: Mapping[str, Any] | None = None,
) -> AsyncIterator[Stack]:
    """The whole stack, with ``elastic-system`` and a trial license (none with ``trial=False``,
    until the test adds one); the operator stops cleanly. ``settings`` are more configuration
    keys."""
    async with target.open(directory) as cluster, temporal_server() as temporal:
        if trial:
            await accept_trial(cluster.kube, operator_namespace="elastic-system")
        config = write_operator_config(
            directory / "operator.yaml", temporal=temporal, settings=settings
        )
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=directory / "operator.log"
        )
        await operator.start()
        try:
            yield Stack(cluster, temporal, operator)
        finally:
            status = await operator.stop()
            if status != 0:
                raise AssertionError(f"operator exited {status}:\n{operator.tail()}")
