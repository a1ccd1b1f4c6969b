"""enforce-rbac-on-refs against kubesim: the associations, AutoOps and remote-cluster activities
honour a reference across namespaces only while the referring ServiceAccount may get its target.

kubesim keeps SubjectAccessReviews without judging them, so the real ``SubjectAccessReviewer``
asks a grant table here (``tests.fakes.fake_authorizer``); the end-to-end tier asks the real API
server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes_asyncio import client

from activities.associations import EVENT_ACTION_ACCESS_CHECK
from activities.remoteclusters import RETRY_SECONDS
from kubesim.testing import KubeSim
from stackflow.api.crds import crd_for
from stackflow.api.kinds import kind_info, kind_resource
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.access import SubjectAccessReviewer
from stackflow.models.engine import Phase
from stackflow.models.kinds import EVENTS, SERVICES
from stackflow.stack.access import RBAC_RECHECK_SECONDS
from tests.fakes.fake_authorizer import Grant, GrantTable
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import test_activities_autoops as autoops_tests
from tests.integration import test_activities_remote_clusters as remote_tests
from tests.integration.controller_context import OPERATOR_NAMESPACE, SELECTOR, Cluster, cluster
from tests.integration.test_activities_apps import install_app_crds
from tests.integration.test_activities_associations import (
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
)

__all__ = ["cluster", "signing_key"]

signing_key = remote_tests.signing_key


@pytest.fixture
async def world(cluster: Cluster, ka_client: client.ApiClient) -> Cluster:
    """kubesim with every CRD and two labelled namespaces: the applications' and the cluster's."""
    await install_app_crds(cluster, ka_client)
    await cluster.create_namespace(APP_NS, ON)
    await cluster.create_namespace(ES_NS, ON)
    return cluster


async def warnings_on(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    events = (await cluster.raw.list(EVENTS, namespace=namespace))["items"]
    return [
        event
        for event in events
        if event["type"] == "Warning" and event["involvedObject"]["name"] == name
    ]


@pytest.mark.parametrize(
    ("controller", "kind", "name", "service_account", "app_secret", "es_secret"),
    [
        pytest.param(
            "kb-es", "Kibana", "kb", "", "kb-kibana-user", f"{APP_NS}-kb-kibana-user",
            id="kibana-default-service-account",
        ),
        pytest.param(
            "apm-es", "ApmServer", "apm", "apm-sa", "apm-apm-user", f"{APP_NS}-apm-apm-user",
            id="apm-named-service-account",
        ),
    ],
)  # fmt: skip
async def test_a_cross_namespace_association_needs_its_service_account_to_get_the_target(
    world: Cluster,
    controller: str,
    kind: str,
    name: str,
    service_account: str,
    app_secret: str,
    es_secret: str,
) -> None:
    authorizer = GrantTable()
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(authorizer))
    await create_elasticsearch(world, context)
    spec: dict[str, Any] = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    if service_account:
        spec["serviceAccountName"] = service_account
    await world.raw.create(kind_resource(kind), app_manifest(kind, name, APP_NS, spec))
    ref = ref_for(controller, APP_NS, name)
    user = f"system:serviceaccount:{APP_NS}:{service_account or 'default'}"

    denied = await reconcile(context, controller, ref)

    assert authorizer.asked == [Grant(user, "elasticsearches", ES_NS, "es")]
    assert denied.phase is Phase.RECONCILING
    message = f"Association not allowed: {APP_NS}/{name} to {ES_NS}/es"
    assert message in denied.message
    obj = await read(world, kind, APP_NS, name)
    assert ES_CONF not in (obj["metadata"].get("annotations") or {})
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"
    assert app_secret not in await secrets_in(world, APP_NS)
    assert es_secret not in await secrets_in(world, ES_NS)
    warnings = await warnings_on(world, APP_NS, name)
    assert [(w["reason"], w["message"]) for w in warnings] == [("AssociationError", message)]
    assert warnings[0]["action"] == EVENT_ACTION_ACCESS_CHECK

    authorizer.grant(APP_NS, service_account or "default", ELASTICSEARCH, f"{ES_NS}/es")

    allowed = await reconcile(context, controller, ref)

    assert allowed.phase is Phase.READY
    # No watch sees RBAC change: an established ref is checked again on a timer.
    assert allowed.requeue_after_seconds == RBAC_RECHECK_SECONDS
    obj = await read(world, kind, APP_NS, name)
    assert json.loads(obj["metadata"]["annotations"][ES_CONF])["authSecretName"] == app_secret
    assert obj["status"]["elasticsearchAssociationStatus"] == "Established"
    assert app_secret in await secrets_in(world, APP_NS)
    assert es_secret in await secrets_in(world, ES_NS)

    authorizer.revoke_all()

    revoked = await reconcile(context, controller, ref)

    # Unbound: the credentials on both sides and the conf go, the CA copy stays (as in ECK).
    assert revoked.phase is Phase.RECONCILING
    obj = await read(world, kind, APP_NS, name)
    assert ES_CONF not in (obj["metadata"].get("annotations") or {})
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"
    assert app_secret not in await secrets_in(world, APP_NS)
    assert es_secret not in await secrets_in(world, ES_NS)
    assert f"{name}-{controller}-ca" in await secrets_in(world, APP_NS)


async def test_an_association_within_one_namespace_asks_nothing(world: Cluster) -> None:
    authorizer = GrantTable()
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(authorizer))
    await create_elasticsearch(world, context, namespace=APP_NS)
    spec = {"count": 1, "elasticsearchRef": {"name": "es"}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))

    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.READY
    assert authorizer.asked == []


async def test_an_invalid_service_account_name_keeps_the_association_pending(
    world: Cluster,
) -> None:
    authorizer = GrantTable()
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(authorizer))
    await create_elasticsearch(world, context)
    spec = {
        "count": 1,
        "serviceAccountName": "Not_A_Name",
        "elasticsearchRef": {"name": "es", "namespace": ES_NS},
    }
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))

    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.RECONCILING
    assert "spec.serviceAccountName 'Not_A_Name' is not a valid ServiceAccount name" in (
        result.message
    )
    assert authorizer.asked == []


async def test_a_kibana_reference_checks_the_elasticsearch_behind_the_kibana(
    world: Cluster,
) -> None:
    """APM → Kibana: the APM user lives in the Kibana's Elasticsearch, so that is what its
    ServiceAccount must be allowed to get (ECK's check of the transitive Elasticsearch)."""
    authorizer = GrantTable()
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(authorizer))
    await create_elasticsearch(world, context)
    no_tls = {"tls": {"selfSignedCertificate": {"disabled": True}}}
    kibana = app_manifest(
        "Kibana", "kb", ES_NS, {"count": 1, "elasticsearchRef": {"name": "es"}, "http": no_tls}
    )
    await world.raw.create(kind_resource("Kibana"), kibana)
    await world.raw.create(
        SERVICES,
        {
            "metadata": {"name": "kb-kb-http", "namespace": ES_NS},
            "spec": {"ports": [{"name": "http", "port": 5601}]},
        },
    )
    spec = {"count": 1, "kibanaRef": {"name": "kb", "namespace": ES_NS}}
    await world.raw.create(
        kind_resource("ApmServer"), app_manifest("ApmServer", "apm", APP_NS, spec)
    )

    result = await reconcile(context, "apm-kibana", ref_for("apm-kibana", APP_NS, "apm"))

    assert result.phase is Phase.RECONCILING
    assert authorizer.asked == [
        Grant(f"system:serviceaccount:{APP_NS}:default", "elasticsearches", ES_NS, "es")
    ]


