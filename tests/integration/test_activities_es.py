"""The Elasticsearch controller's activities against kubesim and the fake Elasticsearch server."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import generic
from activities.cluster_license_api import TRIAL_STARTED_ANNOTATION
from activities.context import ControllerContext
from activities.registry import build_activities
from stackflow.controllers.elasticsearch import ELASTICSEARCH, ELASTICSEARCH_CONTROLLER
from stackflow.models.engine import (
    ACT_FLIP_TARGETS,
    FinalizeInput,
    FlipDirectionName,
    FlipTargetsInput,
    InvalidSpecNoticeInput,
    Phase,
    ReconcileResult,
    ScopeCheckInput,
)
from stackflow.models.kinds import EVENTS, SECRETS, SERVICES, STATEFULSETS
from stackflow.stack.policies.stack_config.file_settings import empty_state
from stackflow.stack.policies.stack_config.merge import ElasticsearchMerge
from stackflow.stack.policies.stack_config.secrets import (
    es_policy_config_secret,
    es_secret_mount_copy_name,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import families
from tests.integration.controller_context import (
    SELECTOR,
    Cluster,
    FakeFactory,
    cluster,
    eventually,
    fake_es,
)
from tests.integration.elasticsearch_setup import NAMESPACE, es_manifest, es_ref, run_reconcile

__all__ = ["cluster", "fake_es"]


def test_es_ref_is_the_controller_tables_ref() -> None:
    assert ELASTICSEARCH_CONTROLLER.ref(namespace=NAMESPACE, name="quickstart") == es_ref()
    assert es_ref().resource == ELASTICSEARCH


async def resource_versions(cluster: Cluster, namespace: str) -> dict[tuple[str, str], str]:
    versions: dict[tuple[str, str], str] = {}
    for resource in (SECRETS, STATEFULSETS, SERVICES):
        for item in (await cluster.raw.list(resource, namespace=namespace))["items"]:
            versions[(resource.kind, item["metadata"]["name"])] = item["metadata"][
                "resourceVersion"
            ]
    es = await cluster.raw.get(ELASTICSEARCH, namespace=namespace, name="quickstart")
    versions[("Elasticsearch", "quickstart")] = es["metadata"]["resourceVersion"]
    return versions


async def test_reconcile_creates_children_then_reports_green_and_writes_nothing_more(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    factory = FakeFactory(fake_es)
    context = cluster.context(elasticsearch=factory)
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest())
    ref = es_ref()

    first = await run_reconcile(context, ref)

    assert "objects written" in first.message
    secrets = {
        s["metadata"]["name"]
        for s in (await cluster.raw.list(SECRETS, namespace=NAMESPACE))["items"]
    }
    assert {
        "quickstart-es-elastic-user",
        "quickstart-es-internal-users",
        "quickstart-es-http-certs-internal",
        "quickstart-es-default-es-config",
    } <= secrets
    sts = await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="quickstart-es-default")
    assert sts["spec"]["replicas"] == 2
    assert sts["metadata"]["ownerReferences"][0]["kind"] == "Elasticsearch"

    results: list[ReconcileResult] = []

    async def reconciled_ready() -> bool:
        # kubesim's StatefulSet controller makes the pods Ready; the reconcile then sees green.
        await cluster.kubesim.settle()
        results.append(await run_reconcile(context, ref))
        return results[-1].phase is Phase.READY

    await eventually(reconciled_ready)
    second = results[-1]

    assert second.requeue_after_seconds is None
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    assert es["status"]["health"] == "green"
    assert es["status"]["phase"] == "Ready"
    assert es["status"]["availableNodes"] == 2
    assert factory.endpoints[-1].username == "elastic-internal"
    assert factory.endpoints[-1].url == "https://quickstart-es-internal-http.team-a.svc:9200"
    assert fake_es.calls_to("GET", "/_cluster/health")
    # Observing the cluster's health holds nothing in the operator: no compensation to record.
    assert second.acquired == ()

    before = await resource_versions(cluster, NAMESPACE)
    third = await run_reconcile(context, ref)
    assert third.phase is Phase.READY
    assert await resource_versions(cluster, NAMESPACE) == before


async def test_unreachable_cluster_is_retried_not_failed(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    fake_es.state.unavailable = True
    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest(count=1))
    await run_reconcile(context, es_ref())
    await cluster.kubesim.settle()

    result = await run_reconcile(context, es_ref())

    assert result.phase is Phase.RECONCILING
    assert result.requeue_after_seconds is not None
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    reachable = [c for c in es["status"]["conditions"] if c["type"] == "ElasticsearchIsReachable"]
    assert reachable[0]["status"] == "False"


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            {"version": "not-a-version", "nodeSets": [{"name": "default", "count": 1}]},
            id="bad-version",
        ),
        pytest.param(
            {"version": "6.8.0", "nodeSets": [{"name": "default", "count": 1}]},
            id="unsupported-version",
        ),
        pytest.param(
            {
                "version": "8.15.0",
                "nodeSets": [{"name": "a", "count": 1}, {"name": "a", "count": 1}],
            },
            id="duplicate-node-sets",
        ),
    ],
)
async def test_invalid_spec_is_a_non_retryable_invalid_spec_error(
    cluster: Cluster, spec: dict[str, Any]
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
    assert not (await cluster.raw.list(STATEFULSETS, namespace=NAMESPACE))["items"]

    notice = await ActivityEnvironment().run(
        generic.invalid_spec_notice,
        context,
        InvalidSpecNoticeInput(ref=es_ref(), message=raised.value.message),
    )
    assert notice.recorded is True
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    assert es["status"]["phase"] == "Invalid"
    events = (await cluster.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "Validation")]


async def test_finalize_deletes_soft_owned_secrets(cluster: Cluster) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest(count=1))
    await run_reconcile(context, es_ref())
    await cluster.raw.delete(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")

    result = await ActivityEnvironment().run(
        families.finalize, context, FinalizeInput(ref=es_ref())
    )

    assert "Secret team-a/quickstart-es-elastic-user" in result.deleted
    secrets = {
        s["metadata"]["name"]
        for s in (await cluster.raw.list(SECRETS, namespace=NAMESPACE))["items"]
    }
    assert "quickstart-es-elastic-user" not in secrets


@pytest.mark.parametrize(
    ("selector", "labels", "in_scope", "license_required"),
    [
        pytest.param(SELECTOR, {}, False, True, id="dynamic-unlabelled"),
        pytest.param(SELECTOR, {"eck": "on"}, True, True, id="dynamic-labelled"),
        pytest.param(None, {}, True, False, id="selector-off"),
    ],
)
async def test_scope_check(
    cluster: Cluster,
    selector: dict[str, Any] | None,
    labels: dict[str, str],
    in_scope: bool,
    license_required: bool,
) -> None:
    context = cluster.context(selector=selector)
    await cluster.create_namespace(NAMESPACE, labels)
    await cluster.raw.create(ELASTICSEARCH, es_manifest())

    result = await ActivityEnvironment().run(
        generic.scope_check, context, ScopeCheckInput(ref=es_ref())
    )

    assert (result.exists, result.in_scope, result.license_required) == (
        True,
        in_scope,
        license_required,
    )


async def test_scope_check_reports_a_deleted_resource_as_gone(cluster: Cluster) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(NAMESPACE)

    result = await ActivityEnvironment().run(
        generic.scope_check, context, ScopeCheckInput(ref=es_ref())
    )

    assert result.exists is False


async def test_flip_targets_reach_objects_of_a_namespace_out_of_scope(cluster: Cluster) -> None:
    context = cluster.context(selector=SELECTOR)
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest())
    await cluster.raw.create(ELASTICSEARCH, es_manifest("second"))

    result = await ActivityEnvironment().run(
        build_activities(context)[ACT_FLIP_TARGETS],
        FlipTargetsInput(
            controller="elasticsearch",
            namespace=NAMESPACE,
            direction=FlipDirectionName.OUT_OF_SCOPE,
        ),
    )

    assert result.refs == (es_ref(), es_ref("second"))


# --- association users and the per-cluster license ---------------------------------------------


def encoded(data: dict[str, str]) -> dict[str, str]:
    return {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}


def decoded_secret(secret: dict[str, Any]) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


def association_user_secret(name: str = "team-a-kb-kibana-user") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {
                "common.k8s.elastic.co/type": "user",
                "elasticsearch.k8s.elastic.co/cluster-name": "quickstart",
                "elasticsearch.k8s.elastic.co/cluster-namespace": NAMESPACE,
            },
        },
        "data": encoded(
            {"name": name, "passwordHash": "$2a$10$abcdefgh", "userRoles": "kibana_system"}
        ),
    }


async def license_secret_for(cluster: Cluster, license_: dict[str, Any]) -> dict[str, Any]:
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "quickstart-es-license",
            "namespace": NAMESPACE,
            "labels": {
                "common.k8s.elastic.co/type": "license",
                "license.k8s.elastic.co/scope": "elasticsearch",
                "license.k8s.elastic.co/type": str(license_["type"]),
            },
            "ownerReferences": [
                {
                    "apiVersion": "elasticsearch.k8s.elastic.co/v1",
                    "kind": "Elasticsearch",
                    "name": "quickstart",
                    "uid": es["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "data": encoded({"license": json.dumps(license_)}),
    }


async def file_realm(cluster: Cluster) -> dict[str, str]:
    secret = await cluster.raw.get(
        SECRETS, namespace=NAMESPACE, name="quickstart-es-xpack-file-realm"
    )
    return decoded_secret(secret)


async def ready_cluster(cluster: Cluster, context: ControllerContext) -> ReconcileResult:
    """Create the cluster and reconcile until kubesim's pods are ready and ES answers."""
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest(count=1))
    results: list[ReconcileResult] = []

    async def reconciled_ready() -> bool:
        results.append(await run_reconcile(context, es_ref()))
        await cluster.kubesim.settle()
        return results[-1].phase is Phase.READY

    await eventually(reconciled_ready)
    return results[-1]


