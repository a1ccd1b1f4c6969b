"""Shared set-up of the association activity tests: two labelled namespaces (the applications' and
the cluster's), every application CRD, an Elasticsearch with the children its controller writes,
and one reconcile of an association controller."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio.testing import ActivityEnvironment

from activities.context import ControllerContext
from activities.errors import translated_errors
from stackflow.api.kinds import kind_resource
from stackflow.controllers import CONTROLLERS
from stackflow.controllers.elasticsearch import ELASTICSEARCH, ELASTICSEARCH_CONTROLLER
from stackflow.models.engine import (
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import SECRETS
from stackflow.stack.apps import APP_KINDS
from tests.integration import families
from tests.integration.controller_context import Cluster, serve_crds

APP_NS = "team-a"
ES_NS = "team-b"
ON = {"eck": "on"}
ES_CONF = "association.k8s.elastic.co/es-conf"


@pytest.fixture
async def world(cluster: Cluster, ka_client: client.ApiClient) -> Cluster:
    """kubesim with every CRD and two labelled namespaces: the applications' and the cluster's."""
    await serve_crds(cluster.kubesim, ka_client, *APP_KINDS)
    await cluster.create_namespace(APP_NS, ON)
    await cluster.create_namespace(ES_NS, ON)
    return cluster


def ref_for(controller_name: str, namespace: str, name: str) -> ResourceRef:
    """The reconcile ref of ``controller_name`` for the object ``namespace/name``."""
    return CONTROLLERS.named(controller_name).ref(namespace=namespace, name=name)


def app_manifest(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    """An application object of ``kind`` at version 8.15.0 with ``spec``."""
    resource = kind_resource(kind)
    return {
        "apiVersion": resource.api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "8.15.0", **spec},
    }


async def create_elasticsearch(
    cluster: Cluster, context: ControllerContext, namespace: str = ES_NS
) -> None:
    """An Elasticsearch with its children (HTTP Service, public certificates) in ``namespace``."""
    await cluster.raw.create(
        ELASTICSEARCH,
        {
            "apiVersion": "elasticsearch.k8s.elastic.co/v1",
            "kind": "Elasticsearch",
            "metadata": {"name": "es", "namespace": namespace},
            "spec": {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]},
        },
    )
    await ActivityEnvironment().run(
        families.reconcile,
        context,
        ReconcileInput(
            ref=ELASTICSEARCH_CONTROLLER.ref(namespace=namespace, name="es"), triggers=()
        ),
    )


async def reconcile(
    context: ControllerContext, controller_name: str, ref: ResourceRef
) -> ReconcileResult:
    """One reconcile of ``ref`` by the controller ``controller_name``, errors translated."""
    return await ActivityEnvironment().run(
        translated_errors(families.reconcile),
        context,
        ReconcileInput(ref=ref, triggers=(Trigger(reason=TriggerReason.MANUAL, source="test"),)),
    )


async def read(cluster: Cluster, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """The stored object ``namespace/name`` of ``kind``."""
    return await cluster.raw.get(kind_resource(kind), namespace=namespace, name=name)


async def secrets_in(cluster: Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    """The Secrets of ``namespace`` by name."""
    listed = await cluster.raw.list(SECRETS, namespace=namespace)
    return {str(item["metadata"]["name"]): item for item in listed["items"]}
