"""The remote-clusters end-to-end stack, shared by the remote-cluster test modules: the operator
and a fake Elasticsearch, two namespaces, clusters referring to each other, and what the operator
leaves in them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import SECRETS
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    ES,
    Operator,
    Stack,
    accept_trial,
    get_or_none,
    temporal_server,
    write_operator_config,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch

OPERATOR_NAMESPACE = "elastic-system"
NS_A, NS_B = "rc-client", "rc-server"
ACCESS = {"search": [{"names": ["logs-*"]}]}


@contextlib.asynccontextmanager
async def remote_stack(
    directory: Path,
    target: ClusterTarget,
    *,
    licensed: bool,
    settings: Mapping[str, Any] | None = None,
) -> AsyncIterator[tuple[Stack, FakeElasticsearch]]:
    """The cluster, Temporal, a fake Elasticsearch on 127.0.0.1 and the operator dialling it;
    ``settings`` are more configuration keys."""
    async with (
        target.open(directory) as cluster,
        temporal_server() as temporal,
        FakeElasticsearch(any_credentials=True) as fake,
    ):
        if licensed:
            await accept_trial(cluster.kube, operator_namespace=OPERATOR_NAMESPACE)
        path = write_operator_config(
            directory / "operator.yaml", temporal=temporal, settings=settings
        )
        config = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**config, "elasticsearch-url": fake.url}))
        operator = Operator(
            config=path, kubeconfig=cluster.operator_kubeconfig, log=directory / "operator.log"
        )
        await operator.start()
        try:
            yield Stack(cluster, temporal, operator), fake
        finally:
            status = await operator.stop()
            if status != 0:
                raise AssertionError(f"operator exited {status}:\n{operator.tail()}")


def elasticsearch(namespace: str, name: str, remotes: list[dict[str, Any]] | None = None) -> Any:
    """A one-node Elasticsearch ``namespace/name`` with ``remotes`` as its remote clusters."""
    spec: dict[str, Any] = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]}
    if remotes:
        spec["remoteClusters"] = remotes
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def to_b(*, api_key: bool) -> dict[str, Any]:
    """The remote cluster entry pointing at cluster ``b``, through an API key if ``api_key``."""
    entry: dict[str, Any] = {"name": "to-b", "elasticsearchRef": {"name": "b", "namespace": NS_B}}
    if api_key:
        entry["apiKey"] = {"access": ACCESS}
    return entry


async def copies(kube: ResourceClient) -> set[str]:
    """Which halves of the a-b CA exchange exist."""
    found = set()
    for namespace, name in ((NS_A, f"a-{NS_B}-b-es-remote-ca"), (NS_B, f"b-{NS_A}-a-es-remote-ca")):
        if await get_or_none(kube, SECRETS, namespace=namespace, name=name) is not None:
            found.add(name)
    return found
