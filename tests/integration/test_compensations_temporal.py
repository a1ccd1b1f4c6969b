"""The saga on the real Temporal dev server, with the real activities over kubesim and the fake
Elasticsearch: what a resource holds outside itself is released by a compensation, a step of
its workflow's history, and the release is seen where it acts (objects gone, key invalidated,
trust revoked)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.autoops import agent_compensation
from activities.context import ControllerContext
from activities.registry import build_activities
from activities.remoteclusters import peer_compensation
from stackflow.controllers.autoops import AUTOOPS_POLICY_CONTROLLER, RELEASE_CLUSTER_ACTIVITY
from stackflow.controllers.remoteclusters import RELEASE_PEER_ACTIVITY, REMOTE_CLUSTER_CONTROLLER
from stackflow.licensing.issue import public_key_pem
from stackflow.models.engine import (
    CompensationStep,
    Phase,
    ResourceRef,
    Trigger,
    TriggerReason,
    WorkflowStateView,
    finalize_activity,
)
from stackflow.models.kinds import NAMESPACES, SECRETS
from stackflow.stack.policies.autoops import api_key_name
from stackflow.temporal import signal_with_start
from tests.e2e.harness import temporal_server
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import remote_cluster_setup as rc
from tests.integration.autoops_setup import (
    ES,
    KEY_A,
    POLICY,
    PROD,
    autoops_world,
    make_cluster,
    policy,
    policy_objects,
    ref,
)
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Cluster,
    FakeFactory,
    any_user_es,
    cluster,
    fake_es,
)
from tests.integration.remote_cluster_setup import peers, signing_key
from tests.polling import eventually
from workflows import WORKFLOWS
from workflows.resource import ResourceWorkflow

__all__ = ["any_user_es", "autoops_world", "cluster", "fake_es", "peers", "signing_key"]


@pytest.fixture
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server on 127.0.0.1 with Stackflow's search attributes."""
    async with temporal_server() as env:
        yield env


def trigger(reason: TriggerReason, detail: str = "") -> Trigger:
    """A trigger from the test, as the watchers send them."""
    return Trigger(reason=reason, source="test", detail=detail)


async def state(client: Client, resource: ResourceRef) -> WorkflowStateView:
    """The workflow's ``state`` query."""
    handle = client.get_workflow_handle_for(ResourceWorkflow.run, resource.workflow_id)
    return await handle.query(ResourceWorkflow.state)


async def holds(client: Client, resource: ResourceRef, steps: tuple[CompensationStep, ...]) -> None:
    """Wait until the workflow holds exactly ``steps`` with nothing pending."""

    async def held() -> bool:
        view = await state(client, resource)
        return view.compensations == steps and not view.pending and view.reconciles > 0

    await eventually(held, within=60, what=f"compensations {[step.key for step in steps]}")


async def compensations_run(handle: WorkflowHandle[Any, Any]) -> list[tuple[str, str]]:
    """Each compensation activity the history scheduled: (activity name, summary)."""
    history = await handle.fetch_history()
    found = []
    for event in history.events:
        if not event.HasField("activity_task_scheduled_event_attributes"):
            continue
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        if name in (RELEASE_CLUSTER_ACTIVITY, RELEASE_PEER_ACTIVITY):
            summary = event.user_metadata.summary.data.decode().strip('"')
            found.append((name, summary))
    return found


def worker(env: WorkflowEnvironment, context: ControllerContext, task_queue: str) -> Worker:
    """A worker with the real workflows and every real activity, bound to ``context``."""
    return Worker(
        env.client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=list(build_activities(context).values()),
    )


@pytest.mark.usefixtures("autoops_world")
async def test_an_autoops_agent_is_released_by_its_compensation_when_its_cluster_stops_matching(
    temporal_env: WorkflowEnvironment, cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    client, task_queue = temporal_env.client, f"saga-{uuid.uuid4().hex[:8]}"
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    context = cluster.context(selector=SELECTOR, elasticsearch=FakeFactory(fake_es))
    served = (agent_compensation(f"{PROD}/a"),)
    async with worker(temporal_env, context, task_queue):
        handle = await signal_with_start(
            client,
            ref=ref(),
            trigger=trigger(TriggerReason.CREATED),
            task_queue=task_queue,
            local_step=AUTOOPS_POLICY_CONTROLLER.local_step,
        )
        await holds(client, ref(), served)
        assert len(await policy_objects(cluster)) == 3
        assert fake_es.api_keys_named(KEY_A) == {"key-1": True}

        await cluster.raw.merge_patch(
            ES, {"metadata": {"labels": {"autoops": "off"}}}, namespace=PROD, name="a"
        )
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.REFERENCE_CHANGED, "a"))
        await holds(client, ref(), ())

        # The release is a step of the history, and it did what it says.
        assert await compensations_run(handle) == [
            (RELEASE_CLUSTER_ACTIVITY, f"compensate agent/{PROD}/a")
        ]
        assert await policy_objects(cluster) == set()
        assert fake_es.api_keys_named(KEY_A) == {"key-1": False}
        await handle.terminate()


