"""Watchers against kubesim and a real Temporal dev server, with stand-in workflows.

The stand-in ``ResourceWorkflow`` only records the triggers it receives, so these tests assert
exactly which workflow ids the watchers signal, and why, for every kind of event.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from stackflow.controllers import ChildWatch, Controller, ControllerTable, Gate, OwnerKey
from stackflow.kube.backoff import Backoff
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.writes import OwnWrites, writing_as
from stackflow.metrics import Registry
from stackflow.models.engine import (
    SA_PHASE,
    SEARCH_ATTRIBUTES,
    TRIGGERS_SIGNAL,
    NamespaceFlipInput,
    NamespaceFlipResult,
    ObjectKey,
    ResourceWorkflowInput,
    Trigger,
    TriggerBatch,
    TriggerReason,
)
from stackflow.models.kinds import CONFIGMAPS, EVENTS, NAMESPACES, SECRETS, Kind
from stackflow.models.objects import view
from stackflow.scope import LabelSelector, NamespaceMatcher, ScopeConfig
from tests.polling import DEV_SERVER_STARTUP, eventually
from watchers.flips import flip_workflow_id
from watchers.informers import InformerSet
from watchers.signals import Signaller
from watchers.sources import Watchers

TEMPORAL = Path(sys.executable).parent / "temporal"
WIDGETS = Kind("example.com", "v1", "Widget", "widgets")
OWNER_LABEL = "example.com/widget"


@workflow.defn(name="ResourceWorkflow")
class RecordingResourceWorkflow:
    """Stand-in: records triggers; ``set_phase`` lets a test put it in any phase."""

    def __init__(self) -> None:
        """Nothing received yet."""
        self.received: list[Trigger] = []

    @workflow.run
    async def run(self, input: ResourceWorkflowInput) -> None:
        """Live until terminated."""
        await workflow.wait_condition(lambda: False)

    @workflow.signal
    def trigger(self, trigger: Trigger) -> None:
        """Record a trigger."""
        self.received.append(trigger)

    @workflow.signal(name=TRIGGERS_SIGNAL)
    def triggers(self, batch: TriggerBatch) -> None:
        """Record the triggers delivered together."""
        self.received.extend(batch.triggers)

    @workflow.signal
    def set_phase(self, phase: str) -> None:
        """Upsert StackflowPhase."""
        workflow.upsert_search_attributes([SA_PHASE.value_set(phase)])

    @workflow.query
    def reasons(self) -> list[str]:
        """The reasons received, in order."""
        return [trigger.reason.value for trigger in self.received]


@workflow.defn(name="NamespaceFlipWorkflow")
class RecordingFlipWorkflow:
    """Stand-in: returns its input's controllers as the result's keys."""

    @workflow.run
    async def run(self, flip: NamespaceFlipInput) -> NamespaceFlipResult:
        """Answer at once."""
        return NamespaceFlipResult(
            triggered={f"{flip.direction.value}:{name}": 0 for name in flip.controllers}
        )


def owner_by_label(obj: Mapping[str, Any]) -> tuple[OwnerKey, ...]:
    meta = view(obj)
    owner = meta.labels.get(OWNER_LABEL)
    return (OwnerKey(meta.namespace, owner),) if owner else ()


def secret_named_by_color(obj: Mapping[str, Any]) -> list[ObjectKey]:
    color = (obj.get("spec") or {}).get("color")
    if not color:
        return []
    return [ObjectKey.of(SECRETS, namespace=view(obj).namespace, name=color)]


def link_owner(obj: Mapping[str, Any]) -> tuple[OwnerKey, ...]:
    labels = view(obj).labels
    if LINK_NAME_LABEL not in labels:
        return ()
    return (OwnerKey(labels[LINK_NAMESPACE_LABEL], labels[LINK_NAME_LABEL]),)


def linked_widget(obj: Mapping[str, Any]) -> list[ObjectKey]:
    target = view(obj).annotations.get(LINK_TARGET_ANNOTATION)
    if not target:
        return []
    namespace, name = str(target).split("/")
    return [ObjectKey.of(WIDGETS, namespace=namespace, name=name)]


LINK_TARGET_ANNOTATION = "example.com/link-target"
LINK_NAME_LABEL = "example.com/link-name"
LINK_NAMESPACE_LABEL = "example.com/link-namespace"
CONTROLLERS = ControllerTable(
    (
        Controller(
            name="widget",
            primary=WIDGETS,
            gate=Gate.DYNAMIC_SCOPE,
            children=(ChildWatch(CONFIGMAPS, owner_by_label, OWNER_LABEL),),
            references=secret_named_by_color,
        ),
        Controller(name="license", primary=WIDGETS, gate=Gate.NONE),
        # Like an association: its target is a Widget anywhere, its Secrets sit in the target's
        # namespace, labelled with the referrer.
        Controller(
            name="link",
            primary=WIDGETS,
            gate=Gate.DYNAMIC_SCOPE,
            children=(ChildWatch(SECRETS, link_owner, LINK_NAME_LABEL),),
            references=linked_widget,
            reference_kinds=(WIDGETS,),
        ),
    )
)


@dataclass
class Harness:
    temporal: Client
    resources: ResourceClient
    watchers: Watchers
    signaller: Signaller
    leader: list[bool]
    #: The operator's own client: the watchers know its writes.
    operator: ResourceClient
    metrics: Registry

    def echoes(self, kind: str) -> float:
        """Watch events of ``kind`` recognised as the operator's own writes."""
        counter = self.metrics.counter("stackflow_watch_echoes_total", "", ("kind",))
        return counter.value(kind=kind)

    async def reasons(self, workflow_id: str) -> list[str]:
        """The trigger reasons a workflow received ([] when it does not exist)."""
        try:
            handle = self.temporal.get_workflow_handle(workflow_id)
            result: list[str] = await handle.query(RecordingResourceWorkflow.reasons)
        except RPCError:
            return []
        return result

    async def wait_for(self, workflow_id: str, reason: TriggerReason) -> None:
        """Wait until ``workflow_id`` received a trigger with ``reason``."""

        async def received() -> bool:
            return reason.value in await self.reasons(workflow_id)

        await eventually(received, what=f"{workflow_id} gets {reason.value}")

    async def exists(self, workflow_id: str) -> bool:
        """Whether a workflow with that id was ever started."""
        try:
            await self.temporal.get_workflow_handle(workflow_id).describe()
        except RPCError:
            return False
        return True

    async def create(self, resource: Kind, body: dict[str, Any]) -> dict[str, Any]:
        """Create an object."""
        namespace = body["metadata"].get("namespace")
        return await self.resources.create(resource, body, namespace=namespace)


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}}


