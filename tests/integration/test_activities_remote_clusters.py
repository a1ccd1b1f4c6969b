"""The remote-cluster activities against kubesim and the fake Elasticsearch: seeds and the managed
annotation, the CA exchange both ways and the bundle's inputs, cross-cluster API keys, clean-up when
a relationship goes, a peer's namespace flipping out and back, the license wait, the finalizer and
the flip mapper.

Every cluster is dialled at the one fake server (as the ``elasticsearch-url`` key does), so its
state holds every cluster's settings and keys; the names say whose they are.
"""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities.license_wait_condition import CONDITION_TYPE, license_condition
from activities.remoteclusters import RemoteClusterActivities, peer_compensation
from stackflow.controllers.remoteclusters import REMOTE_CLUSTER_CONTROLLER
from stackflow.licensing.issue import public_key_pem
from stackflow.models.engine import FinalizeInput, Phase
from stackflow.models.kinds import EVENTS, NAMESPACES, SECRETS
from stackflow.models.license_condition import LicenseConditionChange, LicenseConditionInput
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import (
    SELECTOR,
    Cluster,
    FakeFactory,
    any_user_es,
    cluster,
)
from tests.integration.remote_cluster_setup import (
    ACCESS,
    ES,
    NS_A,
    NS_B,
    active_key_ids,
    copies,
    create_cluster,
    install_license,
    peers,
    pem,
    reconcile,
    secret_or_none,
    signing_key,
    stored_credentials,
    to_b,
)
from tests.polling import eventually

__all__ = ["any_user_es", "cluster", "peers", "signing_key"]

pytestmark = pytest.mark.usefixtures("peers")


async def test_seeds_trust_and_keys_then_all_removed_with_the_relationship(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")

    result = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")

    assert result.phase is Phase.READY, result.message
    assert any_user_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-remote-cluster.team-b.svc:9443"]
    }
    es = await cluster.raw.get(ES, namespace=NS_A, name="a")
    assert es["metadata"]["annotations"][
        "elasticsearch.k8s.elastic.co/managed-remote-clusters"
    ] == ("to-b")
    assert await copies(cluster) == {
        "a-team-b-b-es-remote-ca": pem("CA-b"),
        "b-team-a-a-es-remote-ca": pem("CA-a"),
    }
    copy = await cluster.raw.get(SECRETS, namespace=NS_B, name="b-team-a-a-es-remote-ca")
    assert copy["metadata"]["labels"] == {
        "common.k8s.elastic.co/type": "remote-ca",
        "elasticsearch.k8s.elastic.co/cluster-name": "b",
        "elasticsearch.k8s.elastic.co/remote-cluster-name": "a",
        "elasticsearch.k8s.elastic.co/remote-cluster-namespace": NS_A,
    }
    assert [owner["name"] for owner in copy["metadata"]["ownerReferences"]] == ["b"]
    [key_id] = active_key_ids(any_user_es)
    key = any_user_es.state.api_keys[key_id]
    assert (key["name"], key["access"]) == ("eck-team-a-a-to-b", ACCESS)
    assert key["metadata"]["elasticsearch.k8s.elastic.co/managed-by"] == "eck"
    credentials = await stored_credentials(cluster)
    assert credentials == {
        "cluster.remote.to-b.credentials": base64.b64encode(
            f"{key_id}:secret-{key_id}".encode()
        ).decode()
    }

    # The server's own reconcile finds everything in line: the key is neither made nor remade.
    again = await reconcile(cluster, any_user_es, signing_key, NS_B, "b")
    assert again.phase is Phase.READY, again.message
    assert active_key_ids(any_user_es) == [key_id]

    # The remote removed from the spec: seeds set to null, trust and keys removed both ways.
    await cluster.raw.merge_patch(ES, {"spec": {"remoteClusters": None}}, namespace=NS_A, name="a")
    await reconcile(cluster, any_user_es, signing_key, NS_A, "a")

    assert any_user_es.state.persistent_settings == {}
    assert any_user_es.calls_to("PUT", "/_cluster/settings")[-1].body == {
        "persistent": {"cluster.remote.to-b.seeds": None}
    }
    es = await cluster.raw.get(ES, namespace=NS_A, name="a")
    assert "elasticsearch.k8s.elastic.co/managed-remote-clusters" not in (
        es["metadata"].get("annotations") or {}
    )
    assert await copies(cluster) == {}
    assert active_key_ids(any_user_es) == []
    assert await stored_credentials(cluster) == {}


async def test_a_peer_out_of_scope_loses_trust_and_keys_and_gets_them_back(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    paired = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")
    # The pair is held as a compensation of the client's saga.
    assert paired.acquired == (peer_compensation((NS_B, "b")),)
    [first_key] = active_key_ids(any_user_es)

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NS_B
    )
    await eventually(lambda: "eck" not in (cluster.namespaces.namespace_labels(NS_B) or {"eck": 1}))
    out = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")

    # Released by its compensation, a step of its own: both copies go, the one in the
    # out-of-scope namespace by name; the client drops the key.
    assert out.release_now == (peer_compensation((NS_B, "b")),)
    assert await copies(cluster) == {}
    assert await stored_credentials(cluster) == {}
    assert "trust revoked with 1 clusters" in out.message
    # The server is out of scope: it is not dialled, its key waits for its return.
    assert active_key_ids(any_user_es) == [first_key]
    # The seeds follow the client's spec, as ECK: they stay.
    assert any_user_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-remote-cluster.team-b.svc:9443"]
    }

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": "on"}}}, namespace=None, name=NS_B
    )
    await eventually(lambda: (cluster.namespaces.namespace_labels(NS_B) or {}).get("eck") == "on")
    back = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")

    assert back.phase is Phase.READY, back.message
    assert set(await copies(cluster)) == {"a-team-b-b-es-remote-ca", "b-team-a-a-es-remote-ca"}
    # The old key's secret part is gone from the client: it is replaced.
    [second_key] = active_key_ids(any_user_es)
    assert second_key != first_key
    assert any_user_es.state.api_keys[first_key]["invalidated"]
    assert list(await stored_credentials(cluster)) == ["cluster.remote.to-b.credentials"]


