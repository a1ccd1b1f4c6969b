"""The scoped client and scoped informer against kubesim, with the real NamespaceMatcher."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from stackflow.kube import errors
from stackflow.kube.informer import Backoff, Informer, NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient, ScopedInformer, UnscopedClient
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES
from stackflow.scope import NamespaceMatcher, ScopeConfig, label_selector_from_data
from tests.polling import eventually

FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)
OPERATOR_NAMESPACE = "elastic-system"


def configmap(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"k": "v"}}


def names(listed: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        (item["metadata"]["namespace"], item["metadata"]["name"]) for item in listed["items"]
    )


@pytest.fixture
async def resources(ka_client: client.ApiClient) -> ResourceClient:
    """Namespaces team-a (labelled eck=on) and team-b (unlabelled), one ConfigMap "x" in each."""
    raw = ResourceClient(ka_client)
    await raw.create(NAMESPACES, {"metadata": {"name": "team-a", "labels": {"eck": "on"}}})
    await raw.create(NAMESPACES, {"metadata": {"name": "team-b"}})
    await raw.create(NAMESPACES, {"metadata": {"name": OPERATOR_NAMESPACE}})
    for namespace in ("team-a", "team-b"):
        await raw.create(CONFIGMAPS, configmap(namespace, "x"))
    return raw


@pytest.fixture
async def namespaces(resources: ResourceClient) -> AsyncIterator[NamespaceInformer]:
    informer = NamespaceInformer(resources, backoff=FAST_BACKOFF)
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    yield informer
    await informer.stop()


def dynamic_matcher(source: NamespaceInformer) -> NamespaceMatcher:
    selector = label_selector_from_data({"matchLabels": {"eck": "on"}})
    return NamespaceMatcher(
        ScopeConfig(operator_namespace=OPERATOR_NAMESPACE, namespace_selector=selector),
        source=source,
    )


def static_matcher(source: NamespaceInformer) -> NamespaceMatcher:
    return NamespaceMatcher(ScopeConfig(operator_namespace=OPERATOR_NAMESPACE), source=source)


async def label_team_b(resources: ResourceClient, value: str | None) -> None:
    await resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": value}}}, namespace=None, name="team-b"
    )


@pytest.mark.parametrize(
    ("namespace", "name", "found"),
    [("team-a", "x", True), ("team-a", "missing", False), ("team-b", "x", False)],
    ids=["in-scope", "missing", "out-of-scope"],
)
async def test_get_or_none_answers_none_for_a_missing_or_unmanaged_object(
    resources: ResourceClient,
    namespaces: NamespaceInformer,
    namespace: str,
    name: str,
    found: bool,
) -> None:
    scoped = ScopedClient(resources, dynamic_matcher(namespaces))
    obj = await scoped.get_or_none(CONFIGMAPS, namespace=namespace, name=name)
    assert (obj is not None) is found
    if obj is not None:
        assert obj["data"] == {"k": "v"}


async def test_get_in_a_non_matching_namespace_is_the_servers_not_found(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    scoped = ScopedClient(resources, dynamic_matcher(namespaces))
    await resources.delete(CONFIGMAPS, namespace="team-a", name="x")
    with pytest.raises(errors.NotFound) as from_server:
        await resources.get(CONFIGMAPS, namespace="team-a", name="x")

    with pytest.raises(errors.NotFound) as hidden:
        await scoped.get(CONFIGMAPS, namespace="team-b", name="x")

    assert hidden.value.to_status() == from_server.value.to_status()
    assert str(hidden.value) == 'configmaps "x" not found'
    assert (await UnscopedClient(resources).get(CONFIGMAPS, namespace="team-b", name="x"))[
        "metadata"
    ]["namespace"] == "team-b"


async def test_list_hides_non_matching_namespaces_until_they_match(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    matcher = dynamic_matcher(namespaces)
    scoped = ScopedClient(resources, matcher)

    assert names(await scoped.list(CONFIGMAPS)) == [("team-a", "x")]
    assert names(await scoped.list(CONFIGMAPS, namespace="team-a")) == [("team-a", "x")]
    assert names(await scoped.list(CONFIGMAPS, namespace="team-b")) == []
    assert names(await UnscopedClient(resources).list(CONFIGMAPS)) == [
        ("team-a", "x"),
        ("team-b", "x"),
    ]

    await label_team_b(resources, "on")
    await eventually(lambda: matcher.name_matches("team-b"))

    assert names(await scoped.list(CONFIGMAPS)) == [("team-a", "x"), ("team-b", "x")]
    assert names(await scoped.list(CONFIGMAPS, namespace="team-b")) == [("team-b", "x")]
    assert (await scoped.get(CONFIGMAPS, namespace="team-b", name="x"))["metadata"]["name"] == "x"

    await label_team_b(resources, None)
    await eventually(lambda: not matcher.name_matches("team-b"))
    with pytest.raises(errors.NotFound):
        await scoped.get(CONFIGMAPS, namespace="team-b", name="x")


async def test_matcher_sees_a_label_change_when_the_namespace_informer_does(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    matcher = dynamic_matcher(namespaces)
    verdicts: list[tuple[str, bool]] = []

    def on_namespace(event_type: str, old: Any, new: Any) -> None:
        if new is not None and new["metadata"]["name"] == "team-b":
            verdicts.append((event_type, matcher.name_matches("team-b")))

    namespaces.add_handler(on_namespace)
    assert not matcher.name_matches("team-b")

    await label_team_b(resources, "on")
    await eventually(lambda: bool(verdicts))

    assert verdicts == [("MODIFIED", True)]


async def test_writes_pass_through_in_non_matching_namespaces(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    scoped = ScopedClient(resources, dynamic_matcher(namespaces))

    created = await scoped.create(CONFIGMAPS, configmap("team-b", "written"))
    patched = await scoped.merge_patch(
        CONFIGMAPS, {"data": {"k": "w"}}, namespace="team-b", name="written"
    )
    await scoped.delete(CONFIGMAPS, namespace="team-b", name="written")

    assert created["metadata"]["namespace"] == "team-b"
    assert patched["data"] == {"k": "w"}
    with pytest.raises(errors.NotFound):
        await resources.get(CONFIGMAPS, namespace="team-b", name="written")


async def test_selector_off_passes_everything_straight_through(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    matcher = static_matcher(namespaces)
    scoped = ScopedClient(resources, matcher)
    configmaps = Informer(resources, CONFIGMAPS, backoff=FAST_BACKOFF)
    scoped_informer = ScopedInformer(configmaps, matcher)
    seen: list[tuple[str, str]] = []

    def record(event_type: str, old: Any, new: Any) -> None:
        seen.append((new["metadata"]["namespace"], new["metadata"]["name"]))

    scoped_informer.add_handler(record)

    scoped_informer.start()
    try:
        await eventually(lambda: sorted(seen) == [("team-a", "x"), ("team-b", "x")])
        assert names(await scoped.list(CONFIGMAPS)) == [("team-a", "x"), ("team-b", "x")]
        assert (await scoped.get(CONFIGMAPS, namespace="team-b", name="x"))["data"] == {"k": "v"}
        assert len(scoped_informer.list()) == 2
    finally:
        await scoped_informer.stop()


async def test_scoped_informer_passes_events_of_matching_namespaces_only(
    resources: ResourceClient, namespaces: NamespaceInformer
) -> None:
    matcher = dynamic_matcher(namespaces)
    scoped_informer = ScopedInformer(Informer(resources, CONFIGMAPS, backoff=FAST_BACKOFF), matcher)
    seen: list[tuple[str, str, str]] = []

    def record(event_type: str, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        seen.append((event_type, obj["metadata"]["namespace"], obj["metadata"]["name"]))

    scoped_informer.add_handler(record)
    scoped_informer.start()
    try:
        async with asyncio.timeout(10):
            await scoped_informer.wait_synced()
        await resources.create(CONFIGMAPS, configmap("team-b", "hidden"))
        await resources.create(CONFIGMAPS, configmap("team-a", "shown"))
        await eventually(lambda: ("ADDED", "team-a", "shown") in seen)
        # Events are dispatched in order, so "hidden" (written first) has been decided by now.
        assert seen == [("ADDED", "team-a", "x"), ("ADDED", "team-a", "shown")]
        assert [obj["metadata"]["name"] for obj in scoped_informer.list(namespace="team-b")] == []
        assert scoped_informer.get(namespace="team-b", name="x") is None

        await label_team_b(resources, "on")
        await eventually(lambda: matcher.name_matches("team-b"))
        await resources.create(CONFIGMAPS, configmap("team-b", "now-visible"))

        await eventually(lambda: ("ADDED", "team-b", "now-visible") in seen)
        assert scoped_informer.get(namespace="team-b", name="hidden") is not None
    finally:
        await scoped_informer.stop()
