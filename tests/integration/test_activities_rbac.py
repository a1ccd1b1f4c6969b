"""enforce-rbac-on-refs against kubesim: the associations, AutoOps and remote-cluster activities
honour a reference across namespaces only while the referring ServiceAccount may get its target.

The real ``SubjectAccessReviewer`` asks kubesim over HTTP, which answers from the RBAC objects it
stores, as the API server does: a grant is a Role allowing ``get`` on the one target and a
RoleBinding giving it to the ServiceAccount (what a user creates with kubectl), a revocation
deletes the RoleBinding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from activities.remoteclusters import RETRY_SECONDS
from stackflow.api.kinds import kind_resource
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.access import SubjectAccessReviewer
from stackflow.kube.events import EVENT_ACTION_ACCESS_CHECK
from stackflow.models.engine import Phase
from stackflow.models.kinds import EVENTS, SERVICES, Kind
from stackflow.stack.access import RBAC_RECHECK_SECONDS
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import autoops_setup as autoops
from tests.integration import remote_cluster_setup as rc
from tests.integration.association_setup import (
    APP_NS,
    ES_CONF,
    ES_NS,
    app_manifest,
    create_elasticsearch,
    read,
    reconcile,
    ref_for,
    secrets_in,
    world,
)
from tests.integration.autoops_setup import autoops_world
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

__all__ = [
    "any_user_es",
    "autoops_world",
    "cluster",
    "fake_es",
    "peers",
    "signing_key",
    "world",
]

ROLES = Kind("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLEBINDINGS = Kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")


@dataclass(frozen=True)
class Grant:
    """A Role and its RoleBinding, both named ``name`` in ``namespace`` (the target's)."""

    namespace: str
    name: str


async def grant(cluster: Cluster, service_account: str, target: Kind, key: str) -> Grant:
    """Let ``service_account`` (``namespace:name``) get the one ``target`` object ``key``
    (``namespace/name``), as ``kubectl create role --verb=get --resource-name`` and
    ``kubectl create rolebinding --serviceaccount`` do."""
    account_namespace, _, account = service_account.partition(":")
    namespace, _, name = key.partition("/")
    made = Grant(namespace, f"{account_namespace}-{account}-gets-{name}")
    rule = {
        "apiGroups": [target.group],
        "resources": [target.plural],
        "verbs": ["get"],
        "resourceNames": [name],
    }
    await cluster.raw.create(
        ROLES, {"metadata": {"name": made.name, "namespace": namespace}, "rules": [rule]}
    )
    await cluster.raw.create(
        ROLEBINDINGS,
        {
            "metadata": {"name": made.name, "namespace": namespace},
            "roleRef": {"apiGroup": ROLES.group, "kind": ROLES.kind, "name": made.name},
            "subjects": [
                {"kind": "ServiceAccount", "name": account, "namespace": account_namespace}
            ],
        },
    )
    return made


async def revoke(cluster: Cluster, *grants: Grant) -> None:
    """Take ``grants`` back: their RoleBindings are deleted (the Roles stay, bound to no one)."""
    for made in grants:
        await cluster.raw.delete(ROLEBINDINGS, namespace=made.namespace, name=made.name)


async def warnings_on(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    """The Warning events on the object ``namespace/name``."""
    events = (await cluster.raw.list(EVENTS, namespace=namespace))["items"]
    return [
        event
        for event in events
        if event["type"] == "Warning" and event["involvedObject"]["name"] == name
    ]


# --- associations ----------------------------------------------------------------------------------


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
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(world.raw))
    await create_elasticsearch(world, context)
    spec: dict[str, Any] = {"count": 1, "elasticsearchRef": {"name": "es", "namespace": ES_NS}}
    if service_account:
        spec["serviceAccountName"] = service_account
    await world.raw.create(kind_resource(kind), app_manifest(kind, name, APP_NS, spec))
    ref = ref_for(controller, APP_NS, name)

    denied = await reconcile(context, controller, ref)

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

    # The grant names the ServiceAccount of the spec (``default`` without one): it is the one asked.
    granted = await grant(
        world, f"{APP_NS}:{service_account or 'default'}", ELASTICSEARCH, f"{ES_NS}/es"
    )

    allowed = await reconcile(context, controller, ref)

    assert allowed.phase is Phase.READY, allowed.message
    # No watch sees RBAC change: an established ref is checked again on a timer.
    assert allowed.requeue_after_seconds == RBAC_RECHECK_SECONDS
    obj = await read(world, kind, APP_NS, name)
    assert json.loads(obj["metadata"]["annotations"][ES_CONF])["authSecretName"] == app_secret
    assert obj["status"]["elasticsearchAssociationStatus"] == "Established"
    assert app_secret in await secrets_in(world, APP_NS)
    assert es_secret in await secrets_in(world, ES_NS)

    await revoke(world, granted)

    revoked = await reconcile(context, controller, ref)

    # Unbound: the credentials on both sides and the conf go, the CA copy stays (as in ECK).
    assert revoked.phase is Phase.RECONCILING
    assert message in revoked.message
    obj = await read(world, kind, APP_NS, name)
    assert ES_CONF not in (obj["metadata"].get("annotations") or {})
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"
    assert app_secret not in await secrets_in(world, APP_NS)
    assert es_secret not in await secrets_in(world, ES_NS)
    assert f"{name}-{controller}-ca" in await secrets_in(world, APP_NS)


async def test_an_association_within_one_namespace_needs_no_grant(world: Cluster) -> None:
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(world.raw))
    await create_elasticsearch(world, context, namespace=APP_NS)
    spec = {"count": 1, "elasticsearchRef": {"name": "es"}}
    await world.raw.create(kind_resource("Kibana"), app_manifest("Kibana", "kb", APP_NS, spec))

    # kubesim holds no Role at all: any review would be denied.
    result = await reconcile(context, "kb-es", ref_for("kb-es", APP_NS, "kb"))

    assert result.phase is Phase.READY, result.message
    assert await warnings_on(world, APP_NS, "kb") == []


