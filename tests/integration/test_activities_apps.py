"""The application controllers' generic reconcile against kubesim: every kind to green."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import generic
from activities.context import ControllerContext
from activities.errors import translated_errors
from stackflow.api.kinds import kind_info, kind_resource
from stackflow.controllers import CONTROLLERS
from stackflow.controllers.apps import APP_CONTROLLER_NAMES
from stackflow.models.engine import (
    FinalizeInput,
    InvalidSpecNoticeInput,
    Phase,
    ReconcileInput,
    ReconcileResult,
    ResourceRef,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import (
    DAEMONSETS,
    DEPLOYMENTS,
    EVENTS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
    Kind,
)
from tests.integration import families
from tests.integration.controller_context import Cluster, cluster, eventually, serve_crds

__all__ = ["cluster"]

NAMESPACE = "apps"
VERSION = "8.15.0"
APP_KINDS = (
    "Kibana",
    "ApmServer",
    "EnterpriseSearch",
    "Beat",
    "Agent",
    "Logstash",
    "ElasticMapsServer",
    "PackageRegistry",
)


@pytest.fixture
async def apps(cluster: Cluster, ka_client: client.ApiClient) -> Cluster:
    """kubesim with every application CRD and the ``apps`` namespace."""
    await serve_crds(cluster.kubesim, ka_client, *APP_KINDS)
    await cluster.create_namespace(NAMESPACE)
    return cluster


def app_ref(kind: str, name: str) -> ResourceRef:
    return CONTROLLERS.named(APP_CONTROLLER_NAMES[kind]).ref(namespace=NAMESPACE, name=name)


def manifest(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    info = kind_info(kind)
    return {
        "apiVersion": info.api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"version": VERSION, **spec},
    }


async def run_reconcile(context: ControllerContext, ref: ResourceRef) -> ReconcileResult:
    return await ActivityEnvironment().run(
        translated_errors(families.reconcile),
        context,
        ReconcileInput(ref=ref, triggers=(Trigger(reason=TriggerReason.CREATED, source="test"),)),
    )


async def reconcile_until_ready(
    cluster: Cluster, context: ControllerContext, ref: ResourceRef
) -> ReconcileResult:
    results: list[ReconcileResult] = []

    async def ready() -> bool:
        await cluster.kubesim.settle()
        results.append(await run_reconcile(context, ref))
        return results[-1].phase is Phase.READY

    await eventually(ready)
    return results[-1]


async def names(cluster: Cluster, resource: Kind) -> set[str]:
    listed = await cluster.raw.list(resource, namespace=NAMESPACE)
    return {str(item["metadata"]["name"]) for item in listed["items"]}


# kind, name, spec, (workload kind, name), services, secrets expected (reference §2)
CASES = [
    pytest.param(
        "Kibana", "kb", {"count": 1},
        ("Deployment", "kb-kb"), {"kb-kb-http"},
        {"kb-kb-config", "kb-kb-http-certs-public", "kb-kb-http-certs-internal",
         "kb-kb-http-ca-internal"},
        id="kibana",
    ),
    pytest.param(
        "ApmServer", "apm", {"count": 1},
        ("Deployment", "apm-apm-server"), {"apm-apm-http"},
        {"apm-apm-config", "apm-apm-token", "apm-apm-http-certs-public"},
        id="apmserver",
    ),
    pytest.param(
        "EnterpriseSearch", "ent", {"count": 1},
        ("Deployment", "ent-ent"), {"ent-ent-http"},
        {"ent-ent-config", "ent-ent-http-certs-public"},
        id="enterprisesearch",
    ),
    pytest.param(
        "Beat", "fb", {"type": "filebeat", "deployment": {"replicas": 1}},
        ("Deployment", "fb-beat-filebeat"), set(), {"fb-beat-filebeat-config"},
        id="beat",
    ),
    pytest.param(
        "Agent", "ag", {"deployment": {"replicas": 1}},
        ("Deployment", "ag-agent"), set(), {"ag-agent-config"},
        id="agent-standalone",
    ),
    pytest.param(
        "Logstash", "ls", {"count": 1},
        ("StatefulSet", "ls-ls"), {"ls-ls-api"}, {"ls-ls-config", "ls-ls-pipeline"},
        id="logstash",
    ),
    pytest.param(
        "ElasticMapsServer", "ems", {"count": 1},
        ("Deployment", "ems-ems"), {"ems-ems-http"}, {"ems-ems-config", "ems-ems-http-certs-public"},
        id="maps",
    ),
    pytest.param(
        "PackageRegistry", "epr", {"count": 1},
        ("Deployment", "epr-epr"), {"epr-epr-http"}, {"epr-epr-config", "epr-epr-http-certs-public"},
        id="packageregistry",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "name", "spec", "workload", "services", "secrets"), CASES)
async def test_each_kind_reconciles_to_green_then_writes_nothing(
    apps: Cluster,
    kind: str,
    name: str,
    spec: dict[str, Any],
    workload: tuple[str, str],
    services: set[str],
    secrets: set[str],
) -> None:
    context = apps.context()
    ref = app_ref(kind, name)
    await apps.raw.create(kind_resource(kind), manifest(kind, name, spec))

    ready = await reconcile_until_ready(apps, context, ref)

    assert ready.requeue_after_seconds is None
    workload_kind, workload_name = workload
    resource = {
        "Deployment": DEPLOYMENTS,
        "StatefulSet": STATEFULSETS,
    }[workload_kind]
    stored = await apps.raw.get(resource, namespace=NAMESPACE, name=workload_name)
    assert stored["metadata"]["ownerReferences"][0]["kind"] == kind
    assert await names(apps, SERVICES) == services
    assert secrets <= await names(apps, SECRETS)
    obj = await apps.raw.get(kind_resource(kind), namespace=NAMESPACE, name=name)
    assert obj["status"]["health"] == "green"
    assert obj["status"]["availableNodes"] == 1

    again = await run_reconcile(context, ref)
    assert again.phase is Phase.READY
    assert "0 objects written" in again.message


async def test_beat_switching_to_a_daemonset_removes_its_deployment(apps: Cluster) -> None:
    context = apps.context()
    resource = kind_resource("Beat")
    spec = {"type": "metricbeat", "deployment": {"replicas": 1}}
    await apps.raw.create(resource, manifest("Beat", "mb", spec))
    await run_reconcile(context, app_ref("Beat", "mb"))
    await apps.raw.merge_patch(
        resource,
        {"spec": {"deployment": None, "daemonSet": {}}},
        namespace=NAMESPACE,
        name="mb",
    )

    await run_reconcile(context, app_ref("Beat", "mb"))

    assert "mb-beat-metricbeat" in await names(apps, DAEMONSETS)
    assert "mb-beat-metricbeat" not in await names(apps, DEPLOYMENTS)


async def test_fleet_agent_with_config_is_invalid_until_fixed(apps: Cluster) -> None:
    context = apps.context()
    resource = kind_resource("Agent")
    ref = app_ref("Agent", "fleet")
    spec = {"mode": "fleet", "config": {"agent": {"monitoring": {}}}, "deployment": {}}
    await apps.raw.create(resource, manifest("Agent", "fleet", spec))

    with pytest.raises(ApplicationError) as raised:
        await run_reconcile(context, ref)

    assert raised.value.type == "InvalidSpec"
    assert raised.value.non_retryable is True
    assert "remove config, it can't be set in the fleet mode" in raised.value.message
    assert "fleet-agent" not in await names(apps, DEPLOYMENTS)
    await ActivityEnvironment().run(
        generic.invalid_spec_notice,
        context,
        InvalidSpecNoticeInput(ref=ref, message=raised.value.message),
    )
    stored = await apps.raw.get(resource, namespace=NAMESPACE, name="fleet")
    condition = stored["status"]["conditions"][-1]
    assert (condition["type"], condition["status"]) == ("ReconciliationComplete", "False")
    events = (await apps.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "Validation")]

    await apps.raw.merge_patch(
        resource, {"spec": {"config": None}}, namespace=NAMESPACE, name="fleet"
    )
    await run_reconcile(context, ref)

    assert "fleet-agent" in await names(apps, DEPLOYMENTS)


async def test_finalize_deletes_the_soft_owned_public_certificates(apps: Cluster) -> None:
    context = apps.context()
    resource = kind_resource("Kibana")
    await apps.raw.create(resource, manifest("Kibana", "gone", {"count": 1}))
    await run_reconcile(context, app_ref("Kibana", "gone"))
    await apps.raw.delete(resource, namespace=NAMESPACE, name="gone")

    result = await ActivityEnvironment().run(
        families.finalize, context, FinalizeInput(ref=app_ref("Kibana", "gone"))
    )

    assert result.deleted == (f"Secret {NAMESPACE}/gone-kb-http-certs-public",)
    assert "gone-kb-http-certs-public" not in await names(apps, SECRETS)


KB_CONF = {
    "authSecretName": "fleet-agent-kb-user",
    "authSecretKey": "apps-fleet-agent-kb-user",
    "caCertProvided": True,
    "caSecretName": "fleet-agent-kb-ca",
    "url": "https://kb-kb-http.apps.svc:5601",
    "version": VERSION,
}


def event_reasons(events: list[dict[str, Any]], name: str) -> list[tuple[str, str]]:
    return [
        (str(e["type"]), str(e["reason"])) for e in events if e["involvedObject"]["name"] == name
    ]


async def test_fleet_agent_waits_for_kibana_and_its_fleet_api(apps: Cluster) -> None:
    """As ECK: no workload nor health until the Kibana is green and Fleet answered."""
    out_of_reach = apps.context()  # in-cluster networking off: Fleet cannot be asked
    in_reach = dataclasses.replace(
        out_of_reach,
        config=out_of_reach.config.model_copy(update={"in_cluster_networking": True}),
    )
    resource = kind_resource("Agent")
    ref = app_ref("Agent", "fleet")
    agent = manifest(
        "Agent", "fleet", {"mode": "fleet", "kibanaRef": {"name": "kb"}, "deployment": {}}
    )
    agent["metadata"]["annotations"] = {"association.k8s.elastic.co/kb-conf": json.dumps(KB_CONF)}
    await apps.raw.create(resource, agent)

    def status() -> Any:
        return apps.raw.get(resource, namespace=NAMESPACE, name="fleet")

    # No Kibana (no version reported): waits without an Event, no workload, no health.
    result = await run_reconcile(out_of_reach, ref)
    assert result.phase is Phase.RECONCILING
    assert "fleet-agent" not in await names(apps, DEPLOYMENTS)
    assert "fleet-agent-envvars" not in await names(apps, SECRETS)
    assert "health" not in (await status()).get("status", {})
    assert event_reasons((await apps.raw.list(EVENTS, namespace=NAMESPACE))["items"], "fleet") == []

    # Kibana reports its version but is not green: Delayed.
    kibana = kind_resource("Kibana")
    await apps.raw.create(kibana, manifest("Kibana", "kb", {"count": 1}))
    await apps.raw.patch_status(
        kibana, {"status": {"health": "red", "version": VERSION}}, namespace=NAMESPACE, name="kb"
    )
    await run_reconcile(out_of_reach, ref)
    assert "fleet-agent" not in await names(apps, DEPLOYMENTS)
    events = (await apps.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert event_reasons(events, "fleet") == [("Warning", "Delayed")]

    # Kibana green, Fleet out of reach: ReconciliationError, still nothing.
    await apps.raw.patch_status(
        kibana, {"status": {"health": "green"}}, namespace=NAMESPACE, name="kb"
    )
    await run_reconcile(out_of_reach, ref)
    assert "fleet-agent" not in await names(apps, DEPLOYMENTS)
    assert "health" not in (await status()).get("status", {})
    events = (await apps.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert ("Warning", "ReconciliationError") in event_reasons(events, "fleet")

    # Fleet within reach (the Agent enrolls itself: Stackflow has no Fleet client): made.
    await run_reconcile(in_reach, ref)
    assert "fleet-agent" in await names(apps, DEPLOYMENTS)
    assert "health" in (await status())["status"]


ES_CONF = {
    "authSecretName": "assoc-kibana-user",
    "authSecretKey": "apps-assoc-kibana-user",
    "caCertProvided": True,
    "caSecretName": "assoc-kb-es-ca",
    "url": "https://db-es-http.apps.svc:9200",
    "version": VERSION,
}


async def test_an_application_is_deployed_once_its_association_is_configured_and_kept_while_not(
    apps: Cluster,
) -> None:
    """As ECK's ``IsConfiguredIfSet``: no workload before the association controller wrote the
    conf (a Warning says why); once made, losing the conf (the target left scope or is gone)
    leaves the running workload as it was, unchanged."""
    context = apps.context()
    resource = kind_resource("Kibana")
    ref = app_ref("Kibana", "assoc")
    await apps.raw.create(
        resource, manifest("Kibana", "assoc", {"count": 1, "elasticsearchRef": {"name": "db"}})
    )

    waiting = await run_reconcile(context, ref)

    assert waiting.phase is Phase.RECONCILING
    assert "assoc-kb" not in await names(apps, DEPLOYMENTS)
    assert "health" not in (
        (await apps.raw.get(resource, namespace=NAMESPACE, name="assoc")).get("status") or {}
    )
    events = (await apps.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert ("Warning", "AssociationError") in event_reasons(events, "assoc")

    conf = {"association.k8s.elastic.co/es-conf": json.dumps(ES_CONF)}
    await apps.raw.merge_patch(
        resource, {"metadata": {"annotations": conf}}, namespace=NAMESPACE, name="assoc"
    )
    await run_reconcile(context, ref)
    made = await apps.raw.get(DEPLOYMENTS, namespace=NAMESPACE, name="assoc-kb")
    assert made["metadata"]["generation"] == 1

    await apps.raw.merge_patch(
        resource,
        {"metadata": {"annotations": dict.fromkeys(conf)}},
        namespace=NAMESPACE,
        name="assoc",
    )
    await run_reconcile(context, ref)
    kept = await apps.raw.get(DEPLOYMENTS, namespace=NAMESPACE, name="assoc-kb")
    assert kept["metadata"]["generation"] == 1
    assert kept["spec"]["template"] == made["spec"]["template"]
