"""The enterprise license gate end to end, on kubesim and the real API server: a Temporal dev server + ``stackflow run``.

Driven only through the Kubernetes API and the ``stackflow license`` command line, as a user would:

* dynamic mode (a ``namespace-selector``) with an enterprise license issued by ``stackflow license``
  reconciles; without the license a spec change is not reconciled and ``InvalidLicense`` Warning
  events name the Elasticsearch and the operator Pod; restoring the license resumes reconciling
  without waiting for the 5-minute recheck (the license watch wakes waiting workflows);
* static mode (no selector) needs no license at all.

One Temporal dev server serves the module; each test has its own cluster (or the real one, cleaned), task queue and
namespace names, so workflow ids of one test never meet the other's.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.testing import WorkflowEnvironment

from stackflow.kube.resources import ResourceClient
from stackflow.licensing.model import LICENSE_SCOPE_LABEL, LICENSE_SCOPE_OPERATOR
from stackflow.models.kinds import EVENTS, PODS, SECRETS, STATEFULSETS
from tests.clusters import ClusterTarget, ensure_namespace
from tests.e2e.harness import ES, Operator, temporal_server
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPERATOR_NAMESPACE = "elastic-system"
OPERATOR_POD = "stackflow-e2e-0"
LICENSE_SECRET = "eck-enterprise-license"
INVALID_LICENSE = "InvalidLicense"
#: Well under the 5-minute durable recheck: reaching a state before it proves a watch woke it.
PROMPTLY = 60.0

Cluster = tuple[ResourceClient, Path]


class PodNamedOperator(Operator):
    """``stackflow run`` with ``POD_NAME`` set, as the Deployment's downward API would."""

    async def start(self) -> None:
        """Start it."""
        environment = {**os.environ, "PYTHONUNBUFFERED": "1", "POD_NAME": OPERATOR_POD}
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdout=log, stderr=log, env=environment
            )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """One Temporal dev server on 127.0.0.1 for the module."""
    async with temporal_server() as env:
        yield env


@pytest_asyncio.fixture(loop_scope="module")
async def cluster(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[Cluster]:
    """The cluster under test (a fresh kubesim, or the shared real API server cleaned after):
    an admin client and the operator's kubeconfig."""
    async with cluster_target.open(tmp_path) as cluster:
        yield cluster.kube, cluster.operator_kubeconfig


def stackflow_license(*args: str) -> str:
    """Run ``stackflow license ARGS`` as a user would; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "stackflow.cli", "license", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def issue_enterprise_license(directory: Path) -> tuple[Path, str]:
    """A fresh signing key pair and an enterprise license it signed: (public key, license JSON)."""
    stackflow_license("keygen", "--out-dir", str(directory))
    document = stackflow_license(
        "issue", "--private-key", str(directory / "license-private.pem"), "--type", "enterprise"
    )
    return directory / "license-public.pem", document


def license_secret(document: str) -> dict[str, Any]:
    """The operator license Secret holding ``document``."""
    return {
        "metadata": {
            "name": LICENSE_SECRET,
            "namespace": OPERATOR_NAMESPACE,
            "labels": {LICENSE_SCOPE_LABEL: LICENSE_SCOPE_OPERATOR},
        },
        "data": {"license": base64.b64encode(document.encode()).decode()},
    }


def operator_pod() -> dict[str, Any]:
    """The Pod object the operator runs as (``POD_NAME``), so its events name a real object."""
    return {
        "metadata": {"name": OPERATOR_POD, "namespace": OPERATOR_NAMESPACE},
        "spec": {"containers": [{"name": "manager", "image": "stackflow:e2e"}]},
    }


def elasticsearch(namespace: str, *, count: int = 1) -> dict[str, Any]:
    """A one-node-set Elasticsearch."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": count}]},
    }


def write_config(path: Path, settings: dict[str, Any]) -> Path:
    """Write an operator configuration file."""
    path.write_text(yaml.safe_dump(settings))
    return path


def generations(es: dict[str, Any]) -> tuple[int, int | None]:
    """(metadata.generation, status.observedGeneration) of an Elasticsearch."""
    observed = (es.get("status") or {}).get("observedGeneration")
    return int(es["metadata"]["generation"]), None if observed is None else int(observed)


async def reconciled(kube: ResourceClient, namespace: str) -> bool:
    """Whether the operator has reconciled the current spec of ``namespace``/quickstart."""
    generation, observed = generations(await kube.get(ES, namespace=namespace, name="quickstart"))
    return observed == generation


async def invalid_license_events(kube: ResourceClient, namespace: str | None) -> list[str]:
    """``kind/namespace/name`` of every object with an ``InvalidLicense`` Warning event."""
    listed = await kube.list(EVENTS, namespace=namespace)
    return sorted(
        "{kind}/{namespace}/{name}".format(**event["involvedObject"])
        for event in listed["items"]
        if event.get("reason") == INVALID_LICENSE and event.get("type") == "Warning"
    )


