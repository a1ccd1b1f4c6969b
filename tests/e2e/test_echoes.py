"""The operator's own writes do not wake it: a new Elasticsearch costs at most two signals.

Driven through the Kubernetes API as a user would; the signals are read from the resource's
workflow history, as the Temporal UI shows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from stackflow.kube.leader import DEFAULT_LEASE_NAME
from stackflow.models.engine import Trigger
from stackflow.models.kinds import LEASES, SERVICES
from stackflow.temporal import DATA_CONVERTER
from tests.clusters import KUBESIM, ClusterTarget
from tests.e2e.es_status import nodes_up_health_unknown
from tests.e2e.harness import ES, create_namespace, get_or_none, manifest, operator_stack
from tests.polling import eventually

NAMESPACE = "team-echo"
WORKFLOW_ID = f"elasticsearch/{NAMESPACE}/quickstart"


async def signals(client: Client) -> list[Trigger]:
    """The triggers the workflow received, in order, from its history."""
    received: list[Trigger] = []
    async for event in client.get_workflow_handle(WORKFLOW_ID).fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        payloads = event.workflow_execution_signaled_event_attributes.input.payloads
        (trigger,) = await DATA_CONVERTER.decode(payloads, [Trigger])
        received.append(trigger)
    return received


async def settled(client: Client) -> dict[str, Any]:
    """The workflow's state once nothing is pending and it waits: Ready, or retrying because no
    Elasticsearch answers the license call (kubesim runs no Elasticsearch)."""
    state: dict[str, Any] = {}

    async def ready() -> bool:
        view = await client.get_workflow_handle(WORKFLOW_ID).query("state")
        state.update(view if isinstance(view, dict) else view.model_dump())
        waiting = state.get("phase") in ("Ready", "RetryScheduled")
        return bool(waiting and state.get("reconciles", 0) >= 2 and not state.get("pending"))

    try:
        await eventually(ready, what="the Elasticsearch workflow idle", within=90)
    except AssertionError as error:
        raise AssertionError(f"{error}; state {state}") from None
    return state


async def test_a_new_elasticsearch_costs_at_most_two_signals(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    async with operator_stack(tmp_path, cluster_target) as stack:

        async def leading() -> bool:
            lease = await get_or_none(
                stack.kube, LEASES, namespace="elastic-system", name=DEFAULT_LEASE_NAME
            )
            return bool(lease and (lease.get("spec") or {}).get("holderIdentity"))

        # Created after the leader's start-up resync, so no Startup trigger joins the count.
        await eventually(leading, what="the operator leading", within=60)
        await create_namespace(stack.kube, NAMESPACE, in_scope=True)

        async def flipped() -> bool:
            query = "WorkflowType='NamespaceFlipWorkflow' AND ExecutionStatus='Completed'"
            return (await stack.temporal.client.count_workflows(query)).count >= 1

        # The new namespace's flip into scope is over, so it does not join the count either.
        await eventually(flipped, what="the namespace's flip finished", within=60)
        spec = {"version": "9.1.0", "nodeSets": [{"name": "default", "count": 1}]}
        await stack.kube.create(
            ES, manifest("Elasticsearch", "quickstart", NAMESPACE, spec), namespace=NAMESPACE
        )

        async def reconciled() -> bool:
            es = await get_or_none(stack.kube, ES, namespace=NAMESPACE, name="quickstart")
            return nodes_up_health_unknown(es)

        await eventually(reconciled, what="the Elasticsearch reconciled", within=90)
        await settled(stack.temporal.client)
        received = await signals(stack.temporal.client)
        reasons = [f"{trigger.reason.value}: {trigger.detail}" for trigger in received]
        assert received[0].reason.value == "Created", reasons
        # Whatever the timing, no signal is an echo of the Elasticsearch controller's own writes:
        # only the StatefulSet and the PodDisruptionBudget (their status is the StatefulSet and
        # disruption controllers', or kubesim's) and the license controller's Secret change by
        # another hand.
        others = (
            "StatefulSet ",
            "PodDisruptionBudget ",
            "Pod ",
            "Secret team-echo/quickstart-es-license ",
        )
        echoes = [reason for reason in reasons[1:] if not any(o in reason for o in others)]
        assert echoes == [], reasons
        if stack.cluster.name == KUBESIM:
            # kubesim's StatefulSet becomes ready in one burst: one settled signal at most.
            assert len(received) <= 2, reasons

        # A child changed by someone else still wakes the owner, which puts it back.
        await stack.kube.delete(SERVICES, namespace=NAMESPACE, name="quickstart-es-http")

        async def restored() -> bool:
            service = await get_or_none(
                stack.kube, SERVICES, namespace=NAMESPACE, name="quickstart-es-http"
            )
            return service is not None

        await eventually(restored, what="the deleted Service restored", within=60)
        after = await signals(stack.temporal.client)
        assert any(
            trigger.reason.value == "ChildChanged" and "quickstart-es-http" in trigger.detail
            for trigger in after[len(received) :]
        ), [f"{trigger.reason.value}: {trigger.detail}" for trigger in after]
