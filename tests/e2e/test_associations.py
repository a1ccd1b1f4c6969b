"""Associations and stack applications end to end, on kubesim and the real API server: Temporal dev server + ``stackflow run``.

One operator serves the whole module; every test works in namespaces of its own. Everything is
driven and observed through the Kubernetes API only, as a user would with kubectl.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from stackflow.api.kinds import kind_resource
from stackflow.kube.resources import ResourceClient
from tests.clusters import ClusterTarget
from tests.e2e.harness import (
    DEPLOYMENTS,
    ES,
    EVENTS,
    SECRETS,
    Stack,
    create_namespace,
    get_or_none,
    manifest,
    operator_stack,
    set_in_scope,
)
from tests.polling import eventually

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

VERSION = "8.15.0"
ES_CONF = "association.k8s.elastic.co/es-conf"
FS_CONF = "association.k8s.elastic.co/fs-conf"
ASSOCIATION_EVENT_REASONS = {"AssociationStatusChange", "AssociationError"}
#: A healthy app workload reaches green within this many seconds on a loaded 2-core machine.
WITHIN = 240.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stack(
    cluster_target: ClusterTarget, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    """One cluster, Temporal dev server and operator for the module (per cluster under test)."""
    async with operator_stack(tmp_path_factory.mktemp("associations"), cluster_target) as running:
        yield running


async def read(kube: ResourceClient, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A stack object (Elasticsearch, Kibana, Agent…)."""
    return await kube.get(kind_resource(kind), namespace=namespace, name=name)


def status_of(kind: str, namespace: str, name: str) -> Callable[[Stack], Awaitable[Any]]:
    """Reads ``status`` of one object (``{}`` when it has none)."""

    async def status(stack: Stack) -> Any:
        return (await read(stack.kube, kind, namespace, name)).get("status") or {}

    return status


async def wait_for_field(
    stack: Stack,
    kind: str,
    namespace: str,
    name: str,
    *,
    field: str,
    value: Any,
    within: float = WITHIN,
) -> None:
    """Wait until ``status.<field>`` of the object equals ``value``."""

    async def reached() -> bool:
        return bool((await status_of(kind, namespace, name)(stack)).get(field) == value)

    try:
        await eventually(
            reached, within=within, what=f"{kind} {namespace}/{name} {field}={value!r}"
        )
    except AssertionError as error:
        current = await status_of(kind, namespace, name)(stack)
        raise AssertionError(f"{error}; status={current}\n{stack.operator.tail()}") from None


async def annotations_of(stack: Stack, kind: str, namespace: str, name: str) -> dict[str, str]:
    """The object's annotations."""
    obj = await read(stack.kube, kind, namespace, name)
    return dict((obj.get("metadata") or {}).get("annotations") or {})


async def secret_names(kube: ResourceClient, namespace: str) -> set[str]:
    """The names of the Secrets of a namespace."""
    listed = await kube.list(SECRETS, namespace=namespace)
    return {str(item["metadata"]["name"]) for item in listed["items"]}


async def association_events_on(
    kube: ResourceClient, *, namespace: str, kind: str, name: str
) -> list[dict[str, Any]]:
    """Association events whose involved object is the given object."""
    listed = await kube.list(EVENTS, namespace=namespace)
    return [
        event
        for event in listed["items"]
        if (event.get("involvedObject") or {}).get("kind") == kind
        and (event.get("involvedObject") or {}).get("name") == name
        and event.get("reason") in ASSOCIATION_EVENT_REASONS
    ]


def elasticsearch(name: str, namespace: str) -> dict[str, Any]:
    """A one-node Elasticsearch."""
    spec = {"version": VERSION, "nodeSets": [{"name": "default", "count": 1}]}
    return manifest("Elasticsearch", name, namespace, spec)