async def test_an_invalid_service_account_name_keeps_the_association_pending(
    world: Cluster,
) -> None:
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(world.raw))
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
    obj = await read(world, "Kibana", APP_NS, "kb")
    assert obj["status"]["elasticsearchAssociationStatus"] == "Pending"


async def test_a_kibana_reference_needs_the_elasticsearch_behind_the_kibana(
    world: Cluster,
) -> None:
    """APM → Kibana: the APM user lives in the Kibana's Elasticsearch, so that is what its
    ServiceAccount must be allowed to get (ECK's check of the transitive Elasticsearch)."""
    context = world.context(selector=SELECTOR, access=SubjectAccessReviewer(world.raw))
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
    ref = ref_for("apm-kibana", APP_NS, "apm")
    refused = f"Association not allowed: {APP_NS}/apm to {ES_NS}/es"
    service_account = f"{APP_NS}:default"

    # Getting the Kibana itself is not what counts.
    await grant(world, service_account, kind_resource("Kibana"), f"{ES_NS}/kb")
    denied = await reconcile(context, "apm-kibana", ref)

    assert denied.phase is Phase.RECONCILING
    assert refused in denied.message
    apm = await read(world, "ApmServer", APP_NS, "apm")
    assert apm["status"]["kibanaAssociationStatus"] == "Pending"

    await grant(world, service_account, ELASTICSEARCH, f"{ES_NS}/es")
    allowed = await reconcile(context, "apm-kibana", ref)

    assert allowed.phase is Phase.READY, allowed.message
    apm = await read(world, "ApmServer", APP_NS, "apm")
    assert apm["status"]["kibanaAssociationStatus"] == "Established"
    warnings = await warnings_on(world, APP_NS, "apm")
    assert [w["message"] for w in warnings] == [refused]


# --- AutoOps ---------------------------------------------------------------------------------------


async def test_an_autoops_policy_skips_a_cluster_its_service_account_may_not_get(
    autoops_world: Cluster, fake_es: FakeElasticsearch
) -> None:
    cluster = autoops_world
    access = SubjectAccessReviewer(cluster.raw)
    await autoops.make_cluster(cluster, "a")
    await cluster.raw.create(
        autoops.POLICY, autoops.policy(serviceAccountName="autoops"), namespace=OPERATOR_NAMESPACE
    )
    factory = FakeFactory(fake_es)

    await autoops.reconcile(cluster, factory, access=access)

    reported = await autoops.status(cluster)
    assert reported["details"] == {
        f"{autoops.PROD}/a": {
            "phase": "Skipped",
            "message": "RBAC access denied for service account autoops",
        }
    }
    # As in ECK, a cluster skipped for RBAC is not a monitored resource.
    assert (reported["resources"], reported["skipped"], reported["ready"]) == (0, 1, 0)
    assert reported["phase"] == "NoMonitoredResources"
    assert await autoops.policy_objects(cluster) == set()
    assert fake_es.api_keys_named(autoops.KEY_A) == {}
    warnings = await warnings_on(cluster, OPERATOR_NAMESPACE, "ops")
    assert [(w["reason"], w["message"]) for w in warnings] == [
        (
            "AssociationError",
            "AutoOps policy not allowed to access Elasticsearch cluster: "
            f"{OPERATOR_NAMESPACE}/ops to {autoops.PROD}/a",
        )
    ]

    # The policy's own ServiceAccount, in the policy's namespace, is the one asked.
    granted = await grant(
        cluster, f"{OPERATOR_NAMESPACE}:autoops", ELASTICSEARCH, f"{autoops.PROD}/a"
    )
    await autoops.reconcile(cluster, factory, access=access)

    assert len(await autoops.policy_objects(cluster)) == 3
    assert fake_es.api_keys_named(autoops.KEY_A) == {"key-1": True}
    assert "details" not in await autoops.status(cluster)

    # Access revoked: the agent and its key go, as for a cluster that stops matching.
    await revoke(cluster, granted)
    await autoops.reconcile(cluster, factory, access=access)

    assert await autoops.policy_objects(cluster) == set()
    assert fake_es.api_keys_named(autoops.KEY_A) == {"key-1": False}
    assert (await autoops.status(cluster))["skipped"] == 1


