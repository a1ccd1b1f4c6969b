"""The ElasticsearchAutoscaler activities against kubesim and the fake Elasticsearch: the declared
policies put into the cluster, a capacity answer growing the node set as ECK computes it (the
node set's ``resources``, limits at the requests times ``requestsToLimitsRatio``), a maximum
reached (``Limited``, ``HorizontalScalingLimitReached``, ECK's Warning on the Elasticsearch),
nothing rewritten when the node sets already match, a policy without node set and an invalid
policy refused with ECK's messages (``Healthy`` false, nothing asked or written), a cluster that cannot be asked
given ECK's offline resources, a policy's ``lastModificationTime`` kept while its resources
stay, and the unlicensed notice (ECK's ``InvalidLicense`` event, inactive conditions) recorded
by the license gate."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from temporalio.testing import ActivityEnvironment

from activities import generic
from activities.errors import InvalidSpecError, translated_errors
from kubesim.testing import KubeSim
from stackflow.api.kinds import kind_info
from stackflow.models.engine import (
    LicenseWaitNoticeInput,
    Phase,
    ReconcileResult,
    ResourceRef,
)
from stackflow.models.kinds import EVENTS, SECRETS, STATEFULSETS
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration import families
from tests.integration.controller_context import (
    Clock,
    Cluster,
    FakeFactory,
    cluster,
    fake_es,
    serve_crds,
    startup,
)

__all__ = ["cluster", "fake_es"]

NAMESPACE = "team-a"
AUTOSCALER = kind_info("ElasticsearchAutoscaler").resource
ES = kind_info("Elasticsearch").resource
GI = 2**30


@pytest.fixture(autouse=True)
async def crds(cluster: Cluster, kubesim: KubeSim, ka_client: client.ApiClient) -> None:
    await serve_crds(kubesim, ka_client, "ElasticsearchAutoscaler")
    await cluster.create_namespace(NAMESPACE)


def elasticsearch() -> dict[str, Any]:
    """A cluster with a master node set and a data node set (the one the policy scales)."""
    return {
        "apiVersion": ES.api_version,
        "kind": "Elasticsearch",
        "metadata": {"namespace": NAMESPACE, "name": "prod"},
        "spec": {
            "version": "9.1.0",
            "nodeSets": [
                {"name": "master", "count": 1, "config": {"node.roles": ["master"]}},
                {
                    "name": "data",
                    "count": 1,
                    "config": {"node.roles": ["data", "ingest"]},
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "elasticsearch-data"},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    ],
                },
            ],
        },
    }


def data_policy(**resources: Any) -> dict[str, Any]:
    return {
        "name": "data-tier",
        "roles": ["ingest", "data"],
        "deciders": {"proactive_storage": {"forecast_window": "5m"}},
        "resources": {
            "nodeCount": {"min": 1, "max": 4},
            "memory": {"min": "2Gi", "max": "8Gi"},
            "storage": {"min": "1Gi", "max": "20Gi"},
            **resources,
        },
    }


def autoscaler(*policies: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": AUTOSCALER.api_version,
        "kind": "ElasticsearchAutoscaler",
        "metadata": {"namespace": NAMESPACE, "name": "esa"},
        "spec": {"elasticsearchRef": {"name": "prod"}, "policies": list(policies)},
    }


def ref() -> ResourceRef:
    return ResourceRef.of("elasticsearchautoscaler", AUTOSCALER, namespace=NAMESPACE, name="esa")


def capacity(
    *, node_memory: int, total_memory: int, node_storage: int, total_storage: int
) -> dict[str, Any]:
    """One policy's entry of ``_autoscaling/capacity``, shaped as Elasticsearch answers."""
    return {
        "required_capacity": {
            "node": {"memory": node_memory, "storage": node_storage},
            "total": {"memory": total_memory, "storage": total_storage},
        },
        "current_capacity": {
            "node": {"memory": 2 * GI, "storage": GI},
            "total": {"memory": 2 * GI, "storage": GI},
        },
        "current_nodes": [{"name": "prod-es-data-0"}],
        "deciders": {},
    }