async def test_kibana_association_follows_the_elasticsearch_namespace(stack: Stack) -> None:
    kube = stack.kube
    await create_namespace(kube, "kb-1", in_scope=True)
    await create_namespace(kube, "es-1", in_scope=True)
    spec = {"version": VERSION, "count": 1, "elasticsearchRef": {"name": "es", "namespace": "es-1"}}
    await kube.create(
        kind_resource("Kibana"), manifest("Kibana", "kb", "kb-1", spec), namespace="kb-1"
    )
    await wait_for_field(
        stack, "Kibana", "kb-1", "kb", field="elasticsearchAssociationStatus", value="Pending"
    )
    # The target appears afterwards, in another namespace: its creation (and its Service and
    # certificates) wake the association.
    await kube.create(ES, elasticsearch("es", "es-1"), namespace="es-1")

    await wait_for_field(
        stack, "Kibana", "kb-1", "kb", field="elasticsearchAssociationStatus", value="Established"
    )
    conf = json.loads((await annotations_of(stack, "Kibana", "kb-1", "kb"))[ES_CONF])
    assert conf["url"] == "https://es-es-http.es-1.svc:9200"
    assert {"kb-kb-es-ca", "kb-kibana-user"} <= await secret_names(kube, "kb-1")
    assert "kb-1-kb-kibana-user" in await secret_names(kube, "es-1")
    # The Kibana app controller saw the conf annotation: its Deployment mounts the CA copy.
    await wait_for_field(stack, "Kibana", "kb-1", "kb", field="health", value="green")

    async def mounts_ca() -> bool:
        deployment = await get_or_none(kube, DEPLOYMENTS, namespace="kb-1", name="kb-kb")
        volumes = ((deployment or {}).get("spec") or {}).get("template", {}).get("spec", {})
        # A real API server defaults ``defaultMode`` into each secret volume.
        secrets = [
            (volume.get("secret") or {}).get("secretName")
            for volume in volumes.get("volumes") or []
        ]
        return "kb-kb-es-ca" in secrets

    await eventually(mounts_ca, within=WITHIN, what="the Kibana Deployment mounts the ES CA")

    await set_in_scope(kube, "es-1", False)

    await wait_for_field(
        stack, "Kibana", "kb-1", "kb", field="elasticsearchAssociationStatus", value="Pending"
    )

    async def conf_removed() -> bool:
        return ES_CONF not in await annotations_of(stack, "Kibana", "kb-1", "kb")

    await eventually(conf_removed, within=WITHIN, what="the es-conf annotation is removed")
    assert (
        await association_events_on(kube, namespace="es-1", kind="Elasticsearch", name="es") == []
    )
    # The de-scoped namespace keeps what the association made there: nothing is written in it.
    assert "kb-1-kb-kibana-user" in await secret_names(kube, "es-1")

    await set_in_scope(kube, "es-1", True)

    await wait_for_field(
        stack, "Kibana", "kb-1", "kb", field="elasticsearchAssociationStatus", value="Established"
    )
    assert json.loads((await annotations_of(stack, "Kibana", "kb-1", "kb"))[ES_CONF]) == conf
    assert (
        await association_events_on(kube, namespace="es-1", kind="Elasticsearch", name="es") == []
    )


async def test_kibana_in_a_namespace_out_of_scope_is_left_alone_until_it_returns(
    stack: Stack,
) -> None:
    kube = stack.kube
    kibanas = kind_resource("Kibana")
    for namespace in ("kb-2", "kb-2-witness"):
        await create_namespace(kube, namespace, in_scope=True)
        body = manifest("Kibana", "kb", namespace, {"version": VERSION, "count": 1})
        await kube.create(kibanas, body, namespace=namespace)
        await wait_for_field(stack, "Kibana", namespace, "kb", field="health", value="green")
        await wait_for_field(stack, "Kibana", namespace, "kb", field="observedGeneration", value=1)

    await set_in_scope(kube, "kb-2", False)
    changed = await kube.merge_patch(kibanas, {"spec": {"count": 2}}, namespace="kb-2", name="kb")
    assert changed["metadata"]["generation"] == 2
    # A witness change made after it, through the same watch: once the operator handled the
    # witness, it has seen (and ignored) the change in the de-scoped namespace.
    await kube.merge_patch(kibanas, {"spec": {"count": 2}}, namespace="kb-2-witness", name="kb")
    await wait_for_field(stack, "Kibana", "kb-2-witness", "kb", field="observedGeneration", value=2)

    assert (await status_of("Kibana", "kb-2", "kb")(stack))["observedGeneration"] == 1
    deployment = await kube.get(DEPLOYMENTS, namespace="kb-2", name="kb-kb")
    assert deployment["spec"]["replicas"] == 1
    assert {"kb-kb-config", "kb-kb-http-certs-public"} <= await secret_names(kube, "kb-2")

    await set_in_scope(kube, "kb-2", True)

    await wait_for_field(stack, "Kibana", "kb-2", "kb", field="observedGeneration", value=2)
    deployment = await kube.get(DEPLOYMENTS, namespace="kb-2", name="kb-kb")
    assert deployment["spec"]["replicas"] == 2