# --- remote clusters -------------------------------------------------------------------------------


async def test_a_remote_cluster_pair_needs_both_service_accounts_to_get_the_other_cluster(
    peers: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    cluster, fake_es = peers, any_user_es
    access = SubjectAccessReviewer(cluster.raw)
    await rc.install_license(cluster, signing_key)
    await rc.create_cluster(cluster, rc.NS_A, "a", [rc.to_b()])
    await rc.create_cluster(cluster, rc.NS_B, "b")

    # a may get b, but b may not get a: the pair is refused, nothing is exchanged.
    a_gets_b = await grant(cluster, f"{rc.NS_A}:default", ELASTICSEARCH, f"{rc.NS_B}/b")
    refused = await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert "remote cluster association not allowed with 1 clusters" in refused.message
    # A refused pair is retried as a Pending association is (RETRY_SECONDS, backed off).
    assert refused.requeue_after_seconds == RETRY_SECONDS
    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(fake_es) == []
    # The Warning is on the side whose ServiceAccount was refused.
    assert await warnings_on(cluster, rc.NS_A, "a") == []
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

    await grant(cluster, f"{rc.NS_B}:default", ELASTICSEARCH, f"{rc.NS_A}/a")
    allowed = await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert allowed.phase is Phase.READY, allowed.message
    assert allowed.requeue_after_seconds == RBAC_RECHECK_SECONDS
    assert set(await rc.copies(cluster)) == {
        "a-team-b-b-es-remote-ca",
        "b-team-a-a-es-remote-ca",
    }
    [key_id] = rc.active_key_ids(fake_es)
    assert set(await rc.stored_credentials(cluster)) == {"cluster.remote.to-b.credentials"}

    # a's access to b revoked: as a relationship that went, trust and keys are removed both ways.
    await revoke(cluster, a_gets_b)
    again = await rc.reconcile(cluster, fake_es, signing_key, rc.NS_A, "a", access=access)

    assert "remote cluster association not allowed with 1 clusters" in again.message
    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(fake_es) == []
    assert fake_es.state.api_keys[key_id]["invalidated"]
    assert await rc.stored_credentials(cluster) == {}
    warnings = await warnings_on(cluster, rc.NS_A, "a")
    assert [w["message"] for w in warnings] == [
        f"Remote cluster association not allowed: {rc.NS_A}/a to {rc.NS_B}/b"
    ]


async def test_the_server_side_of_a_refused_pair_invalidates_the_clients_key(
    peers: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    cluster = peers
    access = SubjectAccessReviewer(cluster.raw)
    await rc.install_license(cluster, signing_key)
    await rc.create_cluster(cluster, rc.NS_A, "a", [rc.to_b()])
    await rc.create_cluster(cluster, rc.NS_B, "b")
    grants = (
        await grant(cluster, f"{rc.NS_A}:default", ELASTICSEARCH, f"{rc.NS_B}/b"),
        await grant(cluster, f"{rc.NS_B}:default", ELASTICSEARCH, f"{rc.NS_A}/a"),
    )
    await rc.reconcile(cluster, any_user_es, signing_key, rc.NS_A, "a", access=access)
    assert len(rc.active_key_ids(any_user_es)) == 1

    await revoke(cluster, *grants)
    await rc.reconcile(cluster, any_user_es, signing_key, rc.NS_B, "b", access=access)

    assert await rc.copies(cluster) == {}
    assert rc.active_key_ids(any_user_es) == []
