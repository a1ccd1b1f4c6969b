"""A poison object (nested deeper than an object may be) is quarantined by the informer: skipped
with one Warning event on it, while every other object of its kind, in any namespace, is still
listed and watched; once fixed, it is delivered like any other. On kubesim and on the real API
server (which, unlike Python's json, decodes 10,000 levels: there the poison is 1,500 deep)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stackflow.api.kinds import kind_resource
from stackflow.kube import errors
from stackflow.kube.cache import object_key
from stackflow.kube.decoding import MAX_OBJECT_DEPTH
from stackflow.kube.informer import QUARANTINED_REASON, Backoff, Informer
from stackflow.kube.resources import ResourceClient
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import CONFIGMAPS, EVENTS
from tests.clusters import APISERVER, ClusterTarget, KubeCluster, ensure_namespace
from tests.polling import eventually

ELASTICSEARCH = kind_resource("Elasticsearch")
FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)

#: kubesim is Python too and cannot store what Python's json cannot decode: there the poison is
#: deeper than an object may be, though not too deep to decode; on the real API server it is
#: deep enough to make Python's json give up (the fallback decoder's case).
POISON_DEPTH = {APISERVER: 1500}
SHALLOW_POISON_DEPTH = MAX_OBJECT_DEPTH + 20


def nested_json(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep (written out: json.dumps would recurse)."""
    return '{"a":' * (depth - 1) + '{"leaf":true}' + "}" * (depth - 1)


def elasticsearch(namespace: str, name: str, config: Any) -> dict[str, Any]:
    return {
        "apiVersion": ELASTICSEARCH.api_version,
        "kind": "Elasticsearch",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "version": "8.15.0",
            "nodeSets": [{"name": "default", "count": 1, "config": config}],
        },
    }


