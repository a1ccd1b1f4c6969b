"""Bad Elasticsearch specs against the reconcile activity: one ``InvalidSpec`` naming the field,
never a retried traceback; unknown fields warned about once; builders run off the event loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.building import build_off_loop
from activities.errors import InvalidSpecError
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.models.kinds import EVENTS, STATEFULSETS
from tests.integration.controller_context import Cluster, cluster
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest, es_ref, run_reconcile

__all__ = ["cluster"]


def node_set(**fields: Any) -> dict[str, Any]:
    """The spec of one node set ``default`` of one node, with ``fields`` on top."""
    return {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1, **fields}]}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            node_set(podTemplate={"spec": {"containers": "x"}}),
            "spec.nodeSets[0].podTemplate.spec.containers: must be a list of containers",
            id="containers-a-string",
        ),
        pytest.param(
            node_set(count=2147483647),
            "spec.nodeSets[0].count: count 2147483647 is more than the",
            id="count-int32-max",
        ),
        pytest.param(
            node_set(config={"node.roles": ["master", "garbage"]}),
            "spec.nodeSets[0].config.node.roles: unknown node role 'garbage'",
            id="garbage-role",
        ),
        pytest.param(
            node_set(resources={"limits": {"memory": "lots"}}),
            "spec.nodeSets[0].resources.limits.memory: 'lots' is not a Kubernetes quantity",
            id="memory-garbage",
        ),
    ],
)
async def test_a_bad_spec_is_refused_naming_the_field_and_nothing_is_built(
    cluster: Cluster, spec: dict[str, Any], message: str
) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    manifest = es_manifest()
    manifest["spec"] = spec
    await cluster.raw.create(ELASTICSEARCH, manifest)

    with pytest.raises(ApplicationError) as raised:
        await run_reconcile(context, es_ref())

    assert raised.value.type == "InvalidSpec"
    assert raised.value.non_retryable is True
    assert message in raised.value.message
    assert not (await cluster.raw.list(STATEFULSETS, namespace=NAMESPACE))["items"]


async def test_unknown_fields_are_warned_about_once(cluster: Cluster) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    manifest = es_manifest(count=1)
    manifest["spec"]["futureField"] = {"enabled": True}
    manifest["spec"]["nodeSets"][0]["futureNodeSetField"] = 3
    await cluster.raw.create(ELASTICSEARCH, manifest)

    await run_reconcile(context, es_ref())
    await run_reconcile(context, es_ref())

    events = (await cluster.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    warned = [e for e in events if e["reason"] == "UnknownFields"]
    assert [(e["type"], e["message"], e.get("count", 1)) for e in warned] == [
        (
            "Warning",
            f"Elasticsearch {NAMESPACE}/quickstart has fields this operator does not know, kept "
            "but ignored: spec.futureField, spec.nodeSets[0].futureNodeSetField",
            1,
        )
    ]
    stored = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    assert stored["spec"]["futureField"] == {"enabled": True}


async def test_a_builder_runs_in_a_worker_thread() -> None:
    built_in: list[threading.Thread] = []

    def build() -> str:
        built_in.append(threading.current_thread())
        return "built"

    assert await build_off_loop("Elasticsearch ns/es", build) == "built"
    assert len(built_in) == 1
    assert built_in[0] is not threading.current_thread()


async def test_a_builder_tripping_over_the_spec_becomes_invalid_spec_naming_the_resource() -> None:
    def build() -> None:
        spec: Any = "x"
        spec.get("containers")

    with pytest.raises(InvalidSpecError) as raised:
        await build_off_loop("Elasticsearch ns/es", build)

    assert str(raised.value).startswith(
        "Elasticsearch ns/es: the spec cannot be built (AttributeError: "
    )
