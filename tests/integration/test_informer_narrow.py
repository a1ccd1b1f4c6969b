"""A narrowed informer against kubesim: it watches every object of its kind but holds and hands
on only those its predicate keeps, deciding as each object arrives; the InformerSet narrows the
unfiltered Secret informer once its users say what they need, its followers' selections kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubernetes_asyncio import client

from stackflow.kube.cache import Projection
from stackflow.kube.informer import Backoff, Informer
from stackflow.kube.reader import UNKNOWN
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES, SECRETS
from stackflow.scope import NamespaceMatcher, ScopeConfig
from tests.polling import eventually
from watchers.informers import InformerSet

FAST_BACKOFF = Backoff(initial=0.05, maximum=0.5)

Event = tuple[str, str]


class _NoNamespaces:
    """A NamespaceSource that knows no namespace (the static all-namespace mode reads none)."""

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return None

    def namespace_names(self) -> Iterable[str]:
        return ()


def every_namespace() -> NamespaceMatcher:
    """The static all-namespace scope."""
    return NamespaceMatcher(ScopeConfig(operator_namespace="ns"), source=_NoNamespaces())


def recorder(events: list[Event]) -> Callable[[str, Any, Any], None]:
    """A handler appending (type, name)."""

    def handler(event_type: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        events.append((event_type, obj["metadata"]["name"]))

    return handler


def secret(name: str, labels: dict[str, str] | None = None, value: str = "0") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": labels or {}},
        "stringData": {"value": value},
    }


async def test_a_narrowed_informer_holds_and_tells_only_what_it_keeps(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    wanted = {"wanted-early"}
    await resources.create(SECRETS, secret("wanted-early"), namespace="ns")
    await resources.create(SECRETS, secret("unrelated"), namespace="ns")
    await resources.create(SECRETS, secret("wanted-later"), namespace="ns")
    await resources.create(SECRETS, secret("wanted-then-gone"), namespace="ns")
    informer = Informer(resources, SECRETS, backoff=FAST_BACKOFF, projection=Projection.METADATA)

    def keeps(obj: Mapping[str, Any]) -> bool:
        return obj["metadata"]["name"] in wanted or "keep" in (obj["metadata"].get("labels") or {})

    assert informer.narrow(keeps)
    events: list[Event] = []
    informer.add_handler(recorder(events))
    async with informer:
        await informer.wait_synced()
        assert {obj["metadata"]["name"] for obj in informer.cache} == {"wanted-early"}
        assert events == [("ADDED", "wanted-early")]
        # Not kept: changed and deleted without a word.
        await resources.merge_patch(
            SECRETS, {"stringData": {"value": "1"}}, namespace="ns", name="unrelated"
        )
        # Wanted after it was listed: its next change brings it in, as created.
        wanted.update({"wanted-later", "wanted-then-gone"})
        await resources.merge_patch(
            SECRETS, {"stringData": {"value": "1"}}, namespace="ns", name="wanted-later"
        )
        # Wanted, never cached, deleted: still told, as deleted.
        await resources.delete(SECRETS, namespace="ns", name="wanted-then-gone")
        # A label makes one kept; removing it drops it again.
        await resources.merge_patch(
            SECRETS, {"metadata": {"labels": {"keep": "yes"}}}, namespace="ns", name="unrelated"
        )
        await resources.merge_patch(
            SECRETS, {"metadata": {"labels": {"keep": None}}}, namespace="ns", name="unrelated"
        )
        await resources.delete(SECRETS, namespace="ns", name="unrelated")
        # A canary kept by its label: every earlier event was handled once it arrives.
        await resources.create(SECRETS, secret("canary", {"keep": "yes"}), namespace="ns")
        await eventually(lambda: ("ADDED", "canary") in events, what="the canary seen")
        assert events == [
            ("ADDED", "wanted-early"),
            ("ADDED", "wanted-later"),
            ("DELETED", "wanted-then-gone"),
            ("ADDED", "unrelated"),
            ("DELETED", "unrelated"),
            ("ADDED", "canary"),
        ]
        assert {obj["metadata"]["name"] for obj in informer.cache} == {
            "wanted-early",
            "wanted-later",
            "canary",
        }


async def test_a_started_or_following_informer_is_not_narrowed(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    source = Informer(resources, SECRETS, backoff=FAST_BACKOFF, projection=Projection.METADATA)
    follower = Informer(
        resources,
        SECRETS,
        label_selector="app=web",
        backoff=FAST_BACKOFF,
        projection=Projection.METADATA,
    )
    assert follower.follow(source, lambda obj: True)
    assert not follower.narrow(lambda obj: True)
    async with source:
        await source.wait_synced()
        assert not source.narrow(lambda obj: True)
    assert not source.narrowed
    assert not follower.narrowed


async def test_the_set_narrows_the_unfiltered_secret_informer_once_told_what_is_needed(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    for name, labels in (
        ("owned", {"app": "web"}),
        ("named", {}),
        ("unrelated", {}),
    ):
        await resources.create(SECRETS, secret(name, labels), namespace="ns")
    await resources.create(
        CONFIGMAPS, {"metadata": {"name": "unrelated", "namespace": "ns"}}, namespace="ns"
    )
    informers = InformerSet(resources, every_namespace(), backoff=FAST_BACKOFF)
    unfiltered = informers.scoped(SECRETS)
    selected = informers.scoped(SECRETS, label_selector="app=web")
    configmaps = informers.scoped(CONFIGMAPS)
    informers.keep(SECRETS, lambda obj: obj["metadata"]["name"] == "named")
    informers.keep(CONFIGMAPS, lambda obj: False)  # not a narrowed kind: ignored
    informers.start()
    try:
        await informers.wait_synced()
        assert unfiltered.informer.narrowed
        assert not configmaps.informer.narrowed
        assert {obj["metadata"]["name"] for obj in unfiltered.list()} == {"owned", "named"}
        assert [obj["metadata"]["name"] for obj in selected.list()] == ["owned"]
        assert [obj["metadata"]["name"] for obj in configmaps.list()] == ["unrelated"]
        assert informers.cached_objects(SECRETS) == 2
        # Projected and narrowed, it cannot answer a Get, but it knows the versions it holds.
        stored = await resources.get(SECRETS, namespace="ns", name="named")
        assert informers.get(SECRETS, namespace="ns", name="named") is UNKNOWN
        assert (
            informers.resource_version(SECRETS, namespace="ns", name="named")
            == stored["metadata"]["resourceVersion"]
        )
        assert informers.resource_version(SECRETS, namespace="ns", name="unrelated") is None
    finally:
        await informers.stop()


async def test_an_unfiltered_secret_informer_nobody_narrows_keeps_everything(
    ka_client: client.ApiClient,
) -> None:
    resources = ResourceClient(ka_client)
    await resources.create(NAMESPACES, {"metadata": {"name": "ns"}})
    await resources.create(SECRETS, secret("unrelated"), namespace="ns")
    informers = InformerSet(resources, every_namespace(), backoff=FAST_BACKOFF)
    unfiltered = informers.scoped(SECRETS)
    informers.start()
    try:
        await informers.wait_synced()
        assert not unfiltered.informer.narrowed
        assert [obj["metadata"]["name"] for obj in unfiltered.list()] == ["unrelated"]
    finally:
        await informers.stop()
