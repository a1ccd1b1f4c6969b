"""The AutoOps end-to-end stack, shared by the AutoOps test modules: the operator and a fake
Elasticsearch running with a trial, and the policy, connection Secret and clusters they act on."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import DEPLOYMENTS
from stackflow.stack.policies.autoops import (
    ES_NAME_LABEL,
    ES_NAMESPACE_LABEL,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    api_key_name,
)
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    Operator,
    Stack,
    accept_trial,
    temporal_server,
    write_operator_config,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch

OPERATOR_NAMESPACE = "elastic-system"
POLICY = kind_resource("AutoOpsAgentPolicy")


@contextlib.asynccontextmanager
async def autoops_stack(
    directory: Path, target: ClusterTarget, *, settings: Mapping[str, Any] | None = None
) -> AsyncIterator[tuple[Stack, FakeElasticsearch]]:
    """The cluster, a fake Elasticsearch, a Temporal dev server and the operator dialling the
    fake for every cluster (so clusters become Ready); everything stopped after. ``settings``
    are more configuration keys."""
    async with (
        target.open(directory) as cluster,
        temporal_server() as temporal,
        FakeElasticsearch(any_credentials=True) as fake,
    ):
        # The Elasticsearch controller is licensed under dynamic scoping; AutoOps is not gated.
        await accept_trial(cluster.kube, operator_namespace=OPERATOR_NAMESPACE)
        config = write_operator_config(
            directory / "operator.yaml",
            temporal=temporal,
            elasticsearch_url=fake.url,
            settings=settings,
        )
        operator = Operator(
            config=config, kubeconfig=cluster.operator_kubeconfig, log=directory / "operator.log"
        )
        await operator.start()
        try:
            yield Stack(cluster, temporal, operator), fake
        finally:
            status = await operator.stop()
            if status != 0:
                raise AssertionError(f"operator exited {status}:\n{operator.tail()}")


def elasticsearch(namespace: str) -> dict[str, Any]:
    """A one-node cluster the policy selects (label ``autoops: on``)."""
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart", "namespace": namespace, "labels": {"autoops": "on"}},
        "spec": {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]},
    }


def connection() -> dict[str, Any]:
    """The ``autoOpsRef`` Secret with the keys ECK requires."""
    keys = ("autoops-token", "autoops-otel-url", "cloud-connected-mode-api-key")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "autoops-connection", "namespace": OPERATOR_NAMESPACE},
        "stringData": dict.fromkeys(keys, "value"),
    }


def policy() -> dict[str, Any]:
    """One policy of the operator namespace selecting ``autoops: on`` clusters."""
    return {
        "apiVersion": POLICY.api_version,
        "kind": "AutoOpsAgentPolicy",
        "metadata": {"name": "ops", "namespace": OPERATOR_NAMESPACE},
        "spec": {
            "version": "9.2.4",
            "resourceSelector": {"matchLabels": {"autoops": "on"}},
            "autoOpsRef": {"secretName": "autoops-connection"},
        },
    }


async def agents(kube: ResourceClient) -> list[str]:
    """The ``namespace/name`` of the cluster of every agent Deployment of the policy."""
    selector = f"{POLICY_NAMESPACE_LABEL}={OPERATOR_NAMESPACE},{POLICY_NAME_LABEL}=ops"
    listed = await kube.list(DEPLOYMENTS, namespace=OPERATOR_NAMESPACE, label_selector=selector)
    return sorted(
        f"{item['metadata']['labels'][ES_NAMESPACE_LABEL]}/"
        f"{item['metadata']['labels'][ES_NAME_LABEL]}"
        for item in listed["items"]
    )


def key_name(namespace: str) -> str:
    """The API key name of ``namespace``'s cluster."""
    return api_key_name(
        policy_namespace=OPERATOR_NAMESPACE,
        policy_name="ops",
        es_namespace=namespace,
        es_name="quickstart",
    )