async def test_association_user_secret_joins_and_leaves_the_file_realm(cluster: Cluster) -> None:
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest(count=1))
    await run_reconcile(context, es_ref())
    assert "team-a-kb-kibana-user:" not in (await file_realm(cluster))["users"]

    await cluster.raw.create(SECRETS, association_user_secret())
    await run_reconcile(context, es_ref())

    realm = await file_realm(cluster)
    assert "team-a-kb-kibana-user:$2a$10$abcdefgh\n" in realm["users"]
    assert "kibana_system:team-a-kb-kibana-user\n" in realm["users_roles"]
    assert realm["service_tokens"] == ""

    await cluster.raw.delete(SECRETS, namespace=NAMESPACE, name="team-a-kb-kibana-user")
    await run_reconcile(context, es_ref())

    realm = await file_realm(cluster)
    assert "team-a-kb-kibana-user" not in realm["users"]
    assert "kibana_system" not in realm["users_roles"]


async def test_cluster_license_is_put_once(cluster: Cluster, fake_es: FakeElasticsearch) -> None:
    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    await ready_cluster(cluster, context)
    assert fake_es.calls_to("PUT", "/_license") == []
    platinum = {"uid": "platinum-1", "type": "platinum", "signature": "sig"}
    await cluster.raw.create(SECRETS, await license_secret_for(cluster, platinum))

    first = await run_reconcile(context, es_ref())
    second = await run_reconcile(context, es_ref())

    puts = fake_es.calls_to("PUT", "/_license")
    assert [call.body for call in puts] == [{"licenses": [platinum]}]
    assert fake_es.state.license["uid"] == "platinum-1"
    assert "applying the platinum license" in first.message
    assert "already applied" in second.message
    assert second.phase is Phase.READY


