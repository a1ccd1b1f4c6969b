"""The informer's quarantine, decided event by event against a scripted API server: reported once
per version, a cached object that turns poison kept (not DELETED), its deletion still delivered,
and the fixed version delivered like any other change."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from stackflow.kube import errors
from stackflow.kube.decoding import QUARANTINED_KEY, Quarantined
from stackflow.kube.informer import QUARANTINED_REASON, Backoff, Informer
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import CONFIGMAPS, EVENTS, Kind
from tests.polling import eventually

PROBLEM = "data: nested more than 400 levels deep"
#: Queued as a watch event: the watch ends with 410 Expired, so the informer lists again.
EXPIRED: dict[str, Any] = {"type": "EXPIRED"}


def configmap(name: str, rv: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": f"uid-{name}"},
    }


def poison(name: str, rv: str, event_type: str = "MODIFIED") -> dict[str, Any]:
    described = Quarantined(PROBLEM, namespace="ns", name=name, resource_version=rv)
    return {"type": event_type, QUARANTINED_KEY: described.to_dict()}


class ScriptedServer:
    """A ResourceClient stand-in: one list, then the scripted watch events, then silence; the
    Events written are kept."""

    def __init__(self, listed: list[dict[str, Any]], unusable: list[Quarantined]) -> None:
        self.listed = listed
        self.unusable = unusable
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.written: list[dict[str, Any]] = []
        self.bumped: list[str] = []
        self.lists = 0

    async def list(self, resource: Kind, **_: Any) -> dict[str, Any]:
        self.lists += 1
        listed: dict[str, Any] = {"metadata": {"resourceVersion": "10"}, "items": list(self.listed)}
        if self.unusable:
            listed[QUARANTINED_KEY] = [entry.to_dict() for entry in self.unusable]
        return listed

    async def watch(self, resource: Kind, **_: Any) -> AsyncIterator[dict[str, Any]]:
        while True:
            event = await self.events.get()
            if event == EXPIRED:
                raise errors.Gone("too old resource version", status=410)
            yield event

    async def create(self, resource: Kind, body: Mapping[str, Any], **_: Any) -> dict[str, Any]:
        assert resource == EVENTS
        self.written.append(dict(body))
        return dict(body)

    async def merge_patch(
        self, resource: Kind, patch: Mapping[str, Any], *, name: str, **_: Any
    ) -> dict[str, Any]:
        assert resource == EVENTS
        self.bumped.append(name)
        return dict(patch)


async def test_quarantine_in_list_and_watch() -> None:
    server = ScriptedServer(
        [configmap("good", "5"), configmap("turns-poison", "6")],
        [Quarantined(PROBLEM, namespace="ns", name="listed-poison", resource_version="7")],
    )
    informer = Informer(server, CONFIGMAPS, backoff=Backoff(initial=0.01, maximum=0.05))  # type: ignore[arg-type]
    delivered: list[tuple[str, str, str | None]] = []

    def record(event_type: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        rv = new["metadata"]["resourceVersion"] if new is not None else None
        delivered.append((event_type, obj["metadata"]["name"], rv))

    informer.add_handler(record)
    informer.start()
    try:
        await eventually(lambda: informer.has_synced, what="synced")
        assert sorted(delivered) == [("ADDED", "good", "5"), ("ADDED", "turns-poison", "6")]
        assert [event["involvedObject"]["name"] for event in server.written] == ["listed-poison"]
        event = server.written[0]
        assert event["reason"] == QUARANTINED_REASON
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "ConfigMap"  # filled in from the informer's kind
        assert event["message"].endswith(f"skips it until it is fixed: {PROBLEM}")

        # A cached object turning poison: reported, the cached version kept, nothing delivered;
        # the same version again (a replay) reports nothing more.
        await server.events.put(poison("turns-poison", "11"))
        await server.events.put(poison("turns-poison", "11"))
        await server.events.put({"type": "ADDED", "object": configmap("marker", "12")})
        await eventually(lambda: ("ADDED", "marker", "12") in delivered, what="the marker")
        assert [event["involvedObject"]["name"] for event in server.written] == [
            "listed-poison",
            "turns-poison",
        ]
        cached = informer.cache.get(namespace="ns", name="turns-poison")
        assert cached is not None
        assert cached["metadata"]["resourceVersion"] == "6"
        assert informer.resource_version == "12"

        # Fixed: delivered as any change; poison again at a new version: reported again (the
        # same message: the one Event's count goes up, as client-go aggregates).
        await server.events.put({"type": "MODIFIED", "object": configmap("turns-poison", "13")})
        await server.events.put(poison("turns-poison", "14"))
        # Deleted while poison: its deletion is still news.
        await server.events.put(poison("turns-poison", "15", event_type="DELETED"))
        await eventually(lambda: ("DELETED", "turns-poison", None) in delivered, what="delete")
        assert ("MODIFIED", "turns-poison", "13") in delivered
        assert informer.cache.get(namespace="ns", name="turns-poison") is None
        assert len(server.written) == 2
        assert [bumped.split(".")[0] for bumped in server.bumped] == ["turns-poison"]
        assert server.lists == 1
    finally:
        await informer.stop()


async def test_an_unnamed_poison_event_is_logged_only() -> None:
    server = ScriptedServer([], [])
    informer = Informer(server, CONFIGMAPS)  # type: ignore[arg-type]
    informer.start()
    try:
        await eventually(lambda: informer.has_synced, what="synced")
        await server.events.put({"type": "", QUARANTINED_KEY: Quarantined("too large").to_dict()})
        await server.events.put({"type": "ADDED", "object": configmap("after", "3")})
        await eventually(
            lambda: informer.cache.get(namespace="ns", name="after") is not None, what="after"
        )
        assert server.written == []
    finally:
        await informer.stop()


def test_the_scripted_server_speaks_like_the_resource_client() -> None:
    # The informer calls list, watch and (for Events) create and merge_patch: the stand-in has
    # each, with the same names, so the tests above exercise the informer's real calls.
    for name in ("list", "watch", "create", "merge_patch"):
        assert callable(getattr(ResourceClient, name))
        assert callable(getattr(ScriptedServer, name))


async def test_a_relist_reports_a_poison_object_it_reported_already_no_more() -> None:
    unusable = Quarantined(PROBLEM, namespace="ns", name="poison", resource_version="7")
    server = ScriptedServer([configmap("good", "5")], [unusable])
    informer = Informer(server, CONFIGMAPS, backoff=Backoff(initial=0.01, maximum=0.05))  # type: ignore[arg-type]
    informer.start()
    try:
        await eventually(lambda: informer.has_synced, what="synced")
        server.listed.append(configmap("added-meanwhile", "8"))
        await server.events.put(EXPIRED)
        await eventually(
            lambda: informer.cache.get(namespace="ns", name="added-meanwhile") is not None,
            what="the relist",
        )
        assert server.lists == 2
        assert [event["involvedObject"]["name"] for event in server.written] == ["poison"]
        assert server.bumped == []
        assert informer.cache.get(namespace="ns", name="good") is not None
    finally:
        await informer.stop()
