"""A fault kind of the reliability suite on a real cluster: the operator SIGKILLed and the Temporal
server crashed in the middle of a version upgrade.

The upgrade's steps are the resource workflow's history, so after each fault it resumes where it
stopped: every Pod is still replaced exactly once and one at a time, and the history holds one
deletion per Pod — none repeated, none skipped. Runs on kubesim (the faults are the operator's and
Temporal's, not the API server's; the scenarios of ``test_changing_a_cluster`` cover both).
"""

from __future__ import annotations

import signal
import time

import pytest
from temporalio.api.enums.v1 import EventType

from stackflow.models.engine import ACT_CLUSTER_STEP
from tests.clusters import KUBESIM
from tests.e2e.harness import ES
from tests.elasticsearch.changes import (
    CHANGE_WITHIN,
    INDEX,
    TO_VERSION,
    documents_there,
    pod_uids,
    reconciled,
    report,
    seeded_cluster,
)
from tests.elasticsearch.observe import Observations, observed
from tests.elasticsearch.real_stack import RealStack, green_with, unavailable
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "es-f"
NAME = "faults"


@pytest.fixture(scope="module")
def es_target() -> str:
    """Only kubesim: the faults here are the operator's and Temporal's."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    return KUBESIM


async def _replaced(seen: Observations, count: int) -> None:
    async def enough() -> bool:
        return sum(seen.replaced().values()) >= count

    await eventually(enough, within=CHANGE_WITHIN, what=f"{count} Pods replaced")


async def _deletions_in_history(stack: RealStack) -> dict[str, int]:
    """How many times the workflow scheduled the deletion of each Pod (every run of it)."""
    handle = stack.client.get_workflow_handle(f"elasticsearch/{NS}/{NAME}")
    counts: dict[str, int] = {}
    description = await handle.describe()
    run_id: str | None = description.run_id
    # Continue-as-new chains runs: walk back through every run of the workflow.
    while run_id:
        run = stack.client.get_workflow_handle(f"elasticsearch/{NS}/{NAME}", run_id=run_id)
        first = None
        async for event in run.fetch_history_events():
            if first is None:
                first = event
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name != ACT_CLUSTER_STEP:
                continue
            summary = event.user_metadata.summary.data.decode()
            if "delete Pod" in summary:
                pod = summary.split("delete Pod ", 1)[1].split(" ", 1)[0]
                counts[pod] = counts.get(pod, 0) + 1
        started = first.workflow_execution_started_event_attributes if first else None
        run_id = started.continued_execution_run_id if started is not None else None
    return counts


async def test_an_upgrade_resumes_after_an_operator_kill_and_a_temporal_crash(
    es_stack: RealStack,
) -> None:
    es = await seeded_cluster(es_stack, NS, NAME)
    before = await pod_uids(es_stack, NS, NAME)
    started = time.monotonic()
    async with observed(es, index=INDEX, prefix="faults", expected_pods=3) as seen:
        await es_stack.kube.merge_patch(
            ES, {"spec": {"version": TO_VERSION}}, namespace=NS, name=NAME
        )
        await _replaced(seen, 1)
        # Mid-upgrade: the operator dies without a word, and comes back.
        assert await es_stack.operator.stop(signal.SIGKILL) == -signal.SIGKILL
        await es_stack.operator.start()
        await _replaced(seen, 2)
        # Then the Temporal server crashes, and comes back on its database.
        await es_stack.temporal.kill()
        await es_stack.temporal.start()
        await reconciled(es_stack, NS, NAME, version=TO_VERSION, nodes=3)
        await green_with(es, 3)
    documents = await documents_there(es, seen)
    report("upgrade with faults", started, seen, documents)
    assert seen.replaced() == dict.fromkeys(before, 1)
    assert seen.most_unavailable == 1
    assert seen.health["red"] == 0
    assert await _deletions_in_history(es_stack) == dict.fromkeys(before, 1)
