"""The license-wait condition activity against kubesim: written, kept, removed, never out of scope."""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.errors import translated_errors
from activities.license_wait_condition import (
    CONDITION_TYPE,
    REASON_WAITING_FOR_LICENSE,
    license_condition,
)
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.models.engine import ReconcileInput, ResourceRef, Trigger, TriggerReason
from stackflow.models.license_condition import LicenseConditionChange, LicenseConditionInput
from tests.integration import families
from tests.integration.controller_context import SELECTOR, Cluster, cluster

__all__ = ["cluster"]

MANAGED = "team-a"
UNMANAGED = "team-b"
REACHABLE = {"type": "ElasticsearchIsReachable", "status": "False", "message": "not reachable"}


def es_ref(namespace: str = MANAGED) -> ResourceRef:
    """The quickstart cluster as the Elasticsearch controller sees it."""
    return ResourceRef.of("elasticsearch", ELASTICSEARCH, namespace=namespace, name="quickstart")


async def create_es(cluster: Cluster, namespace: str = MANAGED) -> None:
    """A one-node cluster whose status already holds a controller's condition."""
    await cluster.raw.create(
        ELASTICSEARCH,
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "metadata": {"name": "quickstart", "namespace": namespace},
            "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
        },
    )
    await cluster.raw.patch_status(
        ELASTICSEARCH,
        {"status": {"conditions": [REACHABLE]}},
        namespace=namespace,
        name="quickstart",
    )


async def conditions(cluster: Cluster, namespace: str = MANAGED) -> list[dict[str, Any]]:
    """The cluster's status conditions as stored."""
    es = await cluster.raw.get(ELASTICSEARCH, namespace=namespace, name="quickstart")
    return list((es.get("status") or {}).get("conditions") or [])


async def change(context: Any, change: LicenseConditionChange, namespace: str = MANAGED) -> bool:
    """Run the activity once; whether it wrote."""
    request = LicenseConditionInput(
        ref=es_ref(namespace), change=change, reason="no operator license Secret found"
    )
    result = await ActivityEnvironment().run(license_condition, context, request)
    return result.written


async def test_written_once_next_to_the_controllers_conditions_then_removed(
    cluster: Cluster,
) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(MANAGED, {"eck": "on"})
    await create_es(cluster)

    assert await change(context, LicenseConditionChange.WAITING)
    assert not await change(context, LicenseConditionChange.WAITING)
    stored = await conditions(cluster)
    assert [condition["type"] for condition in stored] == [REACHABLE["type"], CONDITION_TYPE]
    ours = stored[1]
    assert (ours["status"], ours["reason"]) == ("False", REASON_WAITING_FOR_LICENSE)
    assert "no operator license Secret found" in ours["message"]
    assert "namespace selector" in ours["message"]

    assert await change(context, LicenseConditionChange.CLEARED)
    assert not await change(context, LicenseConditionChange.CLEARED)
    assert await conditions(cluster) == [REACHABLE]


async def test_a_resource_out_of_scope_is_never_written(cluster: Cluster) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(UNMANAGED, {"eck": "off"})
    await create_es(cluster, UNMANAGED)

    assert not await change(context, LicenseConditionChange.WAITING, UNMANAGED)
    assert await conditions(cluster, UNMANAGED) == [REACHABLE]


async def test_a_licensed_elasticsearch_reconcile_removes_it(cluster: Cluster) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(MANAGED, {"eck": "on"})
    await create_es(cluster)
    assert await change(context, LicenseConditionChange.WAITING)

    request = ReconcileInput(
        ref=es_ref(), triggers=(Trigger(reason=TriggerReason.LICENSE_CHANGED, source="test"),)
    )
    await ActivityEnvironment().run(translated_errors(families.reconcile), context, request)

    types = [condition["type"] for condition in await conditions(cluster)]
    assert CONDITION_TYPE not in types
    assert "ReconciliationComplete" in types