# --- AutoOps ---------------------------------------------------------------------------------------


@pytest.fixture
async def autoops_world(cluster: Cluster, kubesim: KubeSim, ka_client: client.ApiClient) -> Cluster:
    """The AutoOpsAgentPolicy CRD and the labelled ``prod`` namespace of the AutoOps tests."""
    api: Any = client.ApiextensionsV1Api(ka_client)
    await api.create_custom_resource_definition(crd_for(kind_info("AutoOpsAgentPolicy")))
    await kubesim.settle()
    await cluster.create_namespace(autoops_tests.PROD, {"eck": "on"})
    return cluster


@pytest.fixture
async def fake_es() -> AsyncIterator[FakeElasticsearch]:
    async with FakeElasticsearch() as fake:
        yield fake


async def test_an_autoops_policy_skips_a_cluster_its_service_account_may_not_get(
    autoops_world: Cluster, fake_es: FakeElasticsearch
) -> None:
    cluster = autoops_world
    authorizer = GrantTable()
    access = SubjectAccessReviewer(authorizer)
    await autoops_tests.make_cluster(cluster, "a")
    await cluster.raw.create(
        autoops_tests.POLICY,
        autoops_tests.policy(serviceAccountName="autoops"),
        namespace=OPERATOR_NAMESPACE,
    )
    factory = autoops_tests.FakeFactory(fake_es)

    await autoops_tests.reconcile(cluster, factory, access=access)

    user = f"system:serviceaccount:{OPERATOR_NAMESPACE}:autoops"
    assert authorizer.asked == [Grant(user, "elasticsearches", autoops_tests.PROD, "a")]
    reported = await autoops_tests.status(cluster)
    assert reported["details"] == {
        f"{autoops_tests.PROD}/a": {
            "phase": "Skipped",
            "message": "RBAC access denied for service account autoops",
        }
    }
    assert (reported["resources"], reported["skipped"], reported["ready"]) == (1, 1, 0)
    assert await autoops_tests.policy_objects(cluster) == set()
    assert fake_es.api_keys_named(autoops_tests.KEY_A) == {}
    warnings = await warnings_on(cluster, OPERATOR_NAMESPACE, "ops")
    assert [(w["reason"], w["message"]) for w in warnings] == [
        (
            "AssociationError",
            "AutoOps policy not allowed to access Elasticsearch cluster: "
            f"{OPERATOR_NAMESPACE}/ops to {autoops_tests.PROD}/a",
        )
    ]

    authorizer.grant(OPERATOR_NAMESPACE, "autoops", ELASTICSEARCH, f"{autoops_tests.PROD}/a")
    await autoops_tests.reconcile(cluster, factory, access=access)

    assert len(await autoops_tests.policy_objects(cluster)) == 3
    assert fake_es.api_keys_named(autoops_tests.KEY_A) == {"key-1": True}
    assert "details" not in await autoops_tests.status(cluster)

    # Access revoked: the agent and its key go, as for a cluster that stops matching.
    authorizer.revoke_all()
    await autoops_tests.reconcile(cluster, factory, access=access)

    assert await autoops_tests.policy_objects(cluster) == set()
    assert fake_es.api_keys_named(autoops_tests.KEY_A) == {"key-1": False}
    assert (await autoops_tests.status(cluster))["skipped"] == 1


