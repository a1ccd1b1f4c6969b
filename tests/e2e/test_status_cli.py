"""``stackflow status`` and the license-wait condition end to end: kubesim (and the real API server),
a Temporal dev server and ``stackflow run``, driven through the Kubernetes API and the command line.

Dynamic mode without a license: the Elasticsearch in a selected namespace waits for the license,
its status carries the ``StackflowReconciliation`` condition, and ``stackflow status`` says why
(in scope by its labels, license missing, phase ``WaitingForLicense``). With the license back the
cluster reconciles, the condition is gone and ``stackflow status`` says so. A resource the operator
never managed has no workflow: one line, exit status 2.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import PODS, SECRETS
from tests.clusters import ClusterTarget, KubeCluster, ensure_namespace
from tests.e2e.harness import ES, temporal_server
from tests.e2e.license_setup import (
    LICENSE_SECRET,
    OPERATOR_NAMESPACE,
    PROMPTLY,
    PodNamedOperator,
    elasticsearch,
    issue_enterprise_license,
    license_secret,
    operator_pod,
    reconciled,
    write_config,
)
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

UI_URL = "http://127.0.0.1:8233"
CONDITION = "StackflowReconciliation"
SELECTED = "status-selected"
HIDDEN = "status-hidden"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """One Temporal dev server on 127.0.0.1 for the module."""
    async with temporal_server() as env:
        yield env


@pytest_asyncio.fixture(loop_scope="module")
async def cluster(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[KubeCluster]:
    """The cluster under test (a fresh kubesim, or the shared real API server cleaned after)."""
    async with cluster_target.open(tmp_path) as cluster:
        yield cluster


async def stackflow_status(config: Path, kubeconfig: Path, target: str) -> tuple[int, str, str]:
    """Run ``stackflow status TARGET`` as a user would: (exit status, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stackflow.cli",
        "status",
        target,
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
        "--ui-url",
        UI_URL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def our_condition(kube: ResourceClient, namespace: str) -> dict[str, Any] | None:
    """The Elasticsearch's StackflowReconciliation condition, if it has one."""
    es = await kube.get(ES, namespace=namespace, name="quickstart")
    conditions = (es.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == CONDITION), None)


def lines_of(text: str) -> dict[str, str]:
    """``key: rest`` lines of the report by key."""
    return {
        line.partition(": ")[0]: line.partition(": ")[2]
        for line in text.splitlines()
        if ": " in line
    }


async def test_status_explains_the_license_wait_and_the_condition_comes_and_goes(
    cluster: KubeCluster, temporal: WorkflowEnvironment, tmp_path: Path
) -> None:
    kube = cluster.kube
    public_key, document = issue_enterprise_license(tmp_path / "keys")
    config = write_config(
        tmp_path / "operator.yaml",
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespace-selector": {"matchLabels": {"eck-visible": "true"}},
            "license-public-key": str(public_key),
            "temporal-address": temporal.client.service_client.config.target_host,
            "temporal-task-queue": "status-cli",
        },
    )
    for name, labels in (
        (OPERATOR_NAMESPACE, {}),
        (SELECTED, {"eck-visible": "true"}),
        (HIDDEN, {"eck-visible": "false"}),
    ):
        await ensure_namespace(kube, name, labels)
    await kube.create(PODS, operator_pod(), namespace=OPERATOR_NAMESPACE)
    operator = PodNamedOperator(
        config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
    )
    await operator.start()
    try:
        for namespace in (HIDDEN, SELECTED):
            await kube.create(ES, elasticsearch(namespace), namespace=namespace)

        async def condition_written() -> bool:
            return await our_condition(kube, SELECTED) is not None

        await eventually(condition_written, what="the license-wait condition on the Elasticsearch")
        condition = await our_condition(kube, SELECTED)
        assert condition is not None
        assert (condition["status"], condition["reason"]) == ("False", "WaitingForLicense")
        assert "no operator license Secret found" in condition["message"]

        status, out, err = await stackflow_status(
            config, cluster.admin_kubeconfig, f"es/{SELECTED}/quickstart"
        )
        assert status == 0, err
        report = lines_of(out)
        assert report["scope"].startswith("in scope: ")
        assert f"namespace {SELECTED} labels {{eck-visible=true, " in report["scope"]
        assert report["scope"].endswith(" match the namespace selector eck-visible=true")
        assert report["license"].startswith("missing: no operator license Secret found")
        assert report["phase"].startswith("WaitingForLicense")
        assert " Unlicensed: no operator license Secret found" in report["last reconcile"]
        assert report["pending triggers"] == "none"
        assert report["condition"].startswith(f"{CONDITION}=False WaitingForLicense: ")
        assert report["temporal ui"] == (
            f"{UI_URL}/namespaces/default/workflows/elasticsearch%2F{SELECTED}%2Fquickstart"
        )
        # The hidden namespace's cluster was never managed: no workflow, and it was not written.
        status, out, err = await stackflow_status(
            config, cluster.admin_kubeconfig, f"es/{HIDDEN}/quickstart"
        )
        assert (status, out) == (2, "")
        assert err.strip() == (
            f"stackflow status: no workflow elasticsearch/{HIDDEN}/quickstart "
            "in Temporal namespace default"
        )
        assert await our_condition(kube, HIDDEN) is None

        await kube.create(SECRETS, license_secret(document), namespace=OPERATOR_NAMESPACE)

        async def reconciled_without_condition() -> bool:
            return await reconciled(kube, SELECTED) and await our_condition(kube, SELECTED) is None

        await eventually(
            reconciled_without_condition,
            within=PROMPTLY,
            what="reconciled after the license returned, the condition removed",
        )
        status, out, err = await stackflow_status(
            config, cluster.admin_kubeconfig, f"elasticsearch/{SELECTED}/quickstart"
        )
        assert status == 0, err
        report = lines_of(out)
        assert report["license"].startswith("licensed: enterprise license ")
        assert "condition" not in report
        assert " Reconciled" in report["last reconcile"]
        assert not report["phase"].startswith("WaitingForLicense")
        assert await kube.get(SECRETS, namespace=OPERATOR_NAMESPACE, name=LICENSE_SECRET)
    finally:
        assert await operator.stop() == 0, operator.tail()
