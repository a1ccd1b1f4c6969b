"""AutoOpsAgentPolicy end to end: a Temporal dev server, a fake Elasticsearch every cluster is
reached at (``elasticsearch-url``) and ``stackflow run`` (dynamic scope), driven only through the
Kubernetes API.

One policy of the operator namespace selects two clusters, one in scope and one out: one agent
Deployment; the other namespace flipped in: two; both flipped out: none, and every API key the
operator created for them invalidated on the fake Elasticsearch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import DEPLOYMENTS, SECRETS
from stackflow.stack.policies.autoops import ES_NAME_LABEL, POLICY_NAME_LABEL
from tests.clusters import ClusterTarget
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
from tests.e2e.harness import ES, Stack, create_namespace, set_in_scope
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

#: Long enough for a loaded 2-core machine to start an operator and reconcile.
WITHIN = 120.0
IN, LATER = "aop-in", "aop-later"


@pytest.fixture
async def stack(
    cluster_target: ClusterTarget, tmp_path: Path
) -> AsyncIterator[tuple[Stack, FakeElasticsearch]]:
    """The running stack and its fake Elasticsearch."""
    async with autoops_stack(tmp_path, cluster_target) as running:
        yield running


async def api_key_secrets(kube: ResourceClient) -> int:
    """How many API-key Secrets of the policy exist."""
    selector = f"{POLICY_NAME_LABEL}=ops,autoops.k8s.elastic.co/secret-type=api-key"
    listed = await kube.list(SECRETS, namespace=OPERATOR_NAMESPACE, label_selector=selector)
    return len(listed["items"])


async def test_agents_follow_namespace_flips_and_keys_are_invalidated(
    stack: tuple[Stack, FakeElasticsearch],
) -> None:
    running, fake = stack
    kube = running.kube
    for namespace, in_scope in ((IN, True), (LATER, False)):
        await create_namespace(kube, namespace, in_scope=in_scope)
        await kube.create(ES, elasticsearch(namespace), namespace=namespace)
    await kube.create(SECRETS, connection(), namespace=OPERATOR_NAMESPACE)
    await kube.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)

    async def has_agents(expected: list[str]) -> bool:
        return await agents(kube) == expected

    await eventually(
        lambda: has_agents([f"{IN}/quickstart"]), within=WITHIN, what="one agent, in scope"
    )
    assert fake.api_keys_named(key_name(LATER)) == {}
    listed = await kube.list(DEPLOYMENTS, namespace=OPERATOR_NAMESPACE)
    container = next(
        item for item in listed["items"] if item["metadata"]["labels"].get(ES_NAME_LABEL)
    )["spec"]["template"]["spec"]["containers"][0]
    # ECK's agent: the collector config mounted at /mnt/config, the cluster's internal Service.
    assert container["args"] == ["--config", "/mnt/config/autoops_es.yml"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["AUTOOPS_ES_URL"] == f"https://quickstart-es-internal-http.{IN}.svc:9200"

    await set_in_scope(kube, LATER, True)
    await eventually(
        lambda: has_agents([f"{IN}/quickstart", f"{LATER}/quickstart"]),
        within=WITHIN,
        what="an agent for the flipped-in cluster too",
    )

    await set_in_scope(kube, IN, False)
    await set_in_scope(kube, LATER, False)
    await eventually(lambda: has_agents([]), within=WITHIN, what="no agent once both left scope")

    async def keys_invalidated() -> bool:
        return await api_key_secrets(kube) == 0 and all(
            keys and not any(keys.values())
            for keys in (fake.api_keys_named(key_name(IN)), fake.api_keys_named(key_name(LATER)))
        )

    await eventually(
        keys_invalidated, within=WITHIN, what="both clusters' API keys invalidated, Secrets gone"
    )
    # The clusters themselves were left as they were (out of scope: not the operator's now).
    for namespace in (IN, LATER):
        await kube.get(ES, namespace=namespace, name="quickstart")
