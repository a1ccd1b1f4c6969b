"""Shared set-up of the Elasticsearch activity tests: the ``team-a`` namespace, a cluster's ref and
manifest, and one reconcile of it."""

from __future__ import annotations

from typing import Any

from temporalio.testing import ActivityEnvironment

from activities.context import ControllerContext
from activities.errors import translated_errors
from stackflow.models.engine import (
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
)
from tests.integration import families

NAMESPACE = "team-a"


def es_ref(name: str = "quickstart", namespace: str = NAMESPACE) -> ResourceRef:
    """The ref of the Elasticsearch ``namespace/name``, as the controller table makes it."""
    return ResourceRef(
        controller="elasticsearch",
        group="elasticsearch.k8s.elastic.co",
        version="v1",
        kind="Elasticsearch",
        plural="elasticsearches",
        namespace=namespace,
        name=name,
    )


def es_manifest(
    name: str = "quickstart", *, count: int = 2, version: str = "8.15.0"
) -> dict[str, Any]:
    """An Elasticsearch of one node set ``default`` with ``count`` nodes, in ``team-a``."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"version": version, "nodeSets": [{"name": "default", "count": count}]},
    }


def reconcile_input(ref: ResourceRef) -> ReconcileInput:
    """The input of a reconcile woken by the resource's creation."""
    return ReconcileInput(ref=ref, triggers=(Trigger(reason=TriggerReason.CREATED, source="test"),))


async def run_reconcile(context: ControllerContext, ref: ResourceRef) -> ReconcileResult:
    """Run one reconcile of ``ref`` as the activity worker would, errors translated."""
    return await ActivityEnvironment().run(
        translated_errors(families.reconcile), context, reconcile_input(ref)
    )
