"""A following informer against kubesim: it sees what a selector watch of its own would see,
and holds the source's objects rather than copies; the InformerSet wires followers itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kubernetes_asyncio import client

from stackflow.kube.cache import Projection, is_projected
from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.reader import UNKNOWN
from stackflow.kube.resources import ResourceClient
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES, SECRETS
from stackflow.scope import NamespaceMatcher, ScopeConfig
from tests.polling import eventually
from watchers.informers import InformerSet, selector_predicate

FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)
SELECTOR = "app=web"

Event = tuple[str, str, str | None]


def recorder(events: list[Event]) -> Callable[[str, Any, Any], None]:
    """A handler appending (type, name, new resourceVersion or None)."""

    def handler(event_type: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        rv = None if new is None else str(new["metadata"]["resourceVersion"])
        events.append((event_type, obj["metadata"]["name"], rv))

    return handler


def configmap(name: str, labels: dict[str, str], value: str = "0") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "data": {"value": value},
    }


async def test_a_follower_sees_what_its_own_selector_watch_would_see(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    await resources.create(CONFIGMAPS, configmap("before", {"app": "web"}))
    source = Informer(resources, CONFIGMAPS, backoff=FAST_BACKOFF, projection=Projection.METADATA)
    follower = Informer(
        resources,
        CONFIGMAPS,
        label_selector=SELECTOR,
        backoff=FAST_BACKOFF,
        projection=Projection.METADATA,
    )
    own_watch = Informer(
        resources,
        CONFIGMAPS,
        label_selector=SELECTOR,
        backoff=FAST_BACKOFF,
        projection=Projection.METADATA,
    )
    selects = selector_predicate(SELECTOR)
    assert selects is not None
    assert follower.follow(source, selects)
    followed: list[Event] = []
    watched: list[Event] = []
    follower.add_handler(recorder(followed))
    own_watch.add_handler(recorder(watched))
    follower.start()  # starts the source
    own_watch.start()
    try:
        async with asyncio.timeout(10):
            await follower.wait_synced()
            await own_watch.wait_synced()
        assert follower.has_synced
        assert source.has_synced

        await resources.create(CONFIGMAPS, configmap("web", {"app": "web"}))
        await resources.create(CONFIGMAPS, configmap("db", {"app": "db"}))
        await resources.merge_patch(
            CONFIGMAPS, {"data": {"value": "1"}}, namespace="ns", name="web"
        )
        await resources.merge_patch(
            CONFIGMAPS, {"metadata": {"labels": {"app": "web"}}}, namespace="ns", name="db"
        )
        await resources.merge_patch(
            CONFIGMAPS, {"metadata": {"labels": {"app": "gone"}}}, namespace="ns", name="web"
        )
        await resources.merge_patch(
            CONFIGMAPS, {"data": {"value": "2"}}, namespace="ns", name="web"
        )
        await resources.delete(CONFIGMAPS, namespace="ns", name="db")
        last = await resources.create(CONFIGMAPS, configmap("last", {"app": "web"}))

        def caught_up() -> bool:
            rv = last["metadata"]["resourceVersion"]
            return bool(watched) and watched[-1][2] == rv and followed[-1][2] == rv

        await eventually(caught_up, what="both informers saw the last write")
    finally:
        await own_watch.stop()
        await source.stop()
        await follower.stop()

    assert followed == watched
    assert [name for _, name, _ in followed] == [
        "before",
        "web",
        "web",
        "db",
        "web",
        "db",
        "last",
    ]
    assert [kind for kind, _, _ in followed] == [
        "ADDED",
        "ADDED",
        "MODIFIED",
        "ADDED",
        "DELETED",
        "DELETED",
        "ADDED",
    ]
    assert follower.cache.snapshot() == own_watch.cache.snapshot()
    # The same objects as the source's, not copies.
    for key, obj in follower.cache.snapshot().items():
        assert source.cache.get(namespace=key[0], name=key[1]) is obj
    assert follower.source is source
    assert own_watch.source is None


async def test_an_informer_cannot_follow_once_it_or_its_source_has_started(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    source = Informer(resources, CONFIGMAPS, backoff=FAST_BACKOFF)
    late = Informer(resources, CONFIGMAPS, label_selector=SELECTOR, backoff=FAST_BACKOFF)
    other_form = Informer(
        resources,
        CONFIGMAPS,
        label_selector=SELECTOR,
        backoff=FAST_BACKOFF,
        projection=Projection.METADATA,
    )
    selects = selector_predicate(SELECTOR)
    assert selects is not None
    assert not other_form.follow(source, selects)  # projections differ
    source.start()
    try:
        async with asyncio.timeout(10):
            await source.wait_synced()
        assert not late.follow(source, selects)
        assert late.source is None
    finally:
        await source.stop()


async def test_the_informer_set_shares_one_watch_per_kind_and_reads_only_whole_caches(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    labels = {"license.k8s.elastic.co/scope": "operator", "app": "web"}
    await resources.create(
        SECRETS,
        {"metadata": {"name": "lic", "namespace": "ns", "labels": labels}, "data": {"k": "dg=="}},
    )
    matcher = NamespaceMatcher(
        ScopeConfig(operator_namespace="elastic-system"), source=_NoNamespaces()
    )
    informers = InformerSet(resources, matcher, backoff=FAST_BACKOFF)
    unfiltered = informers.scoped(SECRETS)
    selected = informers.scoped(SECRETS, label_selector=SELECTOR)
    licenses = informers.scoped(SECRETS, label_selector=OPERATOR_LICENSE_SELECTOR)
    informers.start()
    try:
        await eventually(lambda: informers.has_synced, what="informers synced")
        assert selected.informer.source is unfiltered.informer
        assert licenses.informer.source is None  # whole objects: a watch of its own
        (projected,) = selected.list()
        assert is_projected(projected)
        assert unfiltered.get(namespace="ns", name="lic") is projected
        # The reader never hands out a projection, and answers from the whole license cache.
        assert informers.get(SECRETS, namespace="ns", name="lic") is UNKNOWN
        assert informers.list(SECRETS, namespace=None, label_selector=SELECTOR) is UNKNOWN
        listed = informers.list(SECRETS, namespace=None, label_selector=OPERATOR_LICENSE_SELECTOR)
        assert listed is not UNKNOWN
        assert [secret["data"] for secret in listed] == [{"k": "dg=="}]
    finally:
        await informers.stop()


class _NoNamespaces:
    """A NamespaceSource that knows no namespace (the static all-namespace mode reads none)."""

    def namespace_labels(self, name: str) -> None:
        return None

    def namespace_names(self) -> list[str]:
        return []
