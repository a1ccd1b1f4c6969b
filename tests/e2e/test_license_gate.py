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

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from stackflow.kube.resources import ResourceClient
from stackflow.licensing.model import LICENSE_SCOPE_LABEL, LICENSE_SCOPE_OPERATOR
from stackflow.models.kinds import EVENTS, PODS, SECRETS, STATEFULSETS
from tests.clusters import ClusterTarget, ensure_namespace
from tests.e2e.harness import ES, temporal_server
from tests.e2e.license_setup import (
    LICENSE_SECRET,
    OPERATOR_NAMESPACE,
    OPERATOR_POD,
    PROMPTLY,
    PodNamedOperator,
    elasticsearch,
    generations,
    issue_enterprise_license,
    license_secret,
    operator_pod,
    reconciled,
    write_config,
)
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

INVALID_LICENSE = "InvalidLicense"

Cluster = tuple[ResourceClient, Path]


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
