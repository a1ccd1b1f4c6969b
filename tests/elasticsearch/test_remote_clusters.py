"""Two real clusters in two namespaces connect as remote clusters: the operator writes the seeds
(the other cluster's transport Service) through the cluster settings API and exchanges the
transport CAs (``<es>-es-remote-ca``), and the nodes themselves report the connection."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.harness import ES
from tests.elasticsearch.real_stack import (
    ElasticsearchOf,
    RealStack,
    elasticsearch,
    green_with,
    in_scope_namespace,
)
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")
#: On the real API server alone where it runs (tests/elasticsearch/conftest.py).
ONE_API_SERVER = True

NS_A, NS_B = "rc-a", "rc-b"


async def test_two_clusters_connect_through_the_ca_exchange(es_stack: RealStack) -> None:
    for namespace in (NS_A, NS_B):
        await in_scope_namespace(es_stack.kube, namespace)
    remote = {"name": "to-b", "elasticsearchRef": {"name": "b", "namespace": NS_B}}
    await es_stack.kube.create(ES, elasticsearch(NS_B, "b", count=1), namespace=NS_B)
    await es_stack.kube.create(
        ES,
        elasticsearch(NS_A, "a", count=1, extra={"remoteClusters": [remote]}),
        namespace=NS_A,
    )
    a, b = ElasticsearchOf(es_stack.kube, NS_A, "a"), ElasticsearchOf(es_stack.kube, NS_B, "b")
    await green_with(a, 1)
    await green_with(b, 1)

    async def connected() -> bool:
        _, info = await a.call("GET", "/_remote/info")
        entry: dict[str, Any] = info.get("to-b") or {}
        return bool(entry.get("connected")) and entry.get("num_nodes_connected", 0) >= 1

    # Each side trusts the other once its node has reloaded the exchanged CA from the mounted
    # Secret (re-read every few seconds by the runner, then by Elasticsearch): 70 s alone on the
    # real API server, more than 240 s once under CI's load.
    await eventually(connected, within=480, what="a's remote to-b connected (GET _remote/info)")
    _, info = await a.call("GET", "/_remote/info")
    assert info["to-b"]["seeds"] == [f"b-es-transport.{NS_B}.svc:9300"]
    # The connection is real: a search across clusters reaches b's index through a.
    await b.call("PUT", "/remote-books", {"settings": {"number_of_replicas": 0}})
    await b.call("POST", "/remote-books/_doc?refresh=true", {"title": "far"}, expect=201)
    _, found = await a.call("GET", "/to-b:remote-books/_search")
    assert [hit["_source"] for hit in found["hits"]["hits"]] == [{"title": "far"}]
