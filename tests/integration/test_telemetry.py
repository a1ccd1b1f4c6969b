"""Telemetry and the licensing gauges, on kubesim + a real Temporal dev server + ``stackflow run``.

In dynamic mode the leader's telemetry Schedule writes ECK's document into the config Secret of
the Kibana of a matching namespace and into no Secret of an unmatched one (not even one that
exists there); with ``disable-telemetry: true`` there is no telemetry Schedule and nothing is
written, while the licensing usage report still runs. In both, ``/metrics`` on the operator's
``metrics-port`` shows the license level and the enterprise resource units in use.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client, ScheduleOverlapPolicy
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import SECRETS
from stackflow.models.telemetry import (
    LICENSE_USAGE_WORKFLOW,
    TELEMETRY_WORKFLOW,
    license_usage_schedule_id,
    telemetry_schedule_id,
)
from tests.clusters import KUBESIM, ClusterTarget, KubeCluster, ensure_namespace
from tests.e2e.harness import Operator, accept_trial, get_or_none, manifest, temporal_server
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: Each test has its own operator namespace: the workflow ids of its trial and license Secrets
#: then differ from the other test's on the shared Temporal server.
OPERATOR_NAMESPACES = {"telemetry-on": "elastic-system", "telemetry-off": "elastic-quiet"}
SCOPE_LABEL = "eck-visible"
KIBANA = kind_resource("Kibana")
ELASTICSEARCH = kind_resource("Elasticsearch")
VERSION = "9.1.0"
TELEMETRY_KEY = "telemetry.yml"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """One Temporal dev server on 127.0.0.1 for the module (each test has its own task queue)."""
    async with temporal_server() as env:
        yield env


@pytest_asyncio.fixture(loop_scope="module")
async def cluster(tmp_path: Path) -> AsyncIterator[KubeCluster]:
    """A fresh kubesim."""
    async with ClusterTarget(KUBESIM).open(tmp_path) as cluster:
        yield cluster


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (for the operator's ``metrics-port``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest_asyncio.fixture(loop_scope="module")
async def start_operator(
    cluster: KubeCluster, temporal: WorkflowEnvironment, tmp_path: Path
) -> AsyncIterator[Any]:
    """Start ``stackflow run`` serving `queue` with extra settings, in its operator namespace
    (made, with an accepted enterprise trial); every operator started is stopped (exit 0)."""
    started: list[Operator] = []

    async def start(queue: str, settings: Mapping[str, Any]) -> Operator:
        operator_namespace = OPERATOR_NAMESPACES[queue]
        await ensure_namespace(cluster.kube, operator_namespace, None)
        await accept_trial(cluster.kube, operator_namespace=operator_namespace)
        config = tmp_path / f"operator-{len(started)}.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "operator-namespace": operator_namespace,
                    "temporal-task-queue": queue,
                    "namespace-selector": {"matchLabels": {SCOPE_LABEL: "true"}},
                    "temporal-address": temporal.client.service_client.config.target_host,
                    **settings,
                }
            )
        )
        operator = Operator(
            config=config,
            kubeconfig=cluster.operator_kubeconfig,
            log=tmp_path / f"operator-{len(started)}.log",
        )
        started.append(operator)
        await operator.start()
        return operator

    yield start
    for operator in started:
        status = await operator.stop()
        assert status == 0, operator.tail()


async def create_kibana(kube: ResourceClient, namespace: str, name: str = "kb") -> None:
    """A one-replica Kibana without association."""
    body = manifest("Kibana", name, namespace, {"version": VERSION, "count": 1})
    await kube.create(KIBANA, body, namespace=namespace)


def config_secret(namespace: str, data: Mapping[str, str]) -> dict[str, Any]:
    """A ``kb-kb-config`` Secret with `data` (text values)."""
    return {
        "metadata": {"name": "kb-kb-config", "namespace": namespace},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


async def secret_key(kube: ResourceClient, namespace: str, key: str) -> str | None:
    """The text under `key` of ``kb-kb-config`` in `namespace`, None when absent."""
    secret = await get_or_none(kube, SECRETS, namespace=namespace, name="kb-kb-config")
    value = ((secret or {}).get("data") or {}).get(key)
    return None if value is None else base64.b64decode(value).decode()


async def completed_results(client: Client, workflow_type: str, task_queue: str) -> list[Any]:
    """The results of every completed run of `workflow_type` on `task_queue`."""
    query = (
        f'WorkflowType = "{workflow_type}" AND ExecutionStatus = "Completed" '
        f'AND TaskQueue = "{task_queue}"'
    )
    results = []
    async for execution in client.list_workflows(query):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        results.append(await handle.result())
    return results


async def report_license_usage_now(client: Client, task_queue: str) -> None:
    """Run the licensing usage report once more, now, as ``temporal schedule trigger`` does.

    The Schedule's first run starts with the operator, and may read the license before the
    trial is issued; the next one is two minutes away (ECK's interval).
    """
    handle = client.get_schedule_handle(license_usage_schedule_id(task_queue))
    await handle.trigger(overlap=ScheduleOverlapPolicy.BUFFER_ONE)


async def metrics_text(port: int) -> str:
    """``/metrics`` of the operator ("" while it does not answer yet)."""
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            return await response.text() if response.status == 200 else ""
    except aiohttp.ClientError:
        return ""


async def test_document_goes_to_matching_kibanas_only_and_gauges_show_the_license(
    cluster: KubeCluster, temporal: WorkflowEnvironment, start_operator: Any
) -> None:
    kube = cluster.kube
    await ensure_namespace(kube, "seen", {SCOPE_LABEL: "true"})
    await ensure_namespace(kube, "unseen", None)
    # A config Secret left in the unmatched namespace: telemetry must not write into it.
    await kube.create(
        SECRETS, config_secret("unseen", {"kibana.yml": "x: 1\n"}), namespace="unseen"
    )
    await create_kibana(kube, "unseen")
    await create_kibana(kube, "seen")
    spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
    await kube.create(
        ELASTICSEARCH, manifest("Elasticsearch", "es", "seen", spec), namespace="seen"
    )
    port = free_port()
    queue = "telemetry-on"
    operator = await start_operator(queue, {"telemetry-interval": "2s", "metrics-port": port})

    async def written() -> bool:
        return await secret_key(kube, "seen", TELEMETRY_KEY) is not None

    await eventually(written, within=120, what=f"telemetry.yml written\n{operator.tail()}")
    document = yaml.safe_load(await secret_key(kube, "seen", TELEMETRY_KEY) or "")
    eck = document["eck"]
    # Only the matching namespace's objects are counted.
    assert eck["stats"]["kibanas"]["resource_count"] == 1
    assert eck["stats"]["elasticsearches"]["resource_count"] == 1
    assert eck["license"]["eck_license_level"] == "enterprise_trial"
    assert eck["license"]["enterprise_resource_units"] == "1"
    assert eck["operator_uuid"]

    # A completed run has reported the seen Kibana: its writes are all done.
    async def seen_reported() -> bool:
        results = await completed_results(temporal.client, TELEMETRY_WORKFLOW, queue)
        return any(
            "seen/kb-kb-config" in [*result["report"]["written"], *result["report"]["unchanged"]]
            for result in results
        )

    await eventually(seen_reported, within=60, what="a completed telemetry run")
    for result in await completed_results(temporal.client, TELEMETRY_WORKFLOW, queue):
        assert result["report"]["namespaces"] == [OPERATOR_NAMESPACES[queue], "seen"]
        assert not any(
            "unseen/" in where
            for where in [*result["report"]["written"], *result["report"]["unchanged"]]
        )
    assert await secret_key(kube, "unseen", TELEMETRY_KEY) is None
    assert await secret_key(kube, "unseen", "kibana.yml") == "x: 1\n"

    await report_license_usage_now(temporal.client, queue)

    async def gauges_shown() -> bool:
        text = await metrics_text(port)
        return (
            'stackflow_license_level{level="enterprise_trial"} 1.0' in text
            and 'stackflow_license_level{level="basic"} 0.0' in text
            and "stackflow_enterprise_resource_units 1.0" in text
        )

    await eventually(gauges_shown, within=60, what=f"license gauges on /metrics\n{operator.tail()}")


async def test_disable_telemetry_writes_nothing_and_keeps_the_license_gauges(
    cluster: KubeCluster, temporal: WorkflowEnvironment, start_operator: Any
) -> None:
    kube = cluster.kube
    await ensure_namespace(kube, "quiet", {SCOPE_LABEL: "true"})
    await create_kibana(kube, "quiet")
    port = free_port()
    queue = "telemetry-off"
    operator = await start_operator(
        queue, {"disable-telemetry": True, "telemetry-interval": "2s", "metrics-port": port}
    )

    async def config_secret_exists() -> bool:
        return await get_or_none(kube, SECRETS, namespace="quiet", name="kb-kb-config") is not None

    await eventually(config_secret_exists, within=120, what=f"Kibana reconciled\n{operator.tail()}")

    # The leader has set its Schedules up once the licensing usage report has run.
    async def license_usage_ran() -> bool:
        return bool(await completed_results(temporal.client, LICENSE_USAGE_WORKFLOW, queue))

    await eventually(license_usage_ran, within=60, what=f"licensing usage run\n{operator.tail()}")
    with pytest.raises(RPCError) as missing:
        await temporal.client.get_schedule_handle(telemetry_schedule_id(queue)).describe()
    assert missing.value.status is RPCStatusCode.NOT_FOUND
    assert await completed_results(temporal.client, TELEMETRY_WORKFLOW, queue) == []
    assert await secret_key(kube, "quiet", TELEMETRY_KEY) is None

    # The Kibana was reconciled, so the trial is issued: a report from now on counts both.
    await report_license_usage_now(temporal.client, queue)

    async def gauges_shown() -> bool:
        text = await metrics_text(port)
        return (
            'stackflow_license_level{level="enterprise_trial"} 1.0' in text
            and "stackflow_enterprise_resource_units 1.0" in text
        )

    await eventually(gauges_shown, within=60, what=f"license gauges on /metrics\n{operator.tail()}")