async def create_poison(kube: ResourceClient, namespace: str, name: str, depth: int) -> None:
    """Create an Elasticsearch whose nodeSets[0].config is nested ``depth`` levels, sent as
    bytes (as kubectl would): the API server accepts it, config preserves unknown fields."""
    placeholder = "__CONFIG__"
    text = json.dumps(elasticsearch(namespace, name, placeholder))
    raw = text.replace(json.dumps(placeholder), nested_json(depth)).encode()
    response = await kube.api_client.call_api(
        ELASTICSEARCH.collection_path(namespace),
        "POST",
        # YAML is a superset of JSON; it lets the bytes through the client unchanged.
        header_params={"Content-Type": "application/yaml", "Accept": "application/json"},
        body=raw,
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    async with response:
        assert response.status == 201, await response.text()


async def quarantine_events(
    kube: ResourceClient, namespace: str, name: str
) -> list[dict[str, Any]]:
    listed = await kube.list(EVENTS, namespace=namespace)
    return [
        event
        for event in listed["items"]
        if event.get("reason") == QUARANTINED_REASON and event["involvedObject"].get("name") == name
    ]


@pytest.fixture
async def cluster(cluster_target: ClusterTarget, tmp_path: Path) -> AsyncIterator[KubeCluster]:
    async with cluster_target.open(tmp_path) as opened:
        for namespace in ("tenant-a", "tenant-b"):
            await ensure_namespace(opened.kube, namespace)
        yield opened


async def test_a_poison_elasticsearch_is_quarantined_and_every_other_one_still_delivered(
    cluster: KubeCluster,
) -> None:
    kube = cluster.kube
    depth = POISON_DEPTH.get(cluster.name, SHALLOW_POISON_DEPTH)
    await create_poison(kube, "tenant-a", "listed-poison", depth)
    await kube.create(ELASTICSEARCH, elasticsearch("tenant-b", "listed-good", {"a": 1}))

    delivered: list[tuple[str, NamespacedName]] = []
    informer = Informer(kube, ELASTICSEARCH, backoff=FAST_BACKOFF)

    def record(event_type: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        delivered.append((event_type, object_key(obj)))

    informer.add_handler(record)
    informer.start()
    try:
        await eventually(lambda: informer.has_synced, what="the informer synced")
        # The list held the poison item: the others are delivered, the poison is not cached.
        assert ("ADDED", ("tenant-b", "listed-good")) in delivered
        assert informer.cache.get(namespace="tenant-a", name="listed-poison") is None

        # On the watch: a poison object, then a good one after it, which still arrives.
        await create_poison(kube, "tenant-a", "watched-poison", depth)
        await kube.create(ELASTICSEARCH, elasticsearch("tenant-b", "watched-good", {"a": 1}))
        await eventually(
            lambda: ("ADDED", ("tenant-b", "watched-good")) in delivered,
            what="the Elasticsearch created after the poison one delivered",
        )
        assert informer.cache.get(namespace="tenant-a", name="watched-poison") is None

        # Resuming the watch replays nothing: still one Warning event per poison object.
        await informer.stop()
        informer.start()
        for name in ("listed-poison", "watched-poison"):
            events = await quarantine_events(kube, "tenant-a", name)
            assert len(events) == 1, events
            assert events[0]["type"] == "Warning"
            assert events[0]["count"] == 1
            assert events[0]["involvedObject"]["kind"] == "Elasticsearch"
            assert (
                f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep"
                in events[0]["message"]
            )

        # Fixed, it is reconciled like any other: the new version arrives (as ADDED: the
        # handlers never saw the poison one).
        fixed = {"spec": {"nodeSets": [{"name": "default", "count": 1, "config": {"ok": True}}]}}
        await kube.merge_patch(ELASTICSEARCH, fixed, namespace="tenant-a", name="watched-poison")
        await eventually(
            lambda: ("ADDED", ("tenant-a", "watched-poison")) in delivered,
            what="the fixed Elasticsearch delivered",
        )
        cached = informer.cache.get(namespace="tenant-a", name="watched-poison")
        assert cached is not None
        assert cached["spec"]["nodeSets"][0]["config"] == {"ok": True}
    finally:
        await informer.stop()


async def test_a_get_of_a_poison_object_is_one_undecodable_error_naming_the_field(
    cluster: KubeCluster,
) -> None:
    kube = cluster.kube
    depth = POISON_DEPTH.get(cluster.name, SHALLOW_POISON_DEPTH)
    await create_poison(kube, "tenant-a", "poison", depth)
    await kube.create(ELASTICSEARCH, elasticsearch("tenant-a", "good", {"a": 1}))

    with pytest.raises(errors.Undecodable) as raised:
        await kube.get(ELASTICSEARCH, namespace="tenant-a", name="poison")
    assert "spec.nodeSets[0].config: nested more than" in str(raised.value)
    assert not raised.value.retryable

    # Cluster-wide, as the informers list; the real API server's session plane holds other
    # tests' objects, so only this test's namespace is compared.
    listed = await kube.list(ELASTICSEARCH)
    names = [
        item["metadata"]["name"]
        for item in listed["items"]
        if item["metadata"].get("namespace") == "tenant-a"
    ]
    assert names == ["good"]


async def test_a_large_object_is_watched_like_any_other(cluster: KubeCluster) -> None:
    # 600 KiB: over aiohttp's own 128 KiB line limit, under the API server's 1 MiB for a ConfigMap.
    kube = cluster.kube
    informer = Informer(kube, CONFIGMAPS, namespace="tenant-a", backoff=FAST_BACKOFF)
    informer.start()
    try:
        await eventually(lambda: informer.has_synced, what="the informer synced")
        large = {
            "metadata": {"name": "large", "namespace": "tenant-a"},
            "data": {"v": "x" * 600_000},
        }
        await kube.create(CONFIGMAPS, large)
        await kube.create(CONFIGMAPS, {"metadata": {"name": "after", "namespace": "tenant-a"}})
        await eventually(
            lambda: informer.cache.get(namespace="tenant-a", name="after") is not None,
            what="the ConfigMap created after the large one",
        )
        cached = informer.cache.get(namespace="tenant-a", name="large")
        assert cached is not None
        assert len(cached["data"]["v"]) == 600_000
    finally:
        await informer.stop()
