"""``enforce-rbac-on-refs`` and remote clusters end to end, on kubesim and the real API server: two
clusters of two namespaces exchange their transport CAs only once each one's ServiceAccount may
get the other cluster (checked both ways, as ECK).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stackflow.models.kinds import EVENTS
from tests.clusters import ClusterTarget, kubectl
from tests.e2e.harness import ES, Stack, create_namespace
from tests.e2e.remote_stack import NS_A, NS_B, copies, elasticsearch, remote_stack, to_b
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

#: A refused pair is looked at again after 15 s, then less often while nothing changes.
WITHIN = 200.0


@pytest.fixture
async def stack(
    cluster_target: ClusterTarget, tmp_path: Path
) -> AsyncIterator[tuple[Stack, FakeElasticsearch]]:
    """The licensed stack with ``enforce-rbac-on-refs: true``, and its fake Elasticsearch."""
    async with remote_stack(
        tmp_path, cluster_target, licensed=True, settings={"enforce-rbac-on-refs": True}
    ) as running:
        yield running


async def grant(running: Stack, *, reader: str, namespace: str, cluster: str) -> None:
    """Let ``reader``'s default ServiceAccount get the Elasticsearch ``namespace/cluster``."""
    admin = running.cluster.admin_kubeconfig
    await asyncio.to_thread(
        kubectl,
        admin,
        "create",
        "role",
        f"read-{cluster}",
        f"--namespace={namespace}",
        "--verb=get",
        "--resource=elasticsearches.elasticsearch.k8s.elastic.co",
        f"--resource-name={cluster}",
    )
    await asyncio.to_thread(
        kubectl,
        admin,
        "create",
        "rolebinding",
        f"{reader}-reads-{cluster}",
        f"--namespace={namespace}",
        f"--role=read-{cluster}",
        f"--serviceaccount={reader}:default",
    )


async def test_a_remote_cluster_pair_forms_once_each_service_account_may_get_the_other(
    stack: tuple[Stack, FakeElasticsearch],
) -> None:
    running, _ = stack
    kube = running.kube
    for namespace in (NS_A, NS_B):
        await create_namespace(kube, namespace, in_scope=True)
    await kube.create(ES, elasticsearch(NS_A, "a", [to_b(api_key=False)]), namespace=NS_A)
    await kube.create(ES, elasticsearch(NS_B, "b"), namespace=NS_B)
    refused = f"Remote cluster association not allowed: {NS_A}/a to {NS_B}/b"

    async def was_refused() -> bool:
        listed = await kube.list(EVENTS, namespace=NS_A)
        return any(event.get("message") == refused for event in listed["items"])

    try:
        await eventually(was_refused, within=WITHIN, what="the pair refused")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{running.operator.tail()}") from None
    assert await copies(kube) == set()

    # One direction is not enough: b's ServiceAccount must get a too.
    await grant(running, reader=NS_A, namespace=NS_B, cluster="b")
    refused_back = f"Remote cluster association not allowed: {NS_B}/b to {NS_A}/a"

    async def was_refused_back() -> bool:
        listed = await kube.list(EVENTS, namespace=NS_B)
        return any(event.get("message") == refused_back for event in listed["items"])

    await eventually(was_refused_back, within=WITHIN, what="the pair refused the other way")
    assert await copies(kube) == set()

    await grant(running, reader=NS_B, namespace=NS_A, cluster="a")

    async def exchanged() -> bool:
        return await copies(kube) == {f"a-{NS_B}-b-es-remote-ca", f"b-{NS_A}-a-es-remote-ca"}

    try:
        await eventually(exchanged, within=WITHIN, what="the CAs exchanged both ways")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{running.operator.tail()}") from None
