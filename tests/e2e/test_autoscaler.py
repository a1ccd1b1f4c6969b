"""ElasticsearchAutoscaler end to end: a Temporal dev server and ``stackflow run`` on kubesim and on
the real API server, every cluster's HTTP API at one fake Elasticsearch (the ``elasticsearch-url``
key), driven only through the Kubernetes API.

* no license: ECK's Warning ``InvalidLicense`` event on the autoscaler, its ``Active`` condition
  false, and the Elasticsearch's node sets unchanged;
* a license (the enterprise trial) arrives: the autoscaler is reconciled at once, the data node
  set gets the node count and memory the fake's ``_autoscaling/capacity`` answer implies, and
  the Elasticsearch controller carries them into the data StatefulSet.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import EVENTS, STATEFULSETS
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    Operator,
    accept_trial,
    create_namespace,
    get_or_none,
    temporal_server,
    write_operator_config,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

OPERATOR_NAMESPACE = "elastic-system"
NAMESPACE = "esa-team"
AUTOSCALER = kind_resource("ElasticsearchAutoscaler")
#: Long enough for a loaded 2-core machine to start an operator and reconcile.
WITHIN = 120.0
GI = 2**30
UNLICENSED = "Autoscaling is an enterprise feature. Enterprise features are disabled"


@pytest.fixture
async def fake_es() -> AsyncIterator[FakeElasticsearch]:
    """One fake Elasticsearch answering for every cluster (each with its own credentials)."""
    async with FakeElasticsearch(any_credentials=True) as fake:
        # 6Gi of memory needed in total (ECK: over the minimum of one node, capped at the 4Gi
        # maximum), 2Gi per node: two nodes of 4Gi.
        fake.state.autoscaling_capacity["data-tier"] = {
            "required_capacity": {
                "node": {"memory": 2 * GI},
                "total": {"memory": 6 * GI},
            },
            "current_capacity": {"node": {"memory": GI}, "total": {"memory": GI}},
            "current_nodes": [{"name": "quickstart-es-data-0"}],
            "deciders": {},
        }
        yield fake


def elasticsearch() -> dict[str, Any]:
    """A cluster of one master node and one data node; the autoscaler scales the data one."""
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": NAMESPACE},
        "spec": {
            "version": "9.1.0",
            "nodeSets": [
                {"name": "master", "count": 1, "config": {"node.roles": ["master"]}},
                {"name": "data", "count": 1, "config": {"node.roles": ["data"]}},
            ],
        },
    }


def autoscaler() -> dict[str, Any]:
    """One policy for the data role: 1 to 5 nodes of 2Gi to 4Gi."""
    return {
        "apiVersion": AUTOSCALER.api_version,
        "kind": "ElasticsearchAutoscaler",
        "metadata": {"name": "esa", "namespace": NAMESPACE},
        "spec": {
            "elasticsearchRef": {"name": "quickstart"},
            "policies": [
                {
                    "name": "data-tier",
                    "roles": ["data"],
                    "resources": {
                        "nodeCount": {"min": 1, "max": 5},
                        "memory": {"min": "2Gi", "max": "4Gi"},
                    },
                }
            ],
        },
    }


async def data_node_set(kube: ResourceClient) -> dict[str, Any]:
    """The cluster's ``data`` node set as stored."""
    es = await kube.get(ES, namespace=NAMESPACE, name="quickstart")
    found: dict[str, Any] = next(n for n in es["spec"]["nodeSets"] if n["name"] == "data")
    return found


async def conditions(kube: ResourceClient) -> dict[str, str]:
    """The autoscaler's conditions, type → status."""
    obj = await kube.get(AUTOSCALER, namespace=NAMESPACE, name="esa")
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


async def test_unlicensed_warns_and_scales_nothing_until_a_license_arrives(
    cluster_target: ClusterTarget, tmp_path: Path, fake_es: FakeElasticsearch
) -> None:
    async with cluster_target.open(tmp_path) as cluster, temporal_server() as temporal:
        config = write_operator_config(
            tmp_path / "operator.yaml",
            temporal=temporal,
            elasticsearch_url=fake_es.url,
        )
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=tmp_path / "operator.log"
        )
        await operator.start()
        try:
            await scenario(cluster.kube, fake_es)
        finally:
            status = await operator.stop()
            if status != 0:
                raise AssertionError(f"operator exited {status}:\n{operator.tail()}")


async def scenario(kube: ResourceClient, fake_es: FakeElasticsearch) -> None:
    """Unlicensed: the notice and nothing scaled; licensed: scaled per the capacity answer."""
    await create_namespace(kube, NAMESPACE, in_scope=True)
    await kube.create(ES, elasticsearch(), namespace=NAMESPACE)
    await kube.create(AUTOSCALER, autoscaler(), namespace=NAMESPACE)

    async def warned() -> bool:
        listed = await kube.list(EVENTS, namespace=NAMESPACE)
        return any(
            event.get("type") == "Warning"
            and event.get("reason") == "InvalidLicense"
            and event.get("action") == "LicenseCheck"
            and event["involvedObject"].get("kind") == "ElasticsearchAutoscaler"
            and event["involvedObject"].get("name") == "esa"
            and event.get("message") == UNLICENSED
            for event in listed["items"]
        )

    await eventually(warned, within=WITHIN, what="an InvalidLicense event on the autoscaler")

    async def inactive() -> bool:
        return (await conditions(kube)).get("Active") == "False"

    await eventually(inactive, within=WITHIN, what="the autoscaler's Active condition false")

    # Nothing written: the Elasticsearch is as created (its own controller waits for the
    # license too, the namespace selector being an enterprise feature).
    assert await data_node_set(kube) == elasticsearch()["spec"]["nodeSets"][1]
    assert not [call for call in fake_es.calls if call.path.startswith("/_autoscaling")]

    await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)

    async def scaled() -> bool:
        data = await data_node_set(kube)
        memory = ((data.get("resources") or {}).get("requests") or {}).get("memory")
        return bool(data["count"] == 2 and memory == "4Gi")

    await eventually(scaled, within=WITHIN, what="the data node set scaled to two 4Gi nodes")

    async def statefulset_follows() -> bool:
        # The Elasticsearch controller carries the new node set into its StatefulSet.
        found = await get_or_none(
            kube, STATEFULSETS, namespace=NAMESPACE, name="quickstart-es-data"
        )
        if found is None:
            return False
        containers = found["spec"]["template"]["spec"]["containers"]
        es = next(c for c in containers if c["name"] == "elasticsearch")
        memory = es.get("resources", {}).get("limits", {}).get("memory")
        return bool(found["spec"]["replicas"] == 2 and memory == "4Gi")

    await eventually(statefulset_follows, within=WITHIN, what="the data StatefulSet: 2 x 4Gi")

    async def active() -> bool:
        got = await conditions(kube)
        return got.get("Active") == "True" and got.get("Online") == "True"

    await eventually(active, within=WITHIN, what="the autoscaler active and online")
    assert fake_es.state.autoscaling_policies == {"data-tier": {"roles": ["data"], "deciders": {}}}