@pytest.mark.usefixtures("autoops_world")
async def test_a_policy_leaving_scope_then_deleted_releases_its_agents_before_the_finalizer(
    temporal_env: WorkflowEnvironment, cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    client, task_queue = temporal_env.client, f"saga-{uuid.uuid4().hex[:8]}"
    team = "ops-team"
    await cluster.create_namespace(team, {"eck": "on"})
    connection = await cluster.raw.get(
        SECRETS, namespace=OPERATOR_NAMESPACE, name="autoops-connection"
    )
    await cluster.raw.create(
        SECRETS,
        {"metadata": {"namespace": team, "name": "autoops-connection"}, "data": connection["data"]},
        namespace=team,
    )
    await make_cluster(cluster, "a")
    team_policy = policy()
    team_policy["metadata"]["namespace"] = team
    await cluster.raw.create(POLICY, team_policy, namespace=team)
    policy_ref = ResourceRef.of(AUTOOPS_POLICY_CONTROLLER.name, POLICY, namespace=team, name="ops")
    key = api_key_name(policy_namespace=team, policy_name="ops", es_namespace=PROD, es_name="a")
    context = cluster.context(selector=SELECTOR, elasticsearch=FakeFactory(fake_es))
    async with worker(temporal_env, context, task_queue):
        handle = await signal_with_start(
            client,
            ref=policy_ref,
            trigger=trigger(TriggerReason.CREATED),
            task_queue=task_queue,
            local_step=AUTOOPS_POLICY_CONTROLLER.local_step,
        )
        await holds(client, policy_ref, (agent_compensation(f"{PROD}/a"),))
        assert fake_es.api_keys_named(key) == {"key-1": True}

        # The policy's own namespace leaves scope: what it holds is released, as a step.
        await cluster.raw.merge_patch(
            NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=team
        )
        await eventually(
            lambda: "eck" not in (cluster.namespaces.namespace_labels(team) or {"eck": 1})
        )
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))
        await holds(client, policy_ref, ())
        assert (await state(client, policy_ref)).phase is Phase.OUT_OF_SCOPE
        assert await compensations_run(handle) == [
            (RELEASE_CLUSTER_ACTIVITY, f"compensate agent/{PROD}/a")
        ]
        assert fake_es.api_keys_named(key) == {"key-1": False}
        assert await policy_objects(cluster, namespace=team) == set()

        # Back in scope, then deleted: the agent is served again, then released before the
        # finalizer runs.
        await cluster.raw.merge_patch(
            NAMESPACES, {"metadata": {"labels": {"eck": "on"}}}, namespace=None, name=team
        )
        await eventually(
            lambda: (cluster.namespaces.namespace_labels(team) or {}).get("eck") == "on"
        )
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))
        await holds(client, policy_ref, (agent_compensation(f"{PROD}/a"),))
        await cluster.raw.delete(POLICY, namespace=team, name="ops")
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.DELETED))
        await handle.result()
        names = [name for name, _ in await compensations_run(handle)]
        assert names == [RELEASE_CLUSTER_ACTIVITY, RELEASE_CLUSTER_ACTIVITY]
        assert await scheduled_after(handle, RELEASE_CLUSTER_ACTIVITY) == finalize_activity(
            AUTOOPS_POLICY_CONTROLLER.name
        )
        assert set(fake_es.api_keys_named(key).values()) == {False}
        assert await policy_objects(cluster, namespace=team) == set()


async def scheduled_after(handle: WorkflowHandle[Any, Any], name: str) -> str:
    """The activity the history scheduled right after the last ``name``."""
    history = await handle.fetch_history()
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    last = len(scheduled) - 1 - scheduled[::-1].index(name)
    return scheduled[last + 1]


@pytest.mark.usefixtures("peers")
async def test_a_cluster_leaving_scope_releases_each_peer_by_its_compensation(
    temporal_env: WorkflowEnvironment,
    cluster: Cluster,
    any_user_es: FakeElasticsearch,
    signing_key: rsa.RSAPrivateKey,
) -> None:
    client, task_queue = temporal_env.client, f"saga-{uuid.uuid4().hex[:8]}"
    await rc.install_license(cluster, signing_key)
    await rc.create_cluster(cluster, rc.NS_A, "a", [rc.to_b()])
    await rc.create_cluster(cluster, rc.NS_B, "b")
    context = cluster.context(
        selector=SELECTOR,
        public_keys=(public_key_pem(signing_key.public_key()),),
        elasticsearch=FakeFactory(any_user_es, endpoint_users=True),
    )
    client_ref = REMOTE_CLUSTER_CONTROLLER.ref(namespace=rc.NS_A, name="a")
    async with worker(temporal_env, context, task_queue):
        handle = await signal_with_start(
            client,
            ref=client_ref,
            trigger=trigger(TriggerReason.CREATED),
            task_queue=task_queue,
            local_step=REMOTE_CLUSTER_CONTROLLER.local_step,
        )
        await holds(client, client_ref, (peer_compensation((rc.NS_B, "b")),))
        assert len(await rc.copies(cluster)) == 2

        # The client's own namespace leaves scope: its workflow releases what it holds.
        await cluster.raw.merge_patch(
            NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=rc.NS_A
        )
        await eventually(
            lambda: "eck" not in (cluster.namespaces.namespace_labels(rc.NS_A) or {"eck": 1})
        )
        await handle.signal(ResourceWorkflow.trigger, trigger(TriggerReason.NAMESPACE_FLIP))

        async def out_of_scope() -> bool:
            view = await state(client, client_ref)
            return view.phase is Phase.OUT_OF_SCOPE and not view.pending

        await eventually(out_of_scope, within=60, what="out of scope")
        assert await compensations_run(handle) == [
            (RELEASE_PEER_ACTIVITY, f"compensate peer/{rc.NS_B}/b")
        ]
        # Both copies of the exchange are gone, the one in the out-of-scope namespace by name.
        assert await rc.copies(cluster) == {}
        await handle.terminate()
