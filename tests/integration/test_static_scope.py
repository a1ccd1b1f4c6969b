"""Static-list scope against kubesim: one namespaced watch per listed namespace (ECK's
multi-namespace cache), and the scoped client and the informer set refusing the other namespaces."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from stackflow.kube import errors
from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.reader import UNKNOWN
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES, Kind
from stackflow.scope import NamespaceMatcher, ScopeConfig
from tests.polling import eventually
from watchers.informers import InformerSet

FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)
OPERATOR_NAMESPACE = "elastic-system"
LISTED = ("team-a",)


def configmap(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"k": "v"}}


class _NoNamespaces:
    """A NamespaceSource that knows nothing: a static matcher never asks it."""

    def namespace_labels(self, name: str) -> None:
        raise AssertionError("a static list must not look Namespaces up")

    def namespace_names(self) -> list[str]:
        raise AssertionError("a static list must not look Namespaces up")


class RecordingClient:
    """Passes every call to a ResourceClient, recording the namespace of each list and watch."""

    def __init__(self, inner: ResourceClient) -> None:
        self.inner = inner
        self.calls: list[tuple[str, str | None]] = []

    async def list(self, resource: Kind, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("list", kwargs.get("namespace")))
        return await self.inner.list(resource, **kwargs)

    async def get(self, resource: Kind, **kwargs: Any) -> dict[str, Any]:
        return await self.inner.get(resource, **kwargs)

    def watch(self, resource: Kind, **kwargs: Any) -> Any:
        self.calls.append(("watch", kwargs.get("namespace")))
        return self.inner.watch(resource, **kwargs)


def static_matcher() -> NamespaceMatcher:
    scope = ScopeConfig(operator_namespace=OPERATOR_NAMESPACE, namespaces=LISTED)
    return NamespaceMatcher(scope, source=_NoNamespaces())


@pytest.fixture
async def resources(ka_client: client.ApiClient) -> ResourceClient:
    """team-a (listed), team-b (not listed), the operator namespace; a ConfigMap "x" in each."""
    raw = ResourceClient(ka_client)
    for namespace in (*LISTED, "team-b", OPERATOR_NAMESPACE):
        await raw.create(NAMESPACES, {"metadata": {"name": namespace}})
        await raw.create(CONFIGMAPS, configmap(namespace, "x"))
    return raw


@pytest.fixture
async def recording(resources: ResourceClient) -> RecordingClient:
    return RecordingClient(resources)


@pytest.fixture
async def informer(recording: RecordingClient) -> AsyncIterator[Informer]:
    configmaps = Informer(
        recording,  # type: ignore[arg-type]
        CONFIGMAPS,
        backoff=FAST_BACKOFF,
        namespaces=static_matcher().watched_namespaces,
    )
    yield configmaps
    await configmaps.stop()


def cached_keys(informer: Informer) -> set[tuple[str | None, str]]:
    return set(informer.cache.snapshot())


async def test_the_informer_lists_and_watches_each_listed_namespace_and_never_the_cluster(
    resources: ResourceClient, recording: RecordingClient, informer: Informer
) -> None:
    events: list[tuple[str, str]] = []
    informer.add_handler(
        lambda kind, old, new: events.append((kind, (new or old)["metadata"]["namespace"]))
    )
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    assert cached_keys(informer) == {("team-a", "x"), (OPERATOR_NAMESPACE, "x")}
    await eventually(lambda: len([call for call in recording.calls if call[0] == "watch"]) == 2)
    assert sorted(recording.calls) == [
        ("list", OPERATOR_NAMESPACE),
        ("list", "team-a"),
        ("watch", OPERATOR_NAMESPACE),
        ("watch", "team-a"),
    ]

    await resources.create(CONFIGMAPS, configmap("team-b", "y"))
    await resources.create(CONFIGMAPS, configmap("team-a", "y"))
    await resources.delete(CONFIGMAPS, namespace=OPERATOR_NAMESPACE, name="x")
    await eventually(lambda: ("team-a", "y") in cached_keys(informer))
    await eventually(lambda: (OPERATOR_NAMESPACE, "x") not in cached_keys(informer))
    assert cached_keys(informer) == {("team-a", "x"), ("team-a", "y")}
    assert ("ADDED", "team-b") not in events
    assert informer.covers("team-a")
    assert not informer.covers("team-b")
    assert informer.covers(None)  # a cluster-wide list means every watched namespace


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [("team-a", ["x"]), ("team-b", []), (OPERATOR_NAMESPACE, ["x"]), (None, ["x", "x"])],
)
async def test_the_scoped_client_refuses_namespaces_off_the_list(
    resources: ResourceClient, namespace: str | None, expected: list[str]
) -> None:
    recording = RecordingClient(resources)
    scoped = ScopedClient(recording, static_matcher())  # type: ignore[arg-type]
    listed = await scoped.list(CONFIGMAPS, namespace=namespace)
    # Never a cluster-wide call: a list of every namespace is one list per managed namespace.
    assert ("list", None) not in recording.calls
    assert sorted(item["metadata"]["name"] for item in listed["items"]) == expected
    if namespace is not None:
        if expected:
            await scoped.get(CONFIGMAPS, namespace=namespace, name="x")
        else:
            with pytest.raises(errors.NotFound):
                await scoped.get(CONFIGMAPS, namespace=namespace, name="x")


async def test_the_informer_set_answers_only_for_listed_namespaces(
    resources: ResourceClient,
) -> None:
    informer_set = InformerSet(resources, static_matcher(), backoff=FAST_BACKOFF)
    informer_set.informer(CONFIGMAPS)
    informer_set.start()
    try:
        async with asyncio.timeout(10):
            await informer_set.wait_synced()
        found = informer_set.get(CONFIGMAPS, namespace="team-a", name="x")
        assert found is not UNKNOWN
        assert found is not None
        # Not watched: the cache cannot say "absent", the caller asks the API server.
        assert informer_set.get(CONFIGMAPS, namespace="team-b", name="x") is UNKNOWN
        everywhere = informer_set.list(CONFIGMAPS, namespace=None, label_selector=None)
        assert not isinstance(everywhere, type(UNKNOWN))
        assert sorted(obj["metadata"]["namespace"] for obj in everywhere) == [
            OPERATOR_NAMESPACE,
            "team-a",
        ]
        listed = informer_set.list(CONFIGMAPS, namespace="team-a", label_selector=None)
        assert not isinstance(listed, type(UNKNOWN))
        assert len(listed) == 1
    finally:
        await informer_set.stop()


async def test_a_changed_list_is_watched_without_events_for_the_namespaces_it_drops(
    resources: ResourceClient, recording: RecordingClient, informer: Informer
) -> None:
    events: list[tuple[str, str]] = []
    informer.add_handler(
        lambda kind, old, new: events.append((kind, (new or old)["metadata"]["namespace"]))
    )
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    events.clear()

    await informer.change_namespaces(("team-b", OPERATOR_NAMESPACE))

    await eventually(lambda: ("team-b", "x") in cached_keys(informer))
    assert cached_keys(informer) == {("team-b", "x"), (OPERATOR_NAMESPACE, "x")}
    # The dropped namespace's objects were not deleted: no DELETED event for them.
    assert events == [("ADDED", "team-b")]
    assert informer.covers("team-b")
    assert not informer.covers("team-a")
    await resources.create(CONFIGMAPS, configmap("team-a", "z"))
    await resources.create(CONFIGMAPS, configmap("team-b", "z"))
    await eventually(lambda: ("team-b", "z") in cached_keys(informer))
    assert ("team-a", "z") not in cached_keys(informer)
    # The namespace that stayed resumed its watch: it was listed once, at the start.
    assert recording.calls.count(("list", OPERATOR_NAMESPACE)) == 1
