"""The EventRecorder against kubesim: core/v1 Events, client-go naming, aggregation into a count."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client

from stackflow.kube.events import EventRecorder, EventType, InvolvedObject
from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import CONFIGMAPS, EVENTS, NAMESPACES

NAMESPACE = "events-test"


class StepClock:
    """A clock that moves one second per reading, so timestamps differ between calls."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
async def resources(ka_client: client.ApiClient) -> ResourceClient:
    raw = ResourceClient(ka_client)
    await raw.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    await raw.create(CONFIGMAPS, {"metadata": {"name": "settings", "namespace": NAMESPACE}})
    return raw


async def involved(resources: ResourceClient) -> InvolvedObject:
    return InvolvedObject.of(await resources.get(CONFIGMAPS, namespace=NAMESPACE, name="settings"))


async def test_first_event_is_a_core_v1_event_about_the_object(resources: ResourceClient) -> None:
    recorder = EventRecorder(resources, component="stackflow", host="node-1", clock=StepClock())
    target = await involved(resources)

    created = await recorder.warning(
        target, reason="InvalidLicense", message="m", action="LicenseCheck"
    )

    assert re.fullmatch(r"settings\.[0-9a-f]+", created["metadata"]["name"])
    assert created["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "settings",
        "namespace": NAMESPACE,
        "uid": target.uid,
        "resourceVersion": target.resource_version,
    }
    assert (created["type"], created["reason"], created["action"], created["count"]) == (
        "Warning",
        "InvalidLicense",
        "LicenseCheck",
        1,
    )
    assert created["source"] == {"component": "stackflow", "host": "node-1"}
    assert created["firstTimestamp"] == created["lastTimestamp"]


@pytest.mark.parametrize(
    ("second_reason", "second_message", "events", "count"),
    [
        pytest.param("Reason", "same", 1, 3, id="same-event-aggregates"),
        pytest.param("Reason", "different", 2, 2, id="other-message-is-new"),
        pytest.param("Other", "same", 2, 2, id="other-reason-is-new"),
    ],
)
async def test_repeats_are_aggregated(
    resources: ResourceClient, second_reason: str, second_message: str, events: int, count: int
) -> None:
    recorder = EventRecorder(resources, component="stackflow", host="node-1", clock=StepClock())
    target = await involved(resources)

    first = await recorder.normal(target, reason="Reason", message="same")
    await recorder.normal(target, reason=second_reason, message=second_message)
    last = await recorder.normal(target, reason=second_reason, message=second_message)

    listed = (await resources.list(EVENTS, namespace=NAMESPACE))["items"]
    assert len(listed) == events
    stored = await resources.get(EVENTS, namespace=NAMESPACE, name=last["metadata"]["name"])
    assert stored["count"] == count
    if events == 1:
        assert stored["metadata"]["name"] == first["metadata"]["name"]
        assert stored["lastTimestamp"] > stored["firstTimestamp"]


async def test_a_deleted_event_is_recreated(resources: ResourceClient) -> None:
    recorder = EventRecorder(resources, component="stackflow", host="node-1", clock=StepClock())
    target = await involved(resources)
    first = await recorder.record(target, event_type=EventType.NORMAL, reason="R", message="m")
    await resources.delete(EVENTS, namespace=NAMESPACE, name=first["metadata"]["name"])

    again = await recorder.record(target, event_type=EventType.NORMAL, reason="R", message="m")

    assert again["metadata"]["name"] != first["metadata"]["name"]
    assert again["count"] == 1