async def test_trial_license_starts_the_self_generated_trial_only_once(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    await ready_cluster(cluster, context)
    await cluster.raw.create(SECRETS, await license_secret_for(cluster, {"type": "trial"}))

    await run_reconcile(context, es_ref())

    assert len(fake_es.calls_to("POST", "/_license/start_trial")) == 1
    assert fake_es.state.license["type"] == "trial"
    es = await cluster.raw.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart")
    assert es["metadata"]["annotations"][TRIAL_STARTED_ANNOTATION] == "true"

    # The trial ended (ES fell back to basic): the operator must not ask for another one.
    fake_es.state.license = {"uid": "basic-uid", "type": "basic", "status": "active"}
    result = await run_reconcile(context, es_ref())

    assert len(fake_es.calls_to("POST", "/_license/start_trial")) == 1
    assert fake_es.calls_to("PUT", "/_license") == []
    assert result.phase is Phase.READY


async def test_license_waits_for_an_unreachable_cluster(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    await ready_cluster(cluster, context)
    platinum = {"uid": "platinum-1", "type": "platinum", "signature": "sig"}
    await cluster.raw.create(SECRETS, await license_secret_for(cluster, platinum))
    fake_es.state.unavailable = True

    waiting = await run_reconcile(context, es_ref())

    assert waiting.phase is Phase.RECONCILING
    assert waiting.requeue_after_seconds is not None
    assert "license pending" in waiting.message
    assert fake_es.calls_to("PUT", "/_license") == []

    fake_es.state.unavailable = False
    await run_reconcile(context, es_ref())

    assert len(fake_es.calls_to("PUT", "/_license")) == 1


async def test_policy_config_secret_is_read_and_left_as_the_policy_wrote_it(
    cluster: Cluster,
) -> None:
    """The cluster renders ``<es>-es-policy-config`` (the StackConfigPolicy controller's) into its
    ``elasticsearch.yml`` and StatefulSet, and never rewrites that Secret."""
    merged = ElasticsearchMerge(
        state=empty_state(),
        config={"node.attr.zone": "policy"},
        secret_mounts=({"secretName": "gcs-creds", "mountPath": "/usr/share/gcs"},),
        secure_settings=(),
        owners=("elastic-system/policy",),
    )
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest(count=1))
    policy_secret = es_policy_config_secret(
        None, namespace=NAMESPACE, es_name="quickstart", merged=merged
    )
    created = await cluster.raw.create(SECRETS, policy_secret, namespace=NAMESPACE)

    await run_reconcile(cluster.context(), es_ref())

    config = await cluster.raw.get(
        SECRETS, namespace=NAMESPACE, name="quickstart-es-default-es-config"
    )
    rendered = yaml.safe_load(base64.b64decode(config["data"]["elasticsearch.yml"]))
    assert rendered["node.attr.zone"] == "policy"
    sts = await cluster.raw.get(STATEFULSETS, namespace=NAMESPACE, name="quickstart-es-default")
    volumes = sts["spec"]["template"]["spec"]["volumes"]
    copy_name = es_secret_mount_copy_name("quickstart", "gcs-creds")
    assert any((v.get("secret") or {}).get("secretName") == copy_name for v in volumes)
    after = await cluster.raw.get(SECRETS, namespace=NAMESPACE, name="quickstart-es-policy-config")
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_the_reconcile_lists_only_some_children_from_the_watch_cache(
    cluster: Cluster,
) -> None:
    """A consistent list can wait up to 100 ms for the API server's watch cache to catch up; the
    children whose writes are guarded by their resourceVersion and that no decision deletes by
    are listed from that cache; the Secrets (passwords, keys and certificates the build keeps),
    the StatefulSets and the Pods (the node-spec decisions' input) consistently."""
    context = cluster.context()
    await cluster.create_namespace(NAMESPACE)
    await cluster.raw.create(ELASTICSEARCH, es_manifest())
    cluster.kubesim.server.request_log.clear()

    await run_reconcile(context, es_ref())

    selector = "elasticsearch.k8s.elastic.co/cluster-name=quickstart"
    first_listings: dict[str, str | None] = {}
    for record in cluster.kubesim.server.request_log:
        if record.method == "GET" and record.query.get("labelSelector") == selector:
            kind = record.path.rsplit("/", 1)[-1]
            first_listings.setdefault(kind, record.query.get("resourceVersion"))
    # After its writes it lists again, consistently, to report what it wrote.
    assert first_listings == {
        "secrets": None,
        "configmaps": "0",
        "services": "0",
        "statefulsets": None,
        "pods": None,
        "poddisruptionbudgets": "0",
        "persistentvolumeclaims": None,
    }