async def test_dynamic_scope_needs_the_enterprise_license_and_resumes_when_it_returns(
    cluster: Cluster, temporal: WorkflowEnvironment, tmp_path: Path
) -> None:
    kube, kubeconfig = cluster
    public_key, document = issue_enterprise_license(tmp_path / "keys")
    config = write_config(
        tmp_path / "operator.yaml",
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespace-selector": {"matchLabels": {"eck-visible": "true"}},
            "license-public-key": str(public_key),
            "temporal-address": temporal.client.service_client.config.target_host,
            "temporal-task-queue": "license-gate-dynamic",
        },
    )
    for name, labels in ((OPERATOR_NAMESPACE, {}), ("licensed", {"eck-visible": "true"})):
        await ensure_namespace(kube, name, labels)
    await kube.create(PODS, operator_pod(), namespace=OPERATOR_NAMESPACE)
    await kube.create(SECRETS, license_secret(document), namespace=OPERATOR_NAMESPACE)
    operator = PodNamedOperator(config=config, kubeconfig=kubeconfig, log=tmp_path / "operator.log")
    await operator.start()
    try:
        await kube.create(ES, elasticsearch("licensed"), namespace="licensed")

        async def licensed_reconciled() -> bool:
            return await reconciled(kube, "licensed")

        await eventually(licensed_reconciled, what="licensed Elasticsearch reconciled")
        assert await invalid_license_events(kube, None) == []

        await kube.delete(SECRETS, namespace=OPERATOR_NAMESPACE, name=LICENSE_SECRET)
        # The license gate reads the operator's informer cache: change the spec only once the
        # operator has seen the deletion (its log says so), or a reconcile racing the watch event
        # could still find the license and observe the new generation.
        removal = f"operator license Secret {OPERATOR_NAMESPACE}/{LICENSE_SECRET} removed"

        async def removal_seen() -> bool:
            return removal in operator.tail(chars=1_000_000)

        await eventually(removal_seen, what="the operator sees the license removed")
        await kube.merge_patch(
            ES,
            {"spec": {"nodeSets": [{"name": "default", "count": 2}]}},
            namespace="licensed",
            name="quickstart",
        )
        expected_events = [
            "Elasticsearch/licensed/quickstart",
            f"Pod/{OPERATOR_NAMESPACE}/{OPERATOR_POD}",
        ]

        async def both_warned() -> bool:
            warned = set(await invalid_license_events(kube, None))
            return warned >= set(expected_events)

        await eventually(both_warned, what="InvalidLicense events on the ES and the operator Pod")
        # The warning is emitted instead of reconciling: the new generation stays unobserved.
        es = await kube.get(ES, namespace="licensed", name="quickstart")
        assert generations(es) == (2, 1)
        # Each event lives in its involved object's namespace.
        assert expected_events[0] in await invalid_license_events(kube, "licensed")
        assert expected_events[1] in await invalid_license_events(kube, OPERATOR_NAMESPACE)

        await kube.create(SECRETS, license_secret(document), namespace=OPERATOR_NAMESPACE)
        await eventually(
            licensed_reconciled, within=PROMPTLY, what="reconciled after the license returned"
        )
        es = await kube.get(ES, namespace="licensed", name="quickstart")
        assert generations(es) == (2, 2)
    finally:
        assert await operator.stop() == 0, operator.tail()


@pytest.mark.parametrize("namespace", ["default", "no-labels-at-all"])
async def test_static_scope_reconciles_anywhere_without_a_license(
    cluster: Cluster, temporal: WorkflowEnvironment, tmp_path: Path, namespace: str
) -> None:
    kube, kubeconfig = cluster
    config = write_config(
        tmp_path / "operator.yaml",
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "temporal-address": temporal.client.service_client.config.target_host,
            "temporal-task-queue": f"license-gate-static-{namespace}",
        },
    )
    for name in {OPERATOR_NAMESPACE, namespace}:
        await ensure_namespace(kube, name)
    await kube.create(PODS, operator_pod(), namespace=OPERATOR_NAMESPACE)
    operator = PodNamedOperator(config=config, kubeconfig=kubeconfig, log=tmp_path / "operator.log")
    await operator.start()
    try:
        await kube.create(ES, elasticsearch(namespace), namespace=namespace)

        async def static_reconciled() -> bool:
            return await reconciled(kube, namespace)

        await eventually(static_reconciled, what=f"Elasticsearch in {namespace} reconciled")
        secrets = await kube.list(SECRETS, namespace=OPERATOR_NAMESPACE)
        assert [
            secret["metadata"]["name"]
            for secret in secrets["items"]
            if (secret["metadata"].get("labels") or {}).get(LICENSE_SCOPE_LABEL)
            == LICENSE_SCOPE_OPERATOR
        ] == []
        # The gate runs before the reconcile, so any warning would already be recorded.
        assert await invalid_license_events(kube, None) == []
    finally:
        assert await operator.stop() == 0, operator.tail()


async def test_a_static_namespace_list_reconciles_only_the_listed_namespaces(
    cluster: Cluster, temporal: WorkflowEnvironment, tmp_path: Path
) -> None:
    kube, kubeconfig = cluster
    config = write_config(
        tmp_path / "operator.yaml",
        {
            "operator-namespace": OPERATOR_NAMESPACE,
            "namespaces": ["listed"],
            "temporal-address": temporal.client.service_client.config.target_host,
            "temporal-task-queue": "license-gate-static-list",
        },
    )
    for name in (OPERATOR_NAMESPACE, "listed", "unlisted"):
        await ensure_namespace(kube, name)
    await kube.create(PODS, operator_pod(), namespace=OPERATOR_NAMESPACE)
    operator = PodNamedOperator(config=config, kubeconfig=kubeconfig, log=tmp_path / "operator.log")
    await operator.start()
    try:
        # The unlisted one first: once the listed one is reconciled, the watch delivered both.
        for namespace in ("unlisted", "listed"):
            await kube.create(ES, elasticsearch(namespace), namespace=namespace)

        async def listed_reconciled() -> bool:
            return await reconciled(kube, "listed")

        await eventually(listed_reconciled, what="the Elasticsearch in the listed namespace")
        unlisted = await kube.get(ES, namespace="unlisted", name="quickstart")
        assert "status" not in unlisted or not unlisted["status"]
        assert (await kube.list(STATEFULSETS, namespace="unlisted"))["items"] == []
        assert await invalid_license_events(kube, None) == []
    finally:
        assert await operator.stop() == 0, operator.tail()