# --- remote clusters -------------------------------------------------------------------------------


@pytest.fixture
async def any_user_es() -> AsyncIterator[FakeElasticsearch]:
    """The fake server every cluster is dialled at, each with its own internal user."""
    async with FakeElasticsearch(any_credentials=True) as fake:
        yield fake


async def test_a_remote_cluster_pair_needs_both_service_accounts_to_get_the_other_cluster(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    fake_es = any_user_es
    rc = remote_tests
    for namespace in (rc.NS_A, rc.NS_B):
        await cluster.create_namespace(namespace, ON)
    authorizer = GrantTable()
    access = SubjectAccessReviewer(authorizer)
    await rc.install_license(cluster, signing_key)
    await rc.create_cluster(cluster, rc.NS_A, "a", [rc.to_b()])
    await rc.create_cluster(cluster, rc.NS_B, "b")
    a_user = f"system:serviceaccount:{rc.NS_A}:default"
    b_user = f"system:serviceaccount:{rc.NS_B}:default"

    # a may get b, but b may not get a: the pair is refused, nothing is exchanged.
    authorizer.grant(rc.NS_A, "default", ELASTICSEARCH, f"{rc.NS_B}/b")
    refused = await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert authorizer.asked == [
        Grant(a_user, "elasticsearches", rc.NS_B, "b"),
        Grant(b_user, "elasticsearches", rc.NS_A, "a"),
    ]
    assert "remote cluster association not allowed with 1 clusters" in refused.message
    # A refused pair is retried as a Pending association is (RETRY_SECONDS, backed off).
    assert refused.requeue_after_seconds == RETRY_SECONDS
    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(fake_es) == []
    warnings = await warnings_on(cluster, rc.NS_B, "b")
    assert [(w["reason"], w["message"], w["action"]) for w in warnings] == [
        (
            "AssociationError",
            f"Remote cluster association not allowed: {rc.NS_B}/b to {rc.NS_A}/a",
            "RemoteClusterAssociation",
        )
    ]
    # The seeds follow the client's spec whatever the access, as in ECK.
    assert fake_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-remote-cluster.team-b.svc:9443"]
    }

    authorizer.grant(rc.NS_B, "default", ELASTICSEARCH, f"{rc.NS_A}/a")
    allowed = await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert allowed.phase is Phase.READY, allowed.message
    assert allowed.requeue_after_seconds == RBAC_RECHECK_SECONDS
    assert set(await rc.copies(cluster)) == {
        "a-team-b-b-es-remote-ca",
        "b-team-a-a-es-remote-ca",
    }
    [key_id] = rc.active_key_ids(fake_es)
    assert set(await rc.stored_credentials(cluster)) == {"cluster.remote.to-b.credentials"}

    # Access revoked: as a relationship that went, trust and keys are removed both ways.
    authorizer.revoke_all()
    await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(fake_es) == []
    assert key_id not in rc.active_key_ids(fake_es)
    assert await rc.stored_credentials(cluster) == {}


async def test_the_server_side_of_a_refused_pair_invalidates_the_clients_key(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    rc = remote_tests
    for namespace in (rc.NS_A, rc.NS_B):
        await cluster.create_namespace(namespace, ON)
    authorizer = GrantTable()
    access = SubjectAccessReviewer(authorizer)
    await rc.install_license(cluster, signing_key)
    await rc.create_cluster(cluster, rc.NS_A, "a", [rc.to_b()])
    await rc.create_cluster(cluster, rc.NS_B, "b")
    authorizer.grant(rc.NS_A, "default", ELASTICSEARCH, f"{rc.NS_B}/b")
    authorizer.grant(rc.NS_B, "default", ELASTICSEARCH, f"{rc.NS_A}/a")
    await rc.reconcile(cluster, any_user_es, signing_key, rc.NS_A, "a", access=access)
    assert len(rc.active_key_ids(any_user_es)) == 1

    authorizer.revoke_all()
    await rc.reconcile(cluster, any_user_es, signing_key, rc.NS_B, "b", access=access)

    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(any_user_es) == []
