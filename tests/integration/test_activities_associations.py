"""The association controllers against kubesim: establish, de-scope, re-scope, unbind, flips."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.context import ControllerContext
from activities.registry import build_activities
from stackflow.api.kinds import kind_resource
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.models.engine import (
    ACT_FLIP_TARGETS,
    FinalizeInput,
    FlipDirectionName,
    FlipTargetsInput,
    ObjectKey,
    Phase,
)
from stackflow.models.kinds import DEPLOYMENTS, EVENTS, NAMESPACES, SECRETS
from tests.integration import families
from tests.integration.association_setup import (
    APP_NS,
    ES_CONF,
    ES_NS,
    ON,
    app_manifest,
    create_elasticsearch,
    read,
    reconcile,
    ref_for,
    secrets_in,
    world,
)
from tests.integration.controller_context import SELECTOR, Cluster, cluster, eventually

__all__ = ["cluster", "world"]


async def set_labels(cluster: Cluster, namespace: str, labels: dict[str, str] | None) -> None:
    """Label (or de-label) a namespace and wait until the matcher sees the change."""
    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": (labels or {}).get("eck")}}}, namespace=None,
        name=namespace,
    )  # fmt: skip
    await eventually(
        lambda: (
            (cluster.namespaces.namespace_labels(namespace) or {}).get("eck")
            == (labels or {}).get("eck")
        )
    )


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


# controller, kind, name, app-side Secret, ES-side Secret, type of the ES-side Secret
ESTABLISH_CASES = [
    pytest.param(
        "kb-es", "Kibana", "kb", "kb-kibana-user", f"{APP_NS}-kb-kibana-user",
        "service-account-token", id="kibana-service-account",
    ),
    pytest.param(
        "apm-es", "ApmServer", "apm", "apm-apm-user", f"{APP_NS}-apm-apm-user", "user",
        id="apm-user",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("controller", "kind", "name", "app_secret", "es_secret", "es_secret_type"), ESTABLISH_CASES
)
async def test_cross_namespace_association_follows_the_target_namespace_scope(
    world: Cluster,
    controller: str,
    kind: str,
    name: str,
    app_secret: str,
    es_secret: str,
    es_secret_type: str,
) -> None:
    context = world.context(selector=SELECTOR)
    await create_elasticsearch(world, context)
    spec = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    await world.raw.create(kind_resource(kind), app_manifest(kind, name, APP_NS, spec))
    ref = ref_for(controller, APP_NS, name)

    established = await reconcile(context, controller, ref)

    assert established.phase is Phase.READY
    obj = await read(world, kind, APP_NS, name)
    conf = json.loads(obj["metadata"]["annotations"][ES_CONF])
    assert conf["url"] == f"https://es-es-http.{ES_NS}.svc:9200"
    assert conf["caSecretName"] == f"{name}-{controller}-ca"
    assert conf["authSecretName"] == app_secret
    assert obj["status"]["elasticsearchAssociationStatus"] == "Established"
    app_side = await secrets_in(world, APP_NS)
    assert "ca.crt" in decoded(app_side[f"{name}-{controller}-ca"])
    assert app_secret in app_side
    es_side = (await secrets_in(world, ES_NS))[es_secret]
    assert es_side["metadata"]["labels"]["common.k8s.elastic.co/type"] == es_secret_type
    assert es_side["metadata"]["ownerReferences"][0]["name"] == "es"

    es_before = await world.raw.get(ELASTICSEARCH, namespace=ES_NS, name="es")
    secrets_before = {
        key: value["metadata"]["resourceVersion"]
        for key, value in (await secrets_in(world, ES_NS)).items()
    }
    await set_labels(world, ES_NS, None)

    pending = await reconcile(context, controller, ref)

    assert pending.phase is Phase.RECONCILING
    assert pending.requeue_after_seconds is not None
    obj = await read(world, kind, APP_NS, name)
    assert ES_CONF not in (obj["metadata"].get("annotations") or {})
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"
    es_after = await world.raw.get(ELASTICSEARCH, namespace=ES_NS, name="es")
    assert es_after["metadata"]["resourceVersion"] == es_before["metadata"]["resourceVersion"]
    assert {
        key: value["metadata"]["resourceVersion"]
        for key, value in (await secrets_in(world, ES_NS)).items()
    } == secrets_before

    await set_labels(world, ES_NS, ON)

    again = await reconcile(context, controller, ref)

    assert again.phase is Phase.READY
    obj = await read(world, kind, APP_NS, name)
    assert json.loads(obj["metadata"]["annotations"][ES_CONF]) == conf
    assert obj["status"]["elasticsearchAssociationStatus"] == "Established"


async def test_external_target_through_secret_name(world: Cluster) -> None:
    context = world.context(selector=SELECTOR)
    await world.raw.create(
        SECRETS,
        {
            "metadata": {"name": "external-es", "namespace": APP_NS},
            "stringData": {
                "url": "https://es.example.com:9243",
                "username": "kb",
                "password": "secret",
                "ca.crt": "-----BEGIN CERTIFICATE-----",
            },
        },
    )
    spec = {"count": 1, "elasticsearchRef": {"secretName": "external-es"}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))

    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.READY
    obj = await read(world, "Kibana", APP_NS, "kb")
    conf = json.loads(obj["metadata"]["annotations"][ES_CONF])
    assert (conf["url"], conf["authSecretName"], conf["authSecretKey"]) == (
        "https://es.example.com:9243",
        "external-es",
        "password",
    )
    assert (conf["caCertProvided"], conf["caSecretName"]) == (True, "external-es")


async def test_external_secret_without_url_fails_with_an_event(world: Cluster) -> None:
    context = world.context(selector=SELECTOR)
    await world.raw.create(
        SECRETS,
        {"metadata": {"name": "broken", "namespace": APP_NS}, "stringData": {"username": "kb"}},
    )
    spec = {"count": 1, "elasticsearchRef": {"secretName": "broken"}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))

    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.RECONCILING
    obj = await read(world, "Kibana", APP_NS, "kb")
    assert obj["status"]["elasticsearchAssociationStatus"] == "Failed"
    events = (await world.raw.list(EVENTS, namespace=APP_NS))["items"]
    assert ("Warning", "AssociationError") in {(e["type"], e["reason"]) for e in events}


async def test_a_missing_target_is_pending_with_ecks_association_error(world: Cluster) -> None:
    context = world.context(selector=SELECTOR)
    spec = {"count": 1, "elasticsearchRef": {"name": "nowhere", "namespace": ES_NS}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))
    world.kubesim.server.request_log.clear()

    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.RECONCILING
    obj = await read(world, "Kibana", APP_NS, "kb")
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"
    # The status first, then its events (as ECK, whose events are sent in the background).
    writes = [
        record.path.rsplit("/", 1)[-1]
        for record in world.kubesim.server.request_log
        if record.method in {"POST", "PATCH"}
    ]
    assert writes == ["status", "events", "events"]
    events = (await world.raw.list(EVENTS, namespace=APP_NS))["items"]
    warnings = [
        e["message"] for e in events if (e["type"], e["reason"]) == ("Warning", "AssociationError")
    ]
    assert warnings == [
        f"Failed to find referenced backend {ES_NS}/nowhere: "
        'Elasticsearch.elasticsearch.k8s.elastic.co "nowhere" not found'
    ]


@pytest.mark.parametrize(
    ("controller", "kind", "spec", "message"),
    [
        pytest.param(
            "kb-es", "Kibana",
            {"elasticsearchRef": {"name": "es", "secretName": "external-es"}},
            "specify name or secretName, not both", id="name-and-secret-name",
        ),
        pytest.param(
            "kb-epr", "Kibana", {"packageRegistryRef": {"secretName": "registry"}},
            "not supported for a PackageRegistry reference", id="epr-secret-name",
        ),
    ],
)  # fmt: skip
async def test_bad_reference_is_an_invalid_spec_until_fixed(
    world: Cluster, controller: str, kind: str, spec: dict[str, Any], message: str
) -> None:
    context = world.context(selector=SELECTOR)
    resource = kind_resource(kind)
    await world.raw.create(resource, app_manifest(kind, "kb", APP_NS, {"count": 1, **spec}))
    ref = ref_for(controller, APP_NS, "kb")

    with pytest.raises(ApplicationError) as raised:
        await reconcile(context, controller, ref)

    assert raised.value.type == "InvalidSpec"
    assert message in raised.value.message
    await world.raw.merge_patch(
        resource, {"spec": dict.fromkeys(spec)}, namespace=APP_NS, name="kb"
    )
    healed = await reconcile(context, controller, ref)
    assert healed.phase is Phase.READY


async def test_fleet_server_ref_to_an_agent_that_is_no_fleet_server_is_invalid(
    world: Cluster,
) -> None:
    context = world.context(selector=SELECTOR)
    resource = kind_resource("Agent")
    await world.raw.create(resource, app_manifest("Agent", "plain", APP_NS, {"deployment": {}}))
    spec = {"mode": "fleet", "deployment": {}, "fleetServerRef": {"name": "plain"}}
    await world.raw.create(resource, app_manifest("Agent", "agent", APP_NS, spec))

    with pytest.raises(ApplicationError) as raised:
        await reconcile(context, "agent-fleetserver", ref_for("agent-fleetserver", APP_NS, "agent"))

    assert raised.value.type == "InvalidSpec"
    assert "is not a Fleet Server" in raised.value.message


APM = kind_resource("ApmServer")
#: An ApmServer ``apm`` in the application namespace referencing the Elasticsearch ``es``.
APM_SPEC = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}


async def create_apm_server(world: Cluster) -> ControllerContext:
    """A dynamic-scope context with the Elasticsearch and an ApmServer referencing it."""
    context = world.context(selector=SELECTOR)
    await create_elasticsearch(world, context)
    await world.raw.create(APM, app_manifest("ApmServer", "apm", APP_NS, APM_SPEC))
    return context


async def test_unbind_and_finalize_clean_up_both_sides(world: Cluster) -> None:
    context = await create_apm_server(world)
    ref = ref_for("apm-es", APP_NS, "apm")
    first = await reconcile(context, "apm-es", ref)
    assert first.phase is Phase.READY
    # The workflow hands what the association watches to the watchers; nothing is held in-process.
    assert first.acquired == ()
    assert ObjectKey.of(ELASTICSEARCH, namespace=ES_NS, name="es") in first.referenced

    await world.raw.merge_patch(
        APM, {"spec": {"elasticsearchRef": None}}, namespace=APP_NS, name="apm"
    )
    unbound = await reconcile(context, "apm-es", ref)

    assert unbound.phase is Phase.READY
    assert unbound.referenced == ()
    obj = await read(world, "ApmServer", APP_NS, "apm")
    assert ES_CONF not in (obj["metadata"].get("annotations") or {})
    assert "elasticsearchAssociationStatus" not in obj["status"]
    assert f"{APP_NS}-apm-apm-user" not in await secrets_in(world, ES_NS)
    assert {"apm-apm-user", "apm-apm-es-ca"}.isdisjoint(await secrets_in(world, APP_NS))

    await world.raw.merge_patch(APM, {"spec": APM_SPEC}, namespace=APP_NS, name="apm")
    await reconcile(context, "apm-es", ref)
    await world.raw.delete(APM, namespace=APP_NS, name="apm")
    finalized = await ActivityEnvironment().run(families.finalize, context, FinalizeInput(ref=ref))
    assert f"Secret {ES_NS}/{APP_NS}-apm-apm-user" in finalized.deleted


async def flip_targets(context: ControllerContext, controller: str, namespace: str) -> set[str]:
    result = await ActivityEnvironment().run(
        build_activities(context)[ACT_FLIP_TARGETS],
        FlipTargetsInput(
            controller=controller, namespace=namespace, direction=FlipDirectionName.OUT_OF_SCOPE
        ),
    )
    return {f"{ref.namespace}/{ref.name}" for ref in result.refs}


async def test_flip_mapper_triggers_direct_and_transitive_referrers(world: Cluster) -> None:
    context = world.context(selector=SELECTOR)
    await world.create_namespace("fleet")  # unlabelled: the flip mappers list unscoped
    await world.create_namespace("elsewhere")
    agents = kind_resource("Agent")
    fleet_server = {
        "mode": "fleet",
        "fleetServerEnabled": True,
        "deployment": {},
        "elasticsearchRefs": [{"name": "es", "namespace": ES_NS}],
    }
    await world.raw.create(agents, app_manifest("Agent", "fs", "fleet", fleet_server))
    enrolled = {
        "mode": "fleet",
        "deployment": {},
        "fleetServerRef": {"name": "fs", "namespace": "fleet"},
    }
    await world.raw.create(agents, app_manifest("Agent", "agent", APP_NS, enrolled))
    kibana = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, kibana))

    assert await flip_targets(context, "agent-fleetserver", ES_NS) == {f"{APP_NS}/agent"}
    assert await flip_targets(context, "agent-es", ES_NS) == {"fleet/fs"}
    assert await flip_targets(context, "agent-fleetserver", "fleet") == {
        f"{APP_NS}/agent",
        "fleet/fs",
    }
    assert await flip_targets(context, "kb-es", ES_NS) == {f"{APP_NS}/kb"}
    assert await flip_targets(context, "kb-es", "elsewhere") == set()


async def test_established_conf_reaches_the_application_workload(world: Cluster) -> None:
    context = world.context(selector=SELECTOR)
    await create_elasticsearch(world, context)
    spec = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))
    await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    await reconcile(context, "kibana", ref_for("kibana", APP_NS, "kb"))

    deployment = await world.raw.get(DEPLOYMENTS, namespace=APP_NS, name="kb-kb")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    # The API server (kubesim too) defaults ``defaultMode`` into each secret volume.
    assert "kb-kb-es-ca" in [(volume.get("secret") or {}).get("secretName") for volume in volumes]


async def test_the_association_lists_its_secrets_from_the_watch_cache(world: Cluster) -> None:
    """They are listed only to delete those no ref needs: no wait for a consistent list."""
    context = await create_apm_server(world)
    world.kubesim.server.request_log.clear()

    await reconcile(context, "apm-es", ref_for("apm-es", APP_NS, "apm"))

    secret_listings = [
        record.query.get("resourceVersion")
        for record in world.kubesim.server.request_log
        if record.method == "GET" and record.path == "/api/v1/secrets"
    ]
    assert secret_listings == ["0"]