async def test_agent_reaching_elasticsearch_through_a_fleet_server_in_three_namespaces(
    stack: Stack,
) -> None:
    kube = stack.kube
    agents = kind_resource("Agent")
    for namespace in ("ag-3", "fs-3", "es-3"):
        await create_namespace(kube, namespace, in_scope=True)
    await kube.create(ES, elasticsearch("es", "es-3"), namespace="es-3")
    fleet_server = {
        "version": VERSION,
        "mode": "fleet",
        "fleetServerEnabled": True,
        "policyID": "eck-fleet-server",
        "deployment": {"replicas": 1},
        "elasticsearchRefs": [{"name": "es", "namespace": "es-3"}],
    }
    await kube.create(agents, manifest("Agent", "fs", "fs-3", fleet_server), namespace="fs-3")
    enrolled = {
        "version": VERSION,
        "mode": "fleet",
        "policyID": "eck-agent",
        "deployment": {"replicas": 1},
        "fleetServerRef": {"name": "fs", "namespace": "fs-3"},
    }
    await kube.create(agents, manifest("Agent", "agent", "ag-3", enrolled), namespace="ag-3")

    es_status = {"es-3/es": "Established"}
    await wait_for_field(
        stack, "Agent", "fs-3", "fs", field="elasticsearchAssociationsStatus", value=es_status
    )
    await wait_for_field(
        stack, "Agent", "ag-3", "agent", field="fleetServerAssociationStatus", value="Established"
    )
    fs_conf = (await annotations_of(stack, "Agent", "ag-3", "agent"))[FS_CONF]

    await set_in_scope(kube, "es-3", False)

    await wait_for_field(
        stack,
        "Agent",
        "fs-3",
        "fs",
        field="elasticsearchAssociationsStatus",
        value={"es-3/es": "Pending"},
    )
    # The Fleet Server itself stays in scope: the enrolled Agent keeps its association.
    assert (await status_of("Agent", "ag-3", "agent")(stack))[
        "fleetServerAssociationStatus"
    ] == "Established"

    await set_in_scope(kube, "es-3", True)

    await wait_for_field(
        stack, "Agent", "fs-3", "fs", field="elasticsearchAssociationsStatus", value=es_status
    )
    await wait_for_field(
        stack, "Agent", "ag-3", "agent", field="fleetServerAssociationStatus", value="Established"
    )
    assert (await annotations_of(stack, "Agent", "ag-3", "agent"))[FS_CONF] == fs_conf


# kind, name, spec (without version)
APPLICATIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("Kibana", "kb", {"count": 1}),
    ("ApmServer", "apm", {"count": 1}),
    ("EnterpriseSearch", "ent", {"count": 1}),
    ("Beat", "fb", {"type": "filebeat", "deployment": {"replicas": 1}}),
    ("Agent", "ag", {"deployment": {"replicas": 1}}),
    ("Logstash", "ls", {"count": 1}),
    ("ElasticMapsServer", "ems", {"count": 1}),
    ("PackageRegistry", "epr", {"count": 1}),
]


async def test_every_application_kind_is_green_in_scope_and_untouched_out_of_scope(
    stack: Stack,
) -> None:
    kube = stack.kube
    await create_namespace(kube, "apps-out", in_scope=False)
    await create_namespace(kube, "apps-in", in_scope=True)
    # Out of scope first: once the in-scope copies are handled, the watch delivered these too.
    for namespace in ("apps-out", "apps-in"):
        for kind, name, spec in APPLICATIONS:
            body = manifest(kind, name, namespace, {"version": VERSION, **spec})
            await kube.create(kind_resource(kind), body, namespace=namespace)

    await asyncio.gather(
        *(
            wait_for_field(stack, kind, "apps-in", name, field="health", value="green")
            for kind, name, _ in APPLICATIONS
        )
    )

    for kind, name, _ in APPLICATIONS:
        assert await status_of(kind, "apps-out", name)(stack) == {}, kind
    assert await secret_names(kube, "apps-out") == set()
    assert (await kube.list(DEPLOYMENTS, namespace="apps-out"))["items"] == []
