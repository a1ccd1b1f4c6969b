"""The registered activities of a controller (against kubesim): its primary read once per
reconcile step, and a primary that is gone answered by its family's "not found" result."""

from __future__ import annotations

import dataclasses

import pytest
from temporalio.testing import ActivityEnvironment

from activities.registry import build_activities
from stackflow.controllers import CONTROLLERS
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import (
    Phase,
    ReconcileInput,
    ReconcileResult,
    ReconcileStepInput,
    ReconcileStepResult,
    StepVerdict,
)
from tests.integration.controller_context import SELECTOR, Cluster, cluster
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest
from tests.integration.test_cached_reads import CountingClient

__all__ = ["cluster"]


async def test_the_reconcile_step_reads_its_primary_once(cluster: Cluster) -> None:
    """The scope check's GET is the one the reconcile is handed (no cache: it used to be two)."""
    calls = CountingClient(cluster.raw)
    base = cluster.context(selector=SELECTOR)
    context = dataclasses.replace(
        base, scoped=ScopedClient(calls, base.matcher), unscoped=UnscopedClient(calls)
    )
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    await cluster.raw.create(CONTROLLERS.named("license").primary, es_manifest())
    ref = CONTROLLERS.named("license").ref(namespace=NAMESPACE, name="quickstart")

    result: ReconcileStepResult = await ActivityEnvironment().run(
        build_activities(context)["license.reconcile_step"],
        ReconcileStepInput(ref=ref, triggers=()),
    )

    assert result.verdict is StepVerdict.RECONCILED
    assert result.reconciled is not None
    assert result.reconciled.message == "no cluster license"
    assert calls.gets["elasticsearches"] == 1


async def test_the_reconcile_step_of_a_gone_primary_is_a_deletion(cluster: Cluster) -> None:
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    ref = CONTROLLERS.named("elasticsearch").ref(namespace=NAMESPACE, name="gone")

    result: ReconcileStepResult = await ActivityEnvironment().run(
        build_activities(cluster.context(selector=SELECTOR))["elasticsearch.reconcile_step"],
        ReconcileStepInput(ref=ref, triggers=()),
    )

    assert (result.verdict, result.reason) == (
        StepVerdict.DELETED,
        f"Elasticsearch {NAMESPACE}/gone not found",
    )


async def test_the_reconcile_step_records_who_waits_for_a_license(cluster: Cluster) -> None:
    """An unlicensed verdict puts the workflow on the record the watchers wake at once when a
    license appears; its next verdict (here: the primary gone) takes it off."""
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    await cluster.raw.create(CONTROLLERS.named("elasticsearch").primary, es_manifest())
    ref = CONTROLLERS.named("elasticsearch").ref(namespace=NAMESPACE, name="quickstart")
    step = build_activities(context)["elasticsearch.reconcile_step"]

    waiting: ReconcileStepResult = await ActivityEnvironment().run(
        step, ReconcileStepInput(ref=ref, triggers=())
    )
    assert waiting.verdict is StepVerdict.UNLICENSED
    assert context.license_waiters.waiting() == {ref.workflow_id}

    await cluster.raw.delete(
        CONTROLLERS.named("elasticsearch").primary, namespace=NAMESPACE, name="quickstart"
    )
    gone: ReconcileStepResult = await ActivityEnvironment().run(
        step, ReconcileStepInput(ref=ref, triggers=())
    )
    assert gone.verdict is StepVerdict.DELETED
    assert context.license_waiters.waiting() == set()


@pytest.mark.parametrize(
    ("controller", "phase", "message"),
    [
        ("elasticsearch", Phase.RECONCILING, "Elasticsearch not found"),
        # The license controller has nothing left to license: Ready.
        ("license", Phase.READY, "Elasticsearch not found"),
        ("trial", Phase.READY, "trial Secret not found"),
        ("kibana", Phase.RECONCILING, "Kibana not found"),
        ("kb-es", Phase.RECONCILING, "Kibana not found"),
        ("stackconfigpolicy", Phase.RECONCILING, "StackConfigPolicy not found"),
        ("elasticsearchautoscaler", Phase.RECONCILING, "ElasticsearchAutoscaler not found"),
        ("autoopsagentpolicy", Phase.RECONCILING, "AutoOpsAgentPolicy not found"),
        ("remotecluster", Phase.RECONCILING, "Elasticsearch not found"),
    ],
)
async def test_a_reconcile_of_a_gone_primary_answers_its_familys_not_found(
    cluster: Cluster, controller: str, phase: Phase, message: str
) -> None:
    """The reconcile activity apart from the step (histories recorded before it) reads the
    primary itself; each family keeps the phase it always reported for a primary gone."""
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    row = CONTROLLERS.named(controller)
    ref = row.ref(namespace=NAMESPACE, name="gone")

    result: ReconcileResult = await ActivityEnvironment().run(
        build_activities(cluster.context(selector=SELECTOR))[row.reconcile_activity],
        ReconcileInput(ref=ref, triggers=()),
    )

    assert (result.phase, result.message) == (phase, message)