async def test_unlicensed_warns_the_client_and_applies_nothing_until_a_license(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await create_cluster(cluster, NS_A, "a", [to_b(api_key=False)])
    await create_cluster(cluster, NS_B, "b")
    await create_cluster(cluster, NS_B, "alone")

    waiting = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")
    server = await reconcile(cluster, any_user_es, signing_key, NS_B, "b")
    alone = await reconcile(cluster, any_user_es, signing_key, NS_B, "alone")

    assert (waiting.phase, server.phase) == (Phase.WAITING_FOR_LICENSE,) * 2
    assert alone.phase is Phase.READY
    events = (await cluster.raw.list(EVENTS, namespace=NS_A))["items"]
    assert [(e["type"], e["reason"], e.get("action"), e["message"]) for e in events] == [
        (
            "Warning",
            "AssociationError",
            "LicenseCheck",
            "Remote cluster is an enterprise feature. Enterprise features are disabled",
        )
    ]
    # Only the cluster declaring remotes is told; nothing was applied.
    assert (await cluster.raw.list(EVENTS, namespace=NS_B))["items"] == []
    assert any_user_es.calls == []
    assert await copies(cluster) == {}

    await install_license(cluster, signing_key)
    licensed = await reconcile(cluster, any_user_es, signing_key, NS_A, "a")

    assert licensed.phase is Phase.READY, licensed.message
    assert any_user_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-transport.team-b.svc:9300"]
    }
    assert set(await copies(cluster)) == {"a-team-b-b-es-remote-ca", "b-team-a-a-es-remote-ca"}


async def test_a_deleted_server_is_finalized_and_the_flip_mapper_finds_both_sides(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    await create_cluster(cluster, NS_B, "unrelated")
    await reconcile(cluster, any_user_es, signing_key, NS_A, "a")
    context = cluster.context(
        selector=SELECTOR,
        public_keys=(public_key_pem(signing_key.public_key()),),
        elasticsearch=FakeFactory(any_user_es, endpoint_users=True),
    )

    activities = RemoteClusterActivities(context, REMOTE_CLUSTER_CONTROLLER)
    flipped = await activities.flip_targets(NS_B, "out")
    assert sorted((e["metadata"]["namespace"], e["metadata"]["name"]) for e in flipped) == [
        (NS_A, "a"),
        (NS_B, "b"),
        (NS_B, "unrelated"),
    ]
    only_a = await activities.flip_targets(NS_A, "out")
    assert sorted((e["metadata"]["namespace"], e["metadata"]["name"]) for e in only_a) == [
        (NS_A, "a"),
        (NS_B, "b"),
    ]

    # The client is deleted: the server's copy of its CA goes, its key in the server too.
    await cluster.raw.delete(ES, namespace=NS_A, name="a")
    await ActivityEnvironment().run(
        activities.finalize,
        FinalizeInput(ref=REMOTE_CLUSTER_CONTROLLER.ref(namespace=NS_A, name="a")),
    )
    assert await secret_or_none(cluster, NS_B, "b-team-a-a-es-remote-ca") is None
    assert active_key_ids(any_user_es) == []


async def test_a_client_out_of_scope_loses_its_key_in_the_server_and_both_copies(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    await reconcile(cluster, any_user_es, signing_key, NS_A, "a")
    [key_id] = active_key_ids(any_user_es)

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NS_A
    )
    await eventually(lambda: "eck" not in (cluster.namespaces.namespace_labels(NS_A) or {"eck": 1}))
    # The flip wakes the server (it is the declared counterpart of a cluster in the namespace).
    result = await reconcile(cluster, any_user_es, signing_key, NS_B, "b")

    assert result.phase is Phase.READY, result.message
    # The server is in scope: the client's key there is invalidated; both copies are deleted.
    assert any_user_es.state.api_keys[key_id]["invalidated"]
    assert await copies(cluster) == {}
    # The client's own Secret sits in the out-of-scope namespace: it is not touched (its key is
    # dead), and replaced once the client is back.
    assert list(await stored_credentials(cluster)) == ["cluster.remote.to-b.credentials"]


async def test_leaving_the_license_wait_keeps_another_controllers_waiting_condition(
    cluster: Cluster, any_user_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await create_cluster(cluster, NS_A, "a")
    waiting = {
        "type": CONDITION_TYPE,
        "status": "False",
        "reason": "WaitingForLicense",
        "message": "the elasticsearch controller waits",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    await cluster.raw.patch_status(
        ES, {"status": {"conditions": [waiting]}}, namespace=NS_A, name="a"
    )
    context = cluster.context(selector=SELECTOR)

    # The remote-cluster workflow leaves its own wait: the condition is the ES controller's.
    result = await ActivityEnvironment().run(
        license_condition,
        context,
        LicenseConditionInput(
            ref=REMOTE_CLUSTER_CONTROLLER.ref(namespace=NS_A, name="a"),
            change=LicenseConditionChange.CLEARED,
        ),
    )

    assert result.written is False
    es = await cluster.raw.get(ES, namespace=NS_A, name="a")
    assert es["status"]["conditions"] == [waiting]
