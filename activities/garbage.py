"""The garbage sweep's activities: complete the workflows of gone resources, delete orphaned
soft-owned Secrets.

A watch event can be missed: the operator was stopped when a resource was deleted, or (before the
raw informer delivered deletions) a namespace was out of scope. Then a ``ResourceWorkflow`` waits
for a resource that is gone, and the Secrets that carry its soft-owner labels (no
ownerReference, so Kubernetes does not collect them) stay behind. The sweep looks again:

* ``sweep_orphaned_workflows``: every running ``ResourceWorkflow`` whose resource does not exist
  (read unscoped, as the scope check does: a resource out of scope still exists) is told
  ``Deleted``; its own loop runs the finalizer and completes, as for a watched deletion.
* ``sweep_orphaned_secrets``: every Secret of the managed namespaces labelled as soft-owned by a
  kind the operator manages, whose owner does not exist, is deleted (ECK's start-up garbage
  collection of soft-owned Secrets over the matching namespaces).

The decisions are the pure functions ``resource_of_workflow``, ``workflows_to_complete``,
``soft_owner_of`` and ``orphaned_secrets``; the activities read, decide and act.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.context import ControllerContext
from stackflow.controllers import ControllerTable
from stackflow.kube import errors
from stackflow.models.engine import (
    RESOURCE_WORKFLOW,
    SA_PHASE,
    Phase,
    Trigger,
    TriggerReason,
    signal_of,
)
from stackflow.models.garbage import (
    SweepSecretsInput,
    SweepSecretsResult,
    SweepWorkflowsInput,
    SweepWorkflowsResult,
)
from stackflow.models.keys import ResourceKey
from stackflow.models.kinds import SECRETS, Kind
from stackflow.models.objects import view
from stackflow.stack.labels import (
    SOFT_OWNER_KIND_LABEL,
    SOFT_OWNER_NAME_LABEL,
    SOFT_OWNER_NAMESPACE_LABEL,
)
from stackflow.stack.policies import autoops

__all__ = [
    "OWNER_REFS_ANNOTATION",
    "RUNNING_RESOURCE_WORKFLOWS_QUERY",
    "RunningWorkflow",
    "SoftOwner",
    "orphaned_secrets",
    "resource_of_workflow",
    "soft_owner_of",
    "sweep_orphaned_secrets",
    "sweep_orphaned_workflows",
    "workflows_to_complete",
]

RUNNING_RESOURCE_WORKFLOWS_QUERY = (
    f"WorkflowType='{RESOURCE_WORKFLOW}' AND ExecutionStatus='Running'"
)
#: ECK's annotation on a Secret with several soft owners (then only the kind label is kept).
OWNER_REFS_ANNOTATION = "eck.k8s.elastic.co/owner-refs"
#: The source of the triggers the sweep sends, as the workflow's history shows it.
SWEEP_SOURCE = "garbage sweep"


@dataclass(frozen=True)
class RunningWorkflow:
    """A running ``ResourceWorkflow``, as visibility lists it."""

    workflow_id: str
    phase: str | None = None


class SoftOwner(NamedTuple):
    """The owner a Secret's soft-owner labels name."""

    kind: str
    namespace: str
    name: str


# --- pure decisions -------------------------------------------------------------------------------


def resource_of_workflow(workflow_id: str, controllers: Collection[str]) -> ResourceKey | None:
    """The resource ``{controller}/{namespace}/{name}`` names, or None when it names none of
    ``controllers`` (a controller this process does not run: not this sweep's to judge)."""
    parts = workflow_id.split("/")
    if len(parts) != 3 or not all(parts):
        return None
    controller, namespace, name = parts
    if controller not in controllers:
        return None
    return ResourceKey(controller, namespace, name)


def workflows_to_complete(
    running: Sequence[RunningWorkflow], *, gone: Collection[str]
) -> tuple[str, ...]:
    """The workflows to tell ``Deleted``: their resource is ``gone`` (by workflow id) and they
    are not finishing already (phase ``Deleted``). Sorted, each once."""
    chosen = {
        workflow.workflow_id
        for workflow in running
        if workflow.workflow_id in gone and workflow.phase != Phase.DELETED.value
    }
    return tuple(sorted(chosen))


def soft_owner_of(secret: Mapping[str, Any], managed_kinds: Collection[str]) -> SoftOwner | None:
    """The owner whose existence decides the Secret's fate, or None when the sweep leaves it be.

    Left be: a Secret without the three soft-owner labels, with several owners (ECK's
    ``owner-refs`` annotation: the policy controller that wrote it keeps it), soft-owned by a
    kind the operator does not manage, or already being deleted.
    """
    meta = view(secret)
    labels = meta.labels
    kind = labels.get(SOFT_OWNER_KIND_LABEL)
    namespace = labels.get(SOFT_OWNER_NAMESPACE_LABEL)
    name = labels.get(SOFT_OWNER_NAME_LABEL)
    if not (kind and namespace and name) or kind not in managed_kinds:
        return None
    if OWNER_REFS_ANNOTATION in meta.annotations or meta.deletion_timestamp:
        return None
    return SoftOwner(kind, namespace, name)


def orphaned_secrets(
    secrets: Sequence[Mapping[str, Any]],
    *,
    managed_kinds: Collection[str],
    existing_owners: Collection[SoftOwner],
) -> tuple[tuple[str, str], ...]:
    """The ``(namespace, name)`` of every Secret whose soft owner is not among
    ``existing_owners``; Secrets ``soft_owner_of`` leaves be are kept. Sorted."""
    orphans = {
        (view(secret).namespace, view(secret).name)
        for secret in secrets
        if (owner := soft_owner_of(secret, managed_kinds)) is not None
        and owner not in existing_owners
    }
    return tuple(sorted(orphans))


