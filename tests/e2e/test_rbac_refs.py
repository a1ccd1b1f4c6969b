"""``enforce-rbac-on-refs`` end to end, on kubesim and the real API server: an application may
use an Elasticsearch of another namespace only once its ServiceAccount may get it.

The operator runs with the key on; the user grants access with kubectl, as ECK's documentation
has them do (a Role allowing ``get`` on the Elasticsearch, bound to the application's
ServiceAccount). The real API server answers the operator's SubjectAccessReviews from those
objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from stackflow.api.kinds import kind_resource
from tests.clusters import ClusterTarget, kubectl
from tests.e2e.harness import (
    ES,
    EVENTS,
    SECRETS,
    Stack,
    create_namespace,
    manifest,
    operator_stack,
)
from tests.polling import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(420)]

VERSION = "8.15.0"
ES_CONF = "association.k8s.elastic.co/es-conf"
KIBANA = kind_resource("Kibana")
ES_NS, APP_NS = "rbac-data", "rbac-apps"
#: A Pending association is looked at again after 30 s, then less often while nothing changes
#: (at most every 5 minutes): a grant made soon after the refusal is seen within a few minutes.
WITHIN = 300.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stack(
    cluster_target: ClusterTarget, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    """One cluster, Temporal dev server and operator with ``enforce-rbac-on-refs: true``."""
    async with operator_stack(
        tmp_path_factory.mktemp("rbac-refs"),
        cluster_target,
        settings={"enforce-rbac-on-refs": True},
    ) as running:
        yield running


async def kibana_status(stack: Stack) -> dict[str, Any]:
    kibana = await stack.kube.get(KIBANA, namespace=APP_NS, name="kb")
    return dict(kibana.get("status") or {})


async def refusals(stack: Stack) -> list[str]:
    """The messages of the Warnings that the Kibana's access was refused."""
    listed = await stack.kube.list(EVENTS, namespace=APP_NS)
    return [
        str(event.get("message"))
        for event in listed["items"]
        if (event.get("involvedObject") or {}).get("name") == "kb"
        and event.get("type") == "Warning"
        and event.get("reason") == "AssociationError"
    ]


async def test_a_kibana_is_associated_across_namespaces_once_rbac_lets_it_get_the_cluster(
    stack: Stack,
) -> None:
    kube = stack.kube
    admin = stack.cluster.admin_kubeconfig
    await create_namespace(kube, ES_NS, in_scope=True)
    await create_namespace(kube, APP_NS, in_scope=True)
    es_spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
    await kube.create(ES, manifest("Elasticsearch", "data", ES_NS, es_spec), namespace=ES_NS)
    kb_spec = {
        "version": VERSION,
        "count": 1,
        "elasticsearchRef": {"name": "data", "namespace": ES_NS},
    }
    await kube.create(KIBANA, manifest("Kibana", "kb", APP_NS, kb_spec), namespace=APP_NS)

    refused = f"Association not allowed: {APP_NS}/kb to {ES_NS}/data"

    async def was_refused() -> bool:
        return refused in await refusals(stack)

    try:
        await eventually(was_refused, within=WITHIN, what="the association refused")
    except AssertionError as error:
        raise AssertionError(
            f"{error}: {await kibana_status(stack)}\n{stack.operator.tail()}"
        ) from None
    assert (await kibana_status(stack)).get("elasticsearchAssociationStatus") == "Pending"
    kibana = await kube.get(KIBANA, namespace=APP_NS, name="kb")
    assert ES_CONF not in (kibana["metadata"].get("annotations") or {})
    es_side = {
        item["metadata"]["name"] for item in (await kube.list(SECRETS, namespace=ES_NS))["items"]
    }
    assert f"{APP_NS}-kb-kibana-user" not in es_side

    # The user lets the Kibana's ServiceAccount read that one cluster.
    await asyncio.to_thread(
        kubectl,
        admin,
        "create",
        "role",
        "read-data",
        f"--namespace={ES_NS}",
        "--verb=get",
        "--resource=elasticsearches.elasticsearch.k8s.elastic.co",
        "--resource-name=data",
    )
    await asyncio.to_thread(
        kubectl,
        admin,
        "create",
        "rolebinding",
        "kb-reads-data",
        f"--namespace={ES_NS}",
        "--role=read-data",
        f"--serviceaccount={APP_NS}:default",
    )

    async def established() -> bool:
        return (await kibana_status(stack)).get("elasticsearchAssociationStatus") == "Established"

    try:
        await eventually(established, within=WITHIN, what="the association established")
    except AssertionError as error:
        raise AssertionError(
            f"{error}: {await kibana_status(stack)}\n{stack.operator.tail()}"
        ) from None
    kibana = await kube.get(KIBANA, namespace=APP_NS, name="kb")
    assert ES_CONF in kibana["metadata"]["annotations"]
    es_side = {
        item["metadata"]["name"] for item in (await kube.list(SECRETS, namespace=ES_NS))["items"]
    }
    assert f"{APP_NS}-kb-kibana-user" in es_side
