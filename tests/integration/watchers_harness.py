"""The watchers' test harness, shared by the watcher test modules: kubesim, a real Temporal dev
server, stand-in workflows that record the triggers they receive, and a controller table of
``Widget`` kinds exercising children, references and cross-namespace links."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from stackflow.controllers import ChildWatch, Controller, ControllerTable, FlipStrategy, Gate
from stackflow.kube.backoff import Backoff
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.writes import OwnWrites
from stackflow.metrics import Registry
from stackflow.models.engine import (
    SA_PHASE,
    TRIGGERS_SIGNAL,
    NamespaceFlipInput,
    NamespaceFlipResult,
    ObjectKey,
    ResourceWorkflowInput,
    Trigger,
    TriggerBatch,
    TriggerReason,
)
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import CONFIGMAPS, NAMESPACES, SECRETS, Kind
from stackflow.models.objects import view
from stackflow.scope import LabelSelector, NamespaceMatcher, ScopeConfig
from tests.e2e.harness import temporal_server
from tests.polling import eventually
from watchers.informers import InformerSet
from watchers.signals import Signaller
from watchers.wiring import Watchers

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


def owner_by_label(obj: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """A child's owner: the Widget its owner label names, in its own namespace."""
    meta = view(obj)
    owner = meta.labels.get(OWNER_LABEL)
    return (NamespacedName(meta.namespace, owner),) if owner else ()


def secret_named_by_color(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """A Widget's reference: the Secret named by its ``spec.color``."""
    color = (obj.get("spec") or {}).get("color")
    if not color:
        return []
    return [ObjectKey.of(SECRETS, namespace=view(obj).namespace, name=color)]


def link_owner(obj: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """A link Secret's owner: the Widget its link labels name, in any namespace."""
    labels = view(obj).labels
    if LINK_NAME_LABEL not in labels:
        return ()
    return (NamespacedName(labels[LINK_NAMESPACE_LABEL], labels[LINK_NAME_LABEL]),)


def linked_widget(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """A Widget's reference: the Widget ``namespace/name`` of its link-target annotation."""
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
            # Its flip concerns referrers elsewhere too: the fast path finds them in the index.
            flip=FlipStrategy.CONTROLLER,
        ),
    )
)


@dataclass
class Harness:
    """The running watchers, the clients and the Temporal client a test drives them with."""

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
    """A Namespace object with ``labels``."""
    return {"metadata": {"name": name, "labels": labels or {}}}


def widget(
    name: str, ns: str, *, size: int = 1, color: str = "", target: str = ""
) -> dict[str, Any]:
    """A Widget; ``color`` references a Secret, ``target`` links another Widget."""
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
    async with temporal_server() as env:
        yield env


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