async def with_internal_user(cluster: Cluster) -> None:
    """The operator's internal user Secret: what makes the cluster dialable."""
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {"namespace": NAMESPACE, "name": "prod-es-internal-users"},
            "data": {"elastic-internal": base64.b64encode(b"secret").decode()},
        },
        namespace=NAMESPACE,
    )


async def reconcile(cluster: Cluster, **kwargs: Any) -> ReconcileResult:
    context = cluster.context(**kwargs)
    request = startup(ref())
    return await ActivityEnvironment().run(translated_errors(families.reconcile), context, request)


async def node_set(cluster: Cluster, name: str = "data") -> dict[str, Any]:
    es = await cluster.raw.get(ES, namespace=NAMESPACE, name="prod")
    return next(n for n in es["spec"]["nodeSets"] if n["name"] == name)


async def status(cluster: Cluster) -> dict[str, Any]:
    obj = await cluster.raw.get(AUTOSCALER, namespace=NAMESPACE, name="esa")
    return dict(obj.get("status") or {})


def conditions_of(got: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in got.get("conditions") or []}


async def test_a_capacity_answer_grows_the_data_node_set_within_bounds(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await with_internal_user(cluster)
    # A memory requestsToLimitsRatio of 2: the limit is twice the request.
    policy = data_policy(memory={"min": "2Gi", "max": "8Gi", "requestsToLimitsRatio": "2"})
    await cluster.raw.create(AUTOSCALER, autoscaler(policy), namespace=NAMESPACE)
    fake_es.state.autoscaling_policies["stale"] = {"roles": ["ml"], "deciders": {}}
    fake_es.state.autoscaling_capacity["data-tier"] = capacity(
        node_memory=4 * GI, total_memory=12 * GI, node_storage=5 * GI, total_storage=15 * GI
    )
    clock = Clock(datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC))

    result = await reconcile(cluster, elasticsearch=FakeFactory(fake_es), clock=clock)

    # ECK's ML settings are put (no ml policy: none), then the declared policy, with its roles
    # and deciders; the stale one is gone.
    assert fake_es.state.persistent_settings["xpack.ml.max_lazy_ml_nodes"] == 0
    assert fake_es.state.persistent_settings["xpack.ml.use_auto_machine_memory_percent"] is True
    assert fake_es.state.autoscaling_policies == {
        "data-tier": {
            "roles": ["data", "ingest"],
            "deciders": {"proactive_storage": {"forecast_window": "5m"}},
        }
    }
    data = await node_set(cluster)
    # Memory: 12Gi in total over at least one node, capped at 8Gi per node: two nodes. Storage:
    # 15Gi at 95% usable, rounded up to 16Gi, fits one node.
    assert data["count"] == 2
    assert data["resources"] == {"requests": {"memory": "8Gi"}, "limits": {"memory": "16Gi"}}
    claim = data["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == "16Gi"
    # The node set without a policy is left alone.
    assert await node_set(cluster, "master") == elasticsearch()["spec"]["nodeSets"][0]
    got = await status(cluster)
    assert conditions_of(got) == {
        "Active": "True",
        "Healthy": "True",
        "Limited": "False",
        "Online": "True",
    }
    assert [c["type"] for c in got["conditions"]] == ["Limited", "Healthy", "Active", "Online"]
    assert got["observedGeneration"] == 1
    assert got["policies"] == [
        {
            "name": "data-tier",
            "nodeSets": [{"name": "data", "nodeCount": 2}],
            "resources": {
                "requests": {"memory": "8Gi", "storage": "16Gi"},
                "limits": {"memory": "16Gi"},
            },
            "state": [],
            "lastModificationTime": "2026-03-01T12:00:00Z",
        }
    ]
    assert result.phase is Phase.READY
    assert result.requeue_after_seconds == 60.0

    # The same answer again, an hour later: the cluster is not written a second time and the
    # policy's lastModificationTime stays that of the change.
    clock.now += timedelta(hours=1)
    es_before = await cluster.raw.get(ES, namespace=NAMESPACE, name="prod")
    await reconcile(cluster, elasticsearch=FakeFactory(fake_es), clock=clock)
    es_after = await cluster.raw.get(ES, namespace=NAMESPACE, name="prod")
    assert es_after["metadata"]["resourceVersion"] == es_before["metadata"]["resourceVersion"]
    policies = (await status(cluster))["policies"]
    assert policies[0]["lastModificationTime"] == "2026-03-01T12:00:00Z"

    # More storage required: the policy's resources change, and so does its time.
    fake_es.state.autoscaling_capacity["data-tier"] = capacity(
        node_memory=4 * GI, total_memory=12 * GI, node_storage=6 * GI, total_storage=30 * GI
    )
    await reconcile(cluster, elasticsearch=FakeFactory(fake_es), clock=clock)
    policies = (await status(cluster))["policies"]
    assert policies[0]["resources"]["requests"]["storage"] == "20Gi"
    assert policies[0]["lastModificationTime"] == "2026-03-01T13:00:00Z"


async def test_a_maximum_reached_is_reported_limited(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await with_internal_user(cluster)
    manifest = autoscaler(data_policy())
    manifest["spec"]["pollingPeriod"] = "30s"
    await cluster.raw.create(AUTOSCALER, manifest, namespace=NAMESPACE)
    fake_es.state.autoscaling_capacity["data-tier"] = capacity(
        node_memory=4 * GI, total_memory=40 * GI, node_storage=GI, total_storage=GI
    )

    result = await reconcile(cluster, elasticsearch=FakeFactory(fake_es))

    # Ten nodes required, four allowed.
    assert (await node_set(cluster))["count"] == 4
    got = await status(cluster)
    assert conditions_of(got)["Limited"] == "True"
    states = {state["type"] for state in got["policies"][0]["state"]}
    assert states == {"HorizontalScalingLimitReached"}
    limited = next(c for c in got["conditions"] if c["type"] == "Limited")
    assert limited["message"] == "Limit reached for policies data-tier"
    assert result.requeue_after_seconds == 30.0
    events = (await cluster.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert [
        (e["type"], e["reason"], e["action"], e["involvedObject"]["kind"], e["message"])
        for e in events
    ] == [
        (
            "Warning",
            "HorizontalScalingLimitReached",
            "AutoscalingOnlineReconciliation",
            "Elasticsearch",
            f"Can't provide total required memory {40 * GI}, max number of nodes is 4, "
            "requires 5 nodes",
        )
    ]


async def test_a_policy_matching_no_node_set_makes_the_autoscaler_unhealthy(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await with_internal_user(cluster)
    ml = {"name": "ml", "roles": ["ml"], "resources": {"nodeCount": {"min": 1, "max": 2}}}
    await cluster.raw.create(AUTOSCALER, autoscaler(data_policy(), ml), namespace=NAMESPACE)

    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    request = startup(ref())
    with pytest.raises(InvalidSpecError) as raised:
        await families.reconcile(context, request)

    # As ECK's validation against the cluster: unhealthy, the cluster neither asked nor written.
    message = (
        'spec.policies[1].roles: Invalid value: []string{"ml"}: roles must be used in at '
        "least one nodeSet"
    )
    assert str(raised.value) == message
    by_type = {c["type"]: c for c in (await status(cluster))["conditions"]}
    assert (by_type["Healthy"]["status"], by_type["Healthy"]["message"]) == ("False", message)
    assert (by_type["Active"]["status"], by_type["Active"]["message"]) == (
        "True",
        "Autoscaler is unhealthy",
    )
    assert by_type["Online"]["status"] == "False"
    assert fake_es.calls == []
    assert await node_set(cluster) == elasticsearch()["spec"]["nodeSets"][1]


async def test_an_invalid_policy_is_refused_and_nothing_is_scaled(
    cluster: Cluster, fake_es: FakeElasticsearch
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await with_internal_user(cluster)
    invalid = data_policy(nodeCount={"min": 5, "max": 2})
    await cluster.raw.create(AUTOSCALER, autoscaler(invalid), namespace=NAMESPACE)

    request = startup(ref())
    context = cluster.context(elasticsearch=FakeFactory(fake_es))
    with pytest.raises(InvalidSpecError) as raised:
        await families.reconcile(context, request)

    assert str(raised.value) == (
        "spec.policies[0].resources.nodeCount.max: Invalid value: 2: max node count must be an "
        "integer greater or equal than the min node count"
    )
    assert fake_es.calls == []
    assert (await node_set(cluster))["count"] == 1
    healthy = next(c for c in (await status(cluster))["conditions"] if c["type"] == "Healthy")
    assert (healthy["status"], healthy["message"]) == ("False", str(raised.value))


async def test_a_cluster_that_cannot_be_asked_gets_the_offline_resources(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await cluster.raw.create(AUTOSCALER, autoscaler(data_policy()), namespace=NAMESPACE)

    # No internal user yet: the operator has no way to ask the cluster. As ECK, the node sets
    # get the offline resources: without a status, the minimums.
    result = await reconcile(cluster)

    data = await node_set(cluster)
    assert data["count"] == 1
    assert data["resources"] == {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    got = await status(cluster)
    online = next(c for c in got["conditions"] if c["type"] == "Online")
    assert (online["status"], online["message"]) == ("False", "Elasticsearch is not available")
    assert got["policies"][0]["nodeSets"] == [{"name": "data", "nodeCount": 1}]
    assert result.requeue_after_seconds == 60.0

    await with_internal_user(cluster)
    # Outside a Pod the cluster's Service is not dialled (the default test factory never
    # answers): the status' resources are kept.
    await reconcile(cluster)
    assert await node_set(cluster) == data
    assert conditions_of(await status(cluster))["Online"] == "False"


async def test_unlicensed_the_gate_records_ecks_notice_and_inactive(cluster: Cluster) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await cluster.raw.create(AUTOSCALER, autoscaler(data_policy()), namespace=NAMESPACE)
    context = cluster.context()
    notice = LicenseWaitNoticeInput(ref=ref(), message="no license")

    result = await ActivityEnvironment().run(generic.license_wait_notice, context, notice)

    assert result.events == 1
    events = (await cluster.raw.list(EVENTS, namespace=NAMESPACE))["items"]
    assert [
        (e["type"], e["reason"], e["action"], e["message"], e["involvedObject"]["kind"])
        for e in events
    ] == [
        (
            "Warning",
            "InvalidLicense",
            "LicenseCheck",
            "Autoscaling is an enterprise feature. Enterprise features are disabled",
            "ElasticsearchAutoscaler",
        )
    ]
    got = await status(cluster)
    assert conditions_of(got) == {
        "Active": "False",
        "Healthy": "Unknown",
        "Online": "False",
        "Limited": "Unknown",
    }
    active = next(c for c in got["conditions"] if c["type"] == "Active")
    assert active["message"] == (
        "Autoscaling is an enterprise feature. Enterprise features are disabled"
    )
    assert await node_set(cluster) == elasticsearch()["spec"]["nodeSets"][1]


async def test_a_policy_new_to_the_status_starts_from_the_running_statefulsets(
    cluster: Cluster,
) -> None:
    await cluster.raw.create(ES, elasticsearch(), namespace=NAMESPACE)
    await cluster.raw.create(
        STATEFULSETS,
        {
            "metadata": {"namespace": NAMESPACE, "name": "prod-es-data"},
            "spec": {
                "replicas": 3,
                "serviceName": "prod-es-data",
                "selector": {"matchLabels": {"app": "data"}},
                "template": {
                    "metadata": {"labels": {"app": "data"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "elasticsearch",
                                "image": "es",
                                "resources": {"requests": {"memory": "4Gi"}},
                            }
                        ]
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "elasticsearch-data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}},
                        },
                    }
                ],
            },
        },
        namespace=NAMESPACE,
    )
    await cluster.raw.create(AUTOSCALER, autoscaler(data_policy()), namespace=NAMESPACE)

    # Offline (no internal user): as ECK, the resources imported from the StatefulSet are kept
    # rather than the policy's minimums.
    await reconcile(cluster)

    data = await node_set(cluster)
    assert data["count"] == 3
    assert data["resources"]["requests"] == {"memory": "4Gi"}
    assert data["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi"
