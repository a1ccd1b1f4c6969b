"""The AutoOpsAgentPolicy activities against kubesim and the fake Elasticsearch: ECK's objects
for a Ready matched cluster, a config change that rolls the pods but keeps the key, a key
replaced when it is gone or stale in Elasticsearch, a missing connection Secret, a not-Ready cluster, a
cluster that stops matching or leaves scope (objects gone, key invalidated), the finalizer, the
flip mapper and the start-up clean-up of an orphaned API-key Secret."""

from __future__ import annotations

import base64

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import autoops as autoops_activities
from activities.autoops import AutoOpsActivities, agent_compensation
from activities.errors import translated_errors
from activities.garbage import sweep_orphaned_secrets
from stackflow.controllers.autoops import AUTOOPS_POLICY_CONTROLLER
from stackflow.kube import errors
from stackflow.models.engine import FinalizeInput, FlipDirectionName
from stackflow.models.garbage import SweepSecretsInput
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, EVENTS, NAMESPACES, SECRETS
from stackflow.stack.labels import TYPE_LABEL
from stackflow.stack.policies.autoops import (
    CONFIG_HASH_ANNOTATION,
    SECRET_TYPE_LABEL,
    api_key_hash,
    api_key_secret_labels,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.autoops_setup import (
    ES,
    KEY_A,
    NAMES_A,
    POLICY,
    PROD,
    autoops_world,
    family,
    make_cluster,
    policy,
    policy_objects,
    reconcile,
    reconcile_with,
    ref,
    release,
    status,
)
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Cluster,
    FakeFactory,
    cluster,
    fake_es,
)
from tests.polling import eventually

__all__ = ["autoops_world", "cluster", "fake_es"]

pytestmark = pytest.mark.usefixtures("autoops_world")


async def test_a_ready_matched_cluster_gets_eck_objects_and_an_api_key(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a", tls=True)
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, factory)

    assert await policy_objects(cluster) == {
        f"Deployment/{NAMES_A.deployment}",
        f"ConfigMap/{NAMES_A.config_map}",
        f"Secret/{NAMES_A.api_key_secret}",
        f"Secret/{NAMES_A.ca_secret}",
    }
    deployment = await cluster.raw.get(
        DEPLOYMENTS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.deployment
    )
    assert deployment["metadata"]["labels"][TYPE_LABEL] == "autoops-agent"
    assert deployment["metadata"]["ownerReferences"][0]["kind"] == "AutoOpsAgentPolicy"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "autoops-agent"
    env = {item["name"]: item for item in container["env"]}
    assert env["AUTOOPS_ES_URL"]["value"] == "https://a-es-internal-http.prod.svc:9200"
    assert env["AUTOOPS_ES_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": NAMES_A.api_key_secret,
        "key": "api_key",
        "optional": False,
    }
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {
        "config-volume": "/mnt/config",
        "es-ca-a-prod": "/mnt/elastic-internal/es-ca/prod-a",
    }
    assert env["AUTOOPS_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "autoops-connection"
    assert CONFIG_HASH_ANNOTATION in deployment["metadata"]["annotations"]

    secret = await cluster.raw.get(
        SECRETS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.api_key_secret
    )
    assert "ownerReferences" not in secret["metadata"]
    assert secret["metadata"]["labels"] == api_key_secret_labels(
        policy_namespace=OPERATOR_NAMESPACE,
        policy_name="ops",
        es_namespace=PROD,
        es_name="a",
        key_hash=api_key_hash(),
    )
    assert fake_es.api_keys_named(KEY_A) == {"key-1": True}
    request = fake_es.state.api_keys["key-1"]["request"]
    assert list(request["role_descriptors"]) == ["eck_autoops_role"]
    assert request["metadata"]["elasticsearch.k8s.elastic.co/managed-by"] == "eck"
    encoded = base64.b64decode(secret["data"]["api_key"]).decode()
    assert base64.b64decode(encoded).decode().startswith("key-1:")
    ca = await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.ca_secret)
    assert ca["metadata"]["labels"][SECRET_TYPE_LABEL] == "ca"
    assert NAMES_A.deployment.startswith("ops-autoops-deploy-")
    reported = await status(cluster)
    assert (reported["resources"], reported["errors"], reported["skipped"]) == (1, 0, 0)
    assert reported["phase"] in ("AutoOpsAgentsNotReady", "Ready")
    config = (
        await cluster.raw.get(CONFIGMAPS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.config_map)
    )["data"]["autoops_es.yml"]
    assert "/mnt/elastic-internal/es-ca/prod-a/ca.crt" in config
    assert "${env:AUTOOPS_ES_URL}" in config

    # Nothing changed: no new key.
    await reconcile(cluster, factory)
    assert fake_es.api_keys_named(KEY_A) == {"key-1": True}