def widget(
    name: str, ns: str, *, size: int = 1, color: str = "", target: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {"size": size}
    if color:
        spec["color"] = color
    metadata: dict[str, Any] = {"name": name, "namespace": ns}
    if target:
        metadata["annotations"] = {LINK_TARGET_ANNOTATION: target}
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": metadata,
        "spec": spec,
    }


@pytest.fixture
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server on 127.0.0.1, free port, with Stackflow's search attributes."""
    env = await WorkflowEnvironment.start_local(
        dev_server_startup_timeout=DEV_SERVER_STARTUP,
        data_converter=pydantic_data_converter,
        dev_server_existing_path=str(TEMPORAL),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
async def harness(
    temporal_env: WorkflowEnvironment,
    ka_client: client.ApiClient,
    widget_crd: dict[str, Any],
) -> AsyncIterator[Harness]:
    """Watchers over kubesim, signalling the recording workflows on a private task queue."""
    task_queue = f"watchers-{uuid.uuid4()}"
    resources = ResourceClient(ka_client)
    for name, labels in (
        ("elastic-system", {}),
        ("team-a", {"eck-visible": "true"}),
        ("team-b", {}),
    ):
        await resources.create(NAMESPACES, namespace(name, labels))
    backoff = Backoff(initial=0.05, maximum=0.5)
    namespaces = NamespaceInformer(resources, backoff=backoff)
    matcher = NamespaceMatcher(
        ScopeConfig(
            operator_namespace="elastic-system",
            namespace_selector=LabelSelector.model_validate(
                {"matchLabels": {"eck-visible": "true"}}
            ),
        ),
        source=namespaces,
    )
    leader = [True]
    metrics = Registry()
    signaller = Signaller(
        temporal_env.client, task_queue=task_queue, is_leader=lambda: leader[0], metrics=metrics
    )
    informers = InformerSet(resources, matcher, backoff=backoff)
    operator = ResourceClient(ka_client, own_writes=OwnWrites())
    watchers = Watchers(
        controllers=CONTROLLERS,
        informers=informers,
        namespaces=namespaces,
        signaller=signaller,
        temporal=temporal_env.client,
        task_queue=task_queue,
        metrics=metrics,
        events=EventRecorder(resources, component="stackflow"),
        own_writes=operator.own_writes,
    )
    async with Worker(
        temporal_env.client,
        task_queue=task_queue,
        workflows=[RecordingResourceWorkflow, RecordingFlipWorkflow],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        namespaces.start()
        await namespaces.wait_synced()
        informers.start()
        await informers.wait_synced()
        signaller.start()
        try:
            yield Harness(
                temporal_env.client, resources, watchers, signaller, leader, operator, metrics
            )
        finally:
            await signaller.stop()
            await watchers.stop()
            await informers.stop()
            await namespaces.stop()
            async for execution in temporal_env.client.list_workflows(
                f"TaskQueue='{task_queue}' AND ExecutionStatus='Running'"
            ):
                if execution.status is WorkflowExecutionStatus.RUNNING:
                    await temporal_env.client.get_workflow_handle(execution.id).terminate()


async def test_each_event_reaches_the_right_workflow(harness: Harness) -> None:
    h = harness
    await h.create(WIDGETS, widget("w1", "team-a"))
    await h.wait_for("widget/team-a/w1", TriggerReason.CREATED)
    await h.wait_for("license/team-a/w1", TriggerReason.CREATED)

    # Spec change → SpecChanged; it also makes w1 reference Secret "creds".
    await h.resources.merge_patch(
        WIDGETS, {"spec": {"size": 3, "color": "creds"}}, namespace="team-a", name="w1"
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.SPEC_CHANGED)

    # A child (ConfigMap labelled with its owner) → the owner's workflow.
    await h.create(
        CONFIGMAPS,
        {"metadata": {"name": "w1-config", "namespace": "team-a", "labels": {OWNER_LABEL: "w1"}}},
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.CHILD_CHANGED)

    # The referenced Secret → the referencing workflow.
    await h.create(SECRETS, {"metadata": {"name": "creds", "namespace": "team-a"}})
    await h.wait_for("widget/team-a/w1", TriggerReason.REFERENCE_CHANGED)

    # The operator's own status write wakes nothing; the next label change does.
    await h.resources.patch_status(
        WIDGETS, {"status": {"ready": True}}, namespace="team-a", name="w1"
    )
    await h.resources.merge_patch(
        WIDGETS, {"metadata": {"labels": {"tier": "gold"}}}, namespace="team-a", name="w1"
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.METADATA_CHANGED)
    assert await h.reasons("widget/team-a/w1") == [
        "Created",
        "SpecChanged",
        "ChildChanged",
        "ReferenceChanged",
        "MetadataChanged",
    ]

    # Out of scope: nothing is signalled for team-b (seen by the informer before the flip).
    await h.create(WIDGETS, widget("w2", "team-b"))
    raw_widgets = h.watchers.informers.informer(WIDGETS)

    async def w2_cached() -> bool:
        return raw_widgets.cache.get(namespace="team-b", name="w2") is not None

    await eventually(w2_cached, what="the informer saw w2")
    # Labelling team-b flips it into scope: one flip workflow for that resourceVersion.
    labelled = await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": "true"}}}, namespace=None, name="team-b"
    )
    flip_id = flip_workflow_id("team-b", labelled["metadata"]["resourceVersion"])

    async def flip_ran() -> bool:
        return await h.exists(flip_id)

    await eventually(flip_ran, what="flip workflow started")
    flip: NamespaceFlipResult = await h.temporal.get_workflow_handle(
        flip_id, result_type=NamespaceFlipResult
    ).result()
    assert flip.triggered == {"IntoScope:widget": 0, "IntoScope:license": 0, "IntoScope:link": 0}
    assert not await h.exists("widget/team-b/w2")


async def test_the_operators_own_child_writes_wake_nobody(harness: Harness) -> None:
    h = harness
    workflow_id = "widget/team-a/w-echo"
    await h.create(WIDGETS, widget("w-echo", "team-a"))
    await h.wait_for(workflow_id, TriggerReason.CREATED)
    child = {
        "metadata": {
            "name": "w-echo-config",
            "namespace": "team-a",
            "labels": {OWNER_LABEL: "w-echo"},
        },
        "data": {"size": "1"},
    }
    with writing_as("widget"):
        await h.operator.create(CONFIGMAPS, child, namespace="team-a")
        await h.operator.merge_patch(
            CONFIGMAPS, {"data": {"size": "2"}}, namespace="team-a", name="w-echo-config"
        )

    async def both_echoes_seen() -> bool:
        return h.echoes("ConfigMap") >= 2

    await eventually(both_echoes_seen, what="the two writes recognised as the operator's own")
    # Someone else changes the child: that wakes the owner.
    await h.resources.merge_patch(
        CONFIGMAPS, {"data": {"size": "3"}}, namespace="team-a", name="w-echo-config"
    )
    await h.wait_for(workflow_id, TriggerReason.CHILD_CHANGED)
    assert await h.reasons(workflow_id) == ["Created", "ChildChanged"]
    assert h.echoes("ConfigMap") == 2


async def test_license_secret_reaches_waiting_workflows_and_license_controller(
    harness: Harness,
) -> None:
    h = harness
    await h.create(WIDGETS, widget("w1", "team-a"))
    await h.wait_for("widget/team-a/w1", TriggerReason.CREATED)
    await h.wait_for("license/team-a/w1", TriggerReason.CREATED)
    await h.temporal.get_workflow_handle("widget/team-a/w1").signal(
        RecordingResourceWorkflow.set_phase, "WaitingForLicense"
    )

    async def visible() -> bool:
        count = await h.temporal.count_workflows(
            "ExecutionStatus='Running' AND StackflowPhase='WaitingForLicense'"
        )
        return count.count == 1

    await eventually(visible, what="the waiting workflow is visible")
    await h.create(
        SECRETS,
        {
            "metadata": {
                "name": "eck-license",
                "namespace": "elastic-system",
                "labels": {"license.k8s.elastic.co/scope": "operator"},
            },
            "data": {"license": "e30="},
        },
    )
    await h.wait_for("widget/team-a/w1", TriggerReason.LICENSE_CHANGED)
    await h.wait_for("license/team-a/w1", TriggerReason.LICENSE_CHANGED)


async def test_a_malformed_license_secret_gets_a_warning_event_on_itself(
    harness: Harness,
) -> None:
    h = harness
    await h.create(
        SECRETS,
        {
            "metadata": {
                "name": "garbled-license",
                "namespace": "elastic-system",
                "labels": {"license.k8s.elastic.co/scope": "operator"},
            },
            "data": {"license": "bm90IGpzb24="},  # "not json"
        },
    )

    async def warned() -> list[dict[str, Any]]:
        listed = await h.resources.list(
            EVENTS,
            namespace="elastic-system",
            field_selector="involvedObject.name=garbled-license,involvedObject.kind=Secret",
        )
        return list(listed["items"])

    async def warned_yet() -> bool:
        return bool(await warned())

    await eventually(warned_yet, what="an InvalidLicense event on the Secret")
    (event,) = await warned()
    assert (event["type"], event["reason"], event["action"]) == (
        "Warning",
        "InvalidLicense",
        "LicenseCheck",
    )
    assert event["message"].startswith("while parsing license in elastic-system/garbled-license: ")


async def test_a_non_leader_sends_nothing_until_it_leads(harness: Harness) -> None:
    h = harness
    h.leader[0] = False
    await h.create(WIDGETS, widget("quiet", "team-a"))
    primaries = h.watchers.primary("widget")

    async def cached() -> bool:
        return primaries.get(namespace="team-a", name="quiet") is not None

    await eventually(cached, what="the informer saw the widget")
    assert h.signaller.pending == 0
    assert not await h.exists("widget/team-a/quiet")

    h.leader[0] = True
    assert await h.watchers.resync() == 3
    await h.wait_for("widget/team-a/quiet", TriggerReason.STARTUP)
    await h.wait_for("license/team-a/quiet", TriggerReason.STARTUP)


async def test_a_target_in_another_namespace_and_its_secrets_wake_the_referrer(
    harness: Harness,
) -> None:
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-c", {"eck-visible": "true"}))
    await h.create(WIDGETS, widget("app", "team-a", target="team-c/db"))
    # Every controller sharing the primary kind is told.
    for controller in ("widget", "license", "link"):
        await h.wait_for(f"{controller}/team-a/app", TriggerReason.CREATED)

    await h.create(WIDGETS, widget("db", "team-c"))
    await h.wait_for("link/team-a/app", TriggerReason.REFERENCE_CHANGED)
    assert "ReferenceChanged" not in await h.reasons("widget/team-a/app")

    # A Secret in the target's namespace, labelled with the referrer: the referrer's child.
    await h.create(
        SECRETS,
        {
            "metadata": {
                "name": "app-user",
                "namespace": "team-c",
                "labels": {LINK_NAME_LABEL: "app", LINK_NAMESPACE_LABEL: "team-a"},
            }
        },
    )
    await h.wait_for("link/team-a/app", TriggerReason.CHILD_CHANGED)

    # A status write on the target is a change the referrer depends on (readiness, version).
    await h.resources.patch_status(
        WIDGETS, {"status": {"ready": True}}, namespace="team-c", name="db"
    )

    async def told_twice() -> bool:
        reasons = await h.reasons("link/team-a/app")
        return reasons.count("ReferenceChanged") >= 2

    await eventually(told_twice, what="the target's status change reaches the referrer")


async def test_a_referrer_out_of_scope_is_not_woken_by_its_references_until_it_is_back(
    harness: Harness,
) -> None:
    """ECK drops an out-of-scope resource's dynamic watches; here its reference registrations
    stop signalling while its namespace is out of scope, and signal again once it is back."""
    h = harness
    await h.resources.create(NAMESPACES, namespace("team-c", {"eck-visible": "true"}))
    await h.create(WIDGETS, widget("db", "team-c"))
    await h.create(WIDGETS, widget("app", "team-a", target="team-c/db"))
    await h.wait_for("link/team-a/app", TriggerReason.CREATED)

    async def reference_changes() -> int:
        return (await h.reasons("link/team-a/app")).count("ReferenceChanged")

    async def target_changed_then_settled(marker: str, size: int) -> None:
        """Change the target, then wait until a later event was delivered and nothing is left."""
        await h.resources.merge_patch(
            WIDGETS, {"spec": {"size": size}}, namespace="team-c", name="db"
        )
        await h.create(WIDGETS, widget(marker, "team-c"))
        await h.wait_for(f"widget/team-c/{marker}", TriggerReason.CREATED)
        async with asyncio.timeout(10):
            await h.signaller.wait_idle()

    await target_changed_then_settled("marker-1", 2)
    in_scope_count = await reference_changes()
    assert in_scope_count >= 1

    # team-a leaves scope: the referrer's registration no longer signals.
    await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": None}}}, namespace=None, name="team-a"
    )
    await eventually(
        lambda: not h.watchers.matcher.name_matches("team-a"), what="team-a out of scope"
    )
    await target_changed_then_settled("marker-2", 3)
    assert await reference_changes() == in_scope_count

    # Back in scope: the same reference signals again.
    await h.resources.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck-visible": "true"}}}, namespace=None, name="team-a"
    )
    await eventually(lambda: h.watchers.matcher.name_matches("team-a"), what="team-a in scope")
    await target_changed_then_settled("marker-3", 4)
    assert await reference_changes() > in_scope_count


