"""``enforce-rbac-on-refs`` and AutoOps end to end, on kubesim and the real API server: a policy
serves a cluster of another namespace only once its ServiceAccount may get it.

The operator runs with the key on and dials a fake Elasticsearch for every cluster (so the
cluster becomes Ready and its API key can be made); the user grants access with kubectl.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.clusters import ClusterTarget, kubectl
from tests.e2e.autoops_stack import (
    OPERATOR_NAMESPACE,
    POLICY,
    agents,
    autoops_stack,
    connection,
    elasticsearch,
    key_name,
    policy,
)
from tests.e2e.harness import ES, SECRETS, Stack, create_namespace
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

NAMESPACE = "rbac-autoops"
#: A policy whose clusters are all skipped is Ready and looks again every 2 minutes.
WITHIN = 200.0


@pytest.fixture
async def stack(
    cluster_target: ClusterTarget, tmp_path: Path
) -> AsyncIterator[tuple[Stack, FakeElasticsearch]]:
    """The running stack with ``enforce-rbac-on-refs: true``, and its fake Elasticsearch."""
    async with autoops_stack(
        tmp_path, cluster_target, settings={"enforce-rbac-on-refs": True}
    ) as running:
        yield running


async def test_a_policy_serves_a_cluster_of_another_namespace_once_rbac_lets_it_get_it(
    stack: tuple[Stack, FakeElasticsearch],
) -> None:
    running, fake = stack
    kube = running.kube
    await create_namespace(kube, NAMESPACE, in_scope=True)
    await kube.create(ES, elasticsearch(NAMESPACE), namespace=NAMESPACE)
    await kube.create(SECRETS, connection(), namespace=OPERATOR_NAMESPACE)
    body = policy()
    body["spec"]["serviceAccountName"] = "autoops"
    await kube.create(POLICY, body, namespace=OPERATOR_NAMESPACE)
    seen: dict[str, Any] = {}

    async def skipped() -> bool:
        obj = await kube.get(POLICY, namespace=OPERATOR_NAMESPACE, name="ops")
        seen["status"] = obj.get("status") or {}
        detail = (seen["status"].get("details") or {}).get(f"{NAMESPACE}/quickstart") or {}
        return detail == {
            "phase": "Skipped",
            "message": "RBAC access denied for service account autoops",
        }

    try:
        await eventually(skipped, within=WITHIN, what="the cluster skipped")
    except AssertionError as error:
        raise AssertionError(f"{error}: {seen}\n{running.operator.tail()}") from None
    assert await agents(kube) == []
    assert fake.api_keys_named(key_name(NAMESPACE)) == {}

    await asyncio.to_thread(
        kubectl,
        running.cluster.admin_kubeconfig,
        "create",
        "role",
        "read-quickstart",
        f"--namespace={NAMESPACE}",
        "--verb=get",
        "--resource=elasticsearches.elasticsearch.k8s.elastic.co",
        "--resource-name=quickstart",
    )
    await asyncio.to_thread(
        kubectl,
        running.cluster.admin_kubeconfig,
        "create",
        "rolebinding",
        "autoops-reads-quickstart",
        f"--namespace={NAMESPACE}",
        "--role=read-quickstart",
        f"--serviceaccount={OPERATOR_NAMESPACE}:autoops",
    )

    async def served() -> bool:
        return await agents(kube) == [f"{NAMESPACE}/quickstart"]

    try:
        await eventually(served, within=WITHIN, what="an agent for the cluster")
    except AssertionError as error:
        raise AssertionError(f"{error}: {seen}\n{running.operator.tail()}") from None
    assert list(fake.api_keys_named(key_name(NAMESPACE)).values()) == [True]
