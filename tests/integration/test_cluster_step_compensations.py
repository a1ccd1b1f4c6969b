"""What the orchestration leaves in a cluster is released by its compensation, against kubesim
and the fake Elasticsearch: an allocation exclude and a disabled replica allocation set by cluster
steps are recorded, and cleared by ``undo_cluster_step`` once the cluster's namespace has left
scope mid-operation."""

from __future__ import annotations

import base64

from temporalio.testing import ActivityEnvironment

from activities.cluster_steps import (
    ALLOCATION_ENABLE,
    ALLOCATION_EXCLUDE,
    left_in_cluster,
    run_cluster_step,
    undo_cluster_step,
)
from activities.errors import translated_errors
from stackflow.elastic.cluster_view import ENABLE_SETTING, EXCLUDE_NAME_SETTING
from stackflow.models.cluster_steps import DisableReplicaAllocation, ExcludeFromAllocation
from stackflow.models.engine import ClusterStepInput, CompensateInput
from stackflow.models.kinds import NAMESPACES, SECRETS
from stackflow.stack.elasticsearch import names
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import SELECTOR, Cluster, FakeFactory, cluster, fake_es
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest, es_ref
from tests.polling import eventually

__all__ = ["cluster", "fake_es"]


async def test_an_exclusion_left_by_a_step_is_cleared_once_the_namespace_left_scope(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    await cluster.raw.create(es_ref().resource, es_manifest(count=3), namespace=NAMESPACE)
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {
                "namespace": NAMESPACE,
                "name": names.internal_users_secret_name("quickstart"),
            },
            "data": {"elastic-internal": base64.b64encode(b"pw").decode()},
        },
        namespace=NAMESPACE,
    )
    context = cluster.context(selector=SELECTOR, elasticsearch=FakeFactory(fake_es))
    held = []
    for step in (DisableReplicaAllocation(), ExcludeFromAllocation("quickstart-es-default-2")):
        result = await ActivityEnvironment().run(
            translated_errors(run_cluster_step), context, ClusterStepInput(ref=es_ref(), step=step)
        )
        held.extend(result.acquired)
    assert [step.key for step in held] == [ALLOCATION_ENABLE, ALLOCATION_EXCLUDE]
    assert fake_es.state.allocation_rules().excluded == ("quickstart-es-default-2",)
    assert fake_es.state.allocation_rules().enable == "primaries"

    # The namespace leaves scope mid-operation: the workflow runs the compensations, last first.
    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NAMESPACE
    )
    await eventually(
        lambda: "eck" not in (cluster.namespaces.namespace_labels(NAMESPACE) or {"eck": 1})
    )
    for step in reversed(held):
        released = await ActivityEnvironment().run(
            translated_errors(undo_cluster_step), context, CompensateInput(ref=es_ref(), step=step)
        )
        assert released.released

    assert fake_es.state.transient_settings.get(EXCLUDE_NAME_SETTING) is None
    assert fake_es.state.transient_settings.get(ENABLE_SETTING) is None
    assert fake_es.state.allocation_rules().excluded == ()
    assert fake_es.state.allocation_rules().enable == "all"


async def test_a_deleted_cluster_has_nothing_to_undo(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    context = cluster.context(selector=SELECTOR, elasticsearch=FakeFactory(fake_es))
    (exclusion,), _ = left_in_cluster(ExcludeFromAllocation("quickstart-es-default-2"))
    released = await ActivityEnvironment().run(
        translated_errors(undo_cluster_step), context, CompensateInput(ref=es_ref(), step=exclusion)
    )
    assert not released.released
    assert fake_es.calls == []