async def test_the_secret_informer_holds_only_needed_secrets_and_referrers_still_wake(
    harness: Harness,
) -> None:
    h = harness
    secrets = h.watchers.informers.scoped(SECRETS)

    def held() -> set[str]:
        return {view(obj).name for obj in secrets.list(namespace="team-a")}

    async def link_child(name: str) -> None:
        """A link controller's child (labelled: held), once the informer holds it: every Secret
        event before it was handled then."""
        labels = {LINK_NAME_LABEL: "app", LINK_NAMESPACE_LABEL: "team-a"}
        await h.create(
            SECRETS, {"metadata": {"name": name, "namespace": "team-a", "labels": labels}}
        )
        await eventually(lambda: name in held(), what=f"{name} held")

    # Secrets that exist before any spec names them: an unrelated one, two a widget will name.
    for name in ("unrelated", "named-then-edited", "named-then-deleted"):
        await h.create(SECRETS, {"metadata": {"name": name, "namespace": "team-a"}})
    await link_child("link-child")
    assert held() == {"link-child"}
    await h.create(WIDGETS, widget("edited", "team-a", color="named-then-edited"))
    await h.create(WIDGETS, widget("deleted", "team-a", color="named-then-deleted"))
    await h.wait_for("widget/team-a/edited", TriggerReason.CREATED)
    await h.wait_for("widget/team-a/deleted", TriggerReason.CREATED)
    # Edited after a spec named it: the referrer wakes, and the Secret is held from then on.
    await h.resources.merge_patch(
        SECRETS, {"stringData": {"k": "v"}}, namespace="team-a", name="named-then-edited"
    )
    await h.wait_for("widget/team-a/edited", TriggerReason.REFERENCE_CHANGED)
    assert held() == {"link-child", "named-then-edited"}
    # Deleted without ever being held: the referrer still wakes.
    await h.resources.delete(SECRETS, namespace="team-a", name="named-then-deleted")
    await h.wait_for("widget/team-a/deleted", TriggerReason.REFERENCE_CHANGED)
    # The unrelated one, edited, is still not held and wakes nobody.
    await h.resources.merge_patch(
        SECRETS, {"stringData": {"k": "v"}}, namespace="team-a", name="unrelated"
    )
    await link_child("canary")
    assert held() == {"link-child", "named-then-edited", "canary"}
    assert await h.reasons("widget/team-a/edited") == ["Created", "ReferenceChanged"]