async def _pod_hash(cluster: Cluster) -> str:
    deployment = await cluster.raw.get(
        DEPLOYMENTS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.deployment
    )
    return str(deployment["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION])


async def test_a_config_change_rolls_the_pods_and_keeps_the_key(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy({"interval": "10s"}), namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, factory)
    before = await _pod_hash(cluster)
    await cluster.raw.merge_patch(
        POLICY, {"spec": {"config": {"interval": "30s"}}}, namespace=OPERATOR_NAMESPACE, name="ops"
    )
    await reconcile(cluster, factory)
    assert fake_es.api_keys_named(KEY_A) == {"key-1": True}
    config_map = await cluster.raw.get(
        CONFIGMAPS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.config_map
    )
    assert "interval: 30s" in config_map["data"]["autoops_es.yml"]
    assert await _pod_hash(cluster) != before


async def test_a_key_gone_or_stale_in_elasticsearch_is_replaced(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, factory)
    before = await _pod_hash(cluster)
    # Invalidated by hand: a new key, and the pods roll onto it.
    fake_es.state.api_keys["key-1"]["invalidated"] = True
    await reconcile(cluster, factory)
    assert fake_es.api_keys_named(KEY_A) == {"key-1": False, "key-2": True}
    assert await _pod_hash(cluster) != before
    # Made for other role descriptors (an older operator): invalidated and replaced.
    fake_es.state.api_keys["key-2"]["metadata"]["elasticsearch.k8s.elastic.co/config-hash"] = "x"
    await reconcile(cluster, factory)
    assert fake_es.api_keys_named(KEY_A) == {"key-1": False, "key-2": False, "key-3": True}


async def test_a_missing_connection_secret_makes_the_policy_invalid(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(
        POLICY,
        policy(autoOpsRef={"secretName": "nowhere"}),
        namespace=OPERATOR_NAMESPACE,
    )
    with pytest.raises(
        ApplicationError, match=r"InvalidSpec: configuration secret .*/nowhere not found"
    ):
        await reconcile(cluster, FakeFactory(fake_es))
    assert await policy_objects(cluster) == set()


async def test_a_not_ready_cluster_is_waited_for(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a", phase="ApplyingChanges")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    result = await reconcile(cluster, FakeFactory(fake_es))
    assert (await status(cluster))["phase"] == "MonitoredResourcesNotReady"
    assert result.requeue_after_seconds == autoops_activities.NOT_READY_REQUEUE_SECONDS
    assert await policy_objects(cluster) == set()
    assert fake_es.api_keys_named(KEY_A) == {}


async def test_a_cluster_that_stops_matching_loses_its_agent_and_key(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    activities = family(cluster, FakeFactory(fake_es))
    served = await reconcile_with(activities)
    # Serving the cluster is recorded as the compensation that releases it.
    assert served.acquired == (agent_compensation(f"{PROD}/a"),)
    assert served.release_now == ()
    assert len(await policy_objects(cluster)) == 3
    await cluster.raw.merge_patch(
        ES, {"metadata": {"labels": {"autoops": "off"}}}, namespace=PROD, name="a"
    )
    unmatched = await reconcile_with(activities)
    # The reconcile releases nothing itself: it asks the workflow to run the compensation.
    assert unmatched.acquired == ()
    assert unmatched.release_now == (agent_compensation(f"{PROD}/a"),)
    assert len(await policy_objects(cluster)) == 3
    assert fake_es.api_keys_named(KEY_A) == {"key-1": True}
    assert [result.released for result in await release(activities, unmatched.release_now)] == [
        True
    ]
    assert await policy_objects(cluster) == set()
    assert fake_es.api_keys_named(KEY_A) == {"key-1": False}
    assert (await status(cluster))["phase"] == "NoMonitoredResources"


async def test_a_cluster_that_leaves_scope_is_released_without_reading_it(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, factory)
    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=PROD
    )

    async def out_of_scope() -> bool:
        return "eck" not in (cluster.namespaces.namespace_labels(PROD) or {})

    await eventually(out_of_scope)
    activities = family(cluster, factory)
    result = await reconcile_with(activities)
    assert result.release_now == (agent_compensation(f"{PROD}/a"),)
    await release(activities, result.release_now)
    assert await policy_objects(cluster) == set()
    assert fake_es.api_keys_named(KEY_A) == {"key-1": False}
    # The key invalidated itself: the operator's user was not used for it.
    assert factory.endpoints[-1].api_key is not None


async def test_the_finalizer_invalidates_keys_and_deletes_api_key_secrets(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    factory = FakeFactory(fake_es)
    await reconcile(cluster, factory)
    result = await ActivityEnvironment().run(
        translated_errors(family(cluster, factory).finalize), FinalizeInput(ref=ref())
    )
    assert f"Secret {OPERATOR_NAMESPACE}/{NAMES_A.api_key_secret}" in result.deleted
    assert fake_es.api_keys_named(KEY_A) == {"key-1": False}
    with pytest.raises(errors.NotFound):
        await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.api_key_secret)


async def test_the_flip_mapper_returns_every_policy(cluster: Cluster) -> None:
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    other = policy()
    other["metadata"] = {"namespace": PROD, "name": "team"}
    await cluster.raw.create(POLICY, other, namespace=PROD)
    activities = AutoOpsActivities(cluster.context(selector=SELECTOR), AUTOOPS_POLICY_CONTROLLER)
    found = await activities.flip_targets("elsewhere", FlipDirectionName.INTO_SCOPE)
    assert sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in found) == [
        f"{OPERATOR_NAMESPACE}/ops",
        f"{PROD}/team",
    ]


async def test_the_sweep_deletes_api_key_secrets_whose_policy_is_gone(cluster: Cluster) -> None:
    for name, policy_name in (("orphan", "gone"), ("kept", "ops")):
        await cluster.raw.create(
            SECRETS,
            {
                "metadata": {
                    "namespace": OPERATOR_NAMESPACE,
                    "name": name,
                    "labels": api_key_secret_labels(
                        policy_namespace=OPERATOR_NAMESPACE,
                        policy_name=policy_name,
                        es_namespace=PROD,
                        es_name="a",
                    ),
                }
            },
            namespace=OPERATOR_NAMESPACE,
        )
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    context = cluster.context(selector=SELECTOR)
    result = await sweep_orphaned_secrets(context, SweepSecretsInput())
    assert result.deleted == (f"Secret {OPERATOR_NAMESPACE}/orphan",)
    await cluster.raw.get(SECRETS, namespace=OPERATOR_NAMESPACE, name="kept")


async def policy_events(cluster: Cluster) -> list[tuple[str, str, str, str]]:
    listed = await cluster.raw.list(EVENTS, namespace=OPERATOR_NAMESPACE)
    return [
        (e["type"], e["reason"], e["action"], e["message"])
        for e in listed["items"]
        if e["involvedObject"]["kind"] == "AutoOpsAgentPolicy"
    ]


async def test_a_paused_policy_holds_its_deployments_and_says_so(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    paused = policy()
    paused["metadata"]["annotations"] = {autoops_activities.PAUSE_ANNOTATION: "true"}
    await cluster.raw.create(POLICY, paused, namespace=OPERATOR_NAMESPACE)
    await reconcile(cluster, FakeFactory(fake_es))
    # As ECK: the key and the ConfigMap are kept, the Deployment is held back (pending).
    assert await policy_objects(cluster) == {
        f"ConfigMap/{NAMES_A.config_map}",
        f"Secret/{NAMES_A.api_key_secret}",
    }
    assert fake_es.api_keys_named(KEY_A) == {"key-1": True}
    reported = await status(cluster)
    assert reported["resources"] == 1
    assert [(c["type"], c["status"], c["message"]) for c in reported["conditions"]] == [
        ("OrchestrationPaused", "True", autoops_activities.PAUSED_PENDING_MESSAGE)
    ]
    assert await policy_events(cluster) == [
        ("Warning", "Paused", "Reconciliation", autoops_activities.PAUSED_PENDING_MESSAGE)
    ]

    await cluster.raw.merge_patch(
        POLICY,
        {"metadata": {"annotations": {autoops_activities.PAUSE_ANNOTATION: None}}},
        namespace=OPERATOR_NAMESPACE,
        name="ops",
    )
    await reconcile(cluster, FakeFactory(fake_es))
    assert len(await policy_objects(cluster)) == 3
    conditions = (await status(cluster))["conditions"]
    assert [(c["type"], c["status"], c["message"]) for c in conditions] == [
        ("OrchestrationPaused", "False", autoops_activities.RESUMED_MESSAGE)
    ]
    assert (
        "Normal",
        "Resumed",
        "OrchestrationResumed",
        autoops_activities.RESUMED_MESSAGE,
    ) in await policy_events(cluster)

    # Paused again with nothing to change: the no-pending message, no Warning.
    await cluster.raw.merge_patch(
        POLICY,
        {"metadata": {"annotations": {autoops_activities.PAUSE_ANNOTATION: "true"}}},
        namespace=OPERATOR_NAMESPACE,
        name="ops",
    )
    await reconcile(cluster, FakeFactory(fake_es))
    conditions = (await status(cluster))["conditions"]
    assert [(c["status"], c["message"]) for c in conditions] == [
        ("True", autoops_activities.PAUSED_NO_CHANGES_MESSAGE)
    ]


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (autoops_activities.DEPRECATED_UNMANAGED_ANNOTATION, "false"),
        (autoops_activities.LEGACY_PAUSE_ANNOTATION, "true"),
    ],
)
async def test_an_unmanaged_policy_is_not_reconciled_at_all(
    cluster: Cluster, fake_es: FakeElasticsearch, annotation: str, value: str
) -> None:
    await make_cluster(cluster, "a")
    unmanaged = policy()
    unmanaged["metadata"]["annotations"] = {annotation: value}
    await cluster.raw.create(POLICY, unmanaged, namespace=OPERATOR_NAMESPACE)
    await reconcile(cluster, FakeFactory(fake_es))
    assert await policy_objects(cluster) == set()
    assert fake_es.api_keys_named(KEY_A) == {}
    assert await status(cluster) == {}


async def test_a_cluster_of_a_deprecated_version_is_skipped(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.merge_patch(ES, {"spec": {"version": "7.17.3"}}, namespace=PROD, name="a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    await reconcile(cluster, FakeFactory(fake_es))
    reported = await status(cluster)
    assert (reported["skipped"], reported["resources"]) == (1, 0)
    assert reported["phase"] == "NoMonitoredResources"
    assert reported["details"][f"{PROD}/a"] == {
        "phase": "Skipped",
        "message": "ES cluster is in deprecated version 7.17.3",
    }
    assert await policy_objects(cluster) == set()


async def test_a_config_map_config_ref_is_the_agent_config(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(
        CONFIGMAPS,
        {
            "metadata": {"namespace": OPERATOR_NAMESPACE, "name": "agent-config"},
            "data": {"autoops_es.yml": "interval: 45s\n"},
        },
        namespace=OPERATOR_NAMESPACE,
    )
    await cluster.raw.create(
        POLICY, policy(configRef={"configMapName": "agent-config"}), namespace=OPERATOR_NAMESPACE
    )
    await reconcile(cluster, FakeFactory(fake_es))
    config_map = await cluster.raw.get(
        CONFIGMAPS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.config_map
    )
    assert "interval: 45s" in config_map["data"]["autoops_es.yml"]
    assert "verification_mode: none" in config_map["data"]["autoops_es.yml"]


async def test_a_deleted_cluster_loses_its_agent_without_a_call(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a")
    await cluster.raw.create(POLICY, policy(), namespace=OPERATOR_NAMESPACE)
    activities = family(cluster, FakeFactory(fake_es))
    await reconcile_with(activities)
    assert len(await policy_objects(cluster)) == 3
    calls = len(fake_es.calls)
    await cluster.raw.delete(ES, namespace=PROD, name="a")
    await release(activities, (await reconcile_with(activities)).release_now)
    assert await policy_objects(cluster) == set()
    # Its keys lived in the cluster: there is no one to ask.
    assert len(fake_es.calls) == calls


async def test_the_policy_labels_and_annotations_reach_its_config_and_secrets(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await make_cluster(cluster, "a", tls=True)
    labelled = policy()
    labelled["metadata"]["labels"] = {"team": "ops"}
    labelled["metadata"]["annotations"] = {"owner": "search-team"}
    await cluster.raw.create(POLICY, labelled, namespace=OPERATOR_NAMESPACE)
    await reconcile(cluster, FakeFactory(fake_es))
    # As ECK: labels on the ConfigMap and CA Secret, annotations on those and the API-key Secret.
    for kind, name in ((CONFIGMAPS, NAMES_A.config_map), (SECRETS, NAMES_A.ca_secret)):
        meta = (await cluster.raw.get(kind, namespace=OPERATOR_NAMESPACE, name=name))["metadata"]
        assert meta["labels"]["team"] == "ops"
        assert meta["labels"]["eck.k8s.elastic.co/watched"] == "true"
        assert meta["annotations"]["owner"] == "search-team"
    key_secret = await cluster.raw.get(
        SECRETS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.api_key_secret
    )
    assert "team" not in key_secret["metadata"]["labels"]
    assert key_secret["metadata"]["annotations"]["owner"] == "search-team"
    deployment = await cluster.raw.get(
        DEPLOYMENTS, namespace=OPERATOR_NAMESPACE, name=NAMES_A.deployment
    )
    assert "team" not in deployment["metadata"]["labels"]