# --- activities -----------------------------------------------------------------------------------


def _managed_kinds(controllers: ControllerTable) -> dict[str, Kind]:
    """The primary kinds of the table, by kind name (the value of the soft-owner kind label)."""
    return {controller.primary.kind: controller.primary for controller in controllers}


async def _exists(context: ControllerContext, resource: Kind, *, namespace: str, name: str) -> bool:
    """Whether an object exists, whatever its namespace's scope: the informer cache, a miss
    confirmed by a GET (a lagging cache must not make a live owner look gone)."""
    cache = context.cache
    if cache is not None and isinstance(cache.get(resource, namespace=namespace, name=name), dict):
        return True
    try:
        await context.unscoped.get(resource, namespace=namespace, name=name)
    except errors.NotFound:
        return False
    return True


def _heartbeat(*details: Any) -> None:
    if activity.in_activity():
        activity.heartbeat(*details)


def _temporal_client(context: ControllerContext) -> Client:
    if context.temporal_client is not None:
        return context.temporal_client
    return activity.client()


async def sweep_orphaned_workflows(
    context: ControllerContext, request: SweepWorkflowsInput
) -> SweepWorkflowsResult:
    """Tell every running resource workflow whose resource is gone that it was deleted.

    The workflow's own loop then confirms the resource is gone, runs the finalizer (the
    soft-owned Secrets, in or out of scope) and completes. A workflow that completed meanwhile
    is skipped.
    """
    client = _temporal_client(context)
    running: list[RunningWorkflow] = []
    gone: set[str] = set()
    async for execution in client.list_workflows(RUNNING_RESOURCE_WORKFLOWS_QUERY):
        key = resource_of_workflow(execution.id, context.controllers.names)
        if key is None:
            continue
        running.append(
            RunningWorkflow(execution.id, execution.typed_search_attributes.get(SA_PHASE))
        )
        ref = context.controllers.named(key.controller).ref(namespace=key.namespace, name=key.name)
        if not await _exists(context, ref.resource, namespace=ref.namespace, name=ref.name):
            gone.add(execution.id)
        _heartbeat(len(running))
    signalled: list[str] = []
    for workflow_id in workflows_to_complete(running, gone=gone):
        trigger = Trigger(
            reason=TriggerReason.DELETED,
            source=SWEEP_SOURCE,
            detail=f"{workflow_id.partition('/')[2]} no longer exists",
        )
        signal, argument = signal_of((trigger,))
        try:
            await client.get_workflow_handle(workflow_id).signal(signal, argument)
        except RPCError as error:
            if error.status is not RPCStatusCode.NOT_FOUND:
                raise
            continue  # it completed since it was listed
        signalled.append(workflow_id)
        _heartbeat(len(running), len(signalled))
    return SweepWorkflowsResult(signalled=tuple(signalled))


async def sweep_orphaned_secrets(
    context: ControllerContext, request: SweepSecretsInput
) -> SweepSecretsResult:
    """Delete the soft-owned Secrets of the managed namespaces whose owner no longer exists.

    Listed through the scoped client (ECK's start-up collection covers the matching namespaces);
    each owner is looked up unscoped, because an owner in a namespace out of scope still exists
    and its Secrets are not garbage.
    """
    kinds = _managed_kinds(context.controllers)
    listed = await context.scoped.list(SECRETS, label_selector=SOFT_OWNER_KIND_LABEL)
    secrets = list(listed["items"])
    existing: set[SoftOwner] = set()
    owners = {owner for secret in secrets if (owner := soft_owner_of(secret, kinds)) is not None}
    for owner in sorted(owners):
        if await _exists(context, kinds[owner.kind], namespace=owner.namespace, name=owner.name):
            existing.add(owner)
        _heartbeat(len(existing))
    orphans = list(orphaned_secrets(secrets, managed_kinds=kinds, existing_owners=existing))
    orphans += await _orphaned_autoops_api_key_secrets(context)
    deleted: list[str] = []
    for namespace, name in orphans:
        try:
            await context.scoped.delete(SECRETS, namespace=namespace, name=name)
        except errors.NotFound:
            continue
        deleted.append(f"Secret {namespace}/{name}")
    return SweepSecretsResult(deleted=tuple(deleted))


async def _orphaned_autoops_api_key_secrets(context: ControllerContext) -> list[tuple[str, str]]:
    """ECK's start-up clean-up of AutoOps API-key Secrets whose policy is gone (they carry the
    policy's labels, not the soft-owner ones, and no ownerReference): when the AutoOps
    controller runs. Each policy is looked up unscoped, as the soft owners above."""
    controller = next(
        (c for c in context.controllers if c.primary.kind == autoops.POLICY_KIND), None
    )
    if controller is None:
        return []
    listed = await context.scoped.list(
        SECRETS,
        label_selector=f"{autoops.SECRET_TYPE_LABEL}={autoops.API_KEY_SECRET_TYPE}",
    )
    secrets = list(listed["items"])
    named = {
        (labels[autoops.POLICY_NAMESPACE_LABEL], labels[autoops.POLICY_NAME_LABEL])
        for secret in secrets
        if (labels := view(secret).labels).get(autoops.POLICY_NAMESPACE_LABEL)
        and labels.get(autoops.POLICY_NAME_LABEL)
    }
    existing = [
        (namespace, name)
        for namespace, name in sorted(named)
        if await _exists(context, controller.primary, namespace=namespace, name=name)
    ]
    return autoops.orphaned_api_key_secrets(secrets, existing)
