"""The remote-cluster activities against kubesim and the fake Elasticsearch: seeds and the managed
annotation, the CA exchange both ways and the bundle's inputs, cross-cluster API keys, clean-up when
a relationship goes, a peer's namespace flipping out and back, the license wait, the finalizer and
the flip mapper.

Every cluster is dialled at the one fake server (as the ``elasticsearch-url`` key does), so its
state holds every cluster's settings and keys; the names say whose they are.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities import remoteclusters
from activities.context import ElasticsearchApi, ElasticsearchEndpoint
from activities.errors import translated_errors
from activities.license_condition import CONDITION_TYPE, license_condition
from stackflow.controllers.remoteclusters import REMOTE_CLUSTER_CONTROLLER
from stackflow.elastic import AiohttpElasticsearchClient
from stackflow.kube import errors
from stackflow.kube.access import AccessReviewer
from stackflow.licensing.issue import generate_private_key, new_license, public_key_pem, signed
from stackflow.models.engine import (
    FinalizeInput,
    Phase,
    ReconcileInput,
    ReconcileResult,
    Trigger,
    TriggerReason,
)
from stackflow.models.kinds import EVENTS, NAMESPACES, SECRETS
from stackflow.stack.elasticsearch.remote_clusters import remote_ca_copy_name
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Clock,
    Cluster,
    cluster,
)
from tests.polling import eventually
from workflows.decisions import LicenseConditionChange, LicenseConditionInput

__all__ = ["cluster"]

ES = REMOTE_CLUSTER_CONTROLLER.primary
NS_A, NS_B = "team-a", "team-b"
ACCESS = {"search": [{"names": ["logs-*"]}]}


def pem(label: str) -> str:
    return f"-----BEGIN CERTIFICATE-----\n{label}\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return generate_private_key()


@pytest.fixture
async def fake_es() -> AsyncIterator[FakeElasticsearch]:
    async with FakeElasticsearch(any_credentials=True) as fake:
        yield fake


class FakeFactory:
    """Points every cluster at the fake server, as the ``elasticsearch-url`` key does."""

    def __init__(self, fake: FakeElasticsearch) -> None:
        self.fake = fake

    def __call__(self, endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
        return AiohttpElasticsearchClient(
            url=self.fake.url, username=endpoint.username, password=endpoint.password
        )


@pytest.fixture(autouse=True)
async def namespaces(cluster: Cluster) -> None:
    for namespace in (NS_A, NS_B):
        await cluster.create_namespace(namespace, {"eck": "on"})


async def install_license(cluster: Cluster, key: rsa.RSAPrivateKey) -> None:
    document = signed(
        new_license(now=Clock().now, validity=timedelta(days=30), uid="ENT-1"), private_key=key
    )
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {
                "name": "eck-license",
                "namespace": OPERATOR_NAMESPACE,
                "labels": {"license.k8s.elastic.co/scope": "operator"},
            },
            "data": {"license": b64(document.to_json())},
        },
    )


async def create_cluster(
    cluster: Cluster, namespace: str, name: str, remotes: list[dict[str, Any]] | None = None
) -> None:
    spec: dict[str, Any] = {"version": "8.15.0", "nodeSets": [{"name": "default", "count": 1}]}
    if remotes:
        spec["remoteClusters"] = remotes
    await cluster.raw.create(
        ES,
        {
            "apiVersion": ES.api_version,
            "kind": "Elasticsearch",
            "metadata": {"namespace": namespace, "name": name},
            "spec": spec,
        },
    )
    # What the Elasticsearch controller publishes: the internal user and the transport CA.
    for secret_name, data in (
        (f"{name}-es-internal-users", {"elastic-internal": b64(f"pw-{name}")}),
        (f"{name}-es-transport-certs-public", {"ca.crt": b64(pem(f"CA-{name}"))}),
    ):
        await cluster.raw.create(
            SECRETS, {"metadata": {"name": secret_name, "namespace": namespace}, "data": data}
        )


def to_b(*, api_key: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "to-b", "elasticsearchRef": {"name": "b", "namespace": NS_B}}
    if api_key:
        entry["apiKey"] = {"access": ACCESS}
    return entry


async def reconcile(
    cluster: Cluster,
    fake: FakeElasticsearch,
    key: rsa.RSAPrivateKey,
    namespace: str,
    name: str,
    access: AccessReviewer | None = None,
) -> ReconcileResult:
    context = cluster.context(
        selector=SELECTOR,
        public_keys=(public_key_pem(key.public_key()),),
        elasticsearch=FakeFactory(fake),
        access=access,
    )
    request = ReconcileInput(
        ref=REMOTE_CLUSTER_CONTROLLER.ref(namespace=namespace, name=name),
        triggers=(Trigger(reason=TriggerReason.STARTUP, source="test"),),
    )
    return await ActivityEnvironment().run(
        translated_errors(remoteclusters.reconcile), context, request
    )


async def secret_or_none(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await cluster.raw.get(SECRETS, namespace=namespace, name=name)
    except errors.NotFound:
        return None


async def copies(cluster: Cluster) -> dict[str, str]:
    """Both halves of the a-b exchange that exist: name → the CA it holds."""
    found = {}
    for namespace, holder, peer in ((NS_A, "a", (NS_B, "b")), (NS_B, "b", (NS_A, "a"))):
        secret = await secret_or_none(cluster, namespace, remote_ca_copy_name(holder, peer))
        if secret is not None:
            found[secret["metadata"]["name"]] = base64.b64decode(secret["data"]["ca.crt"]).decode()
    return found


async def stored_credentials(cluster: Cluster) -> dict[str, str]:
    secret = await secret_or_none(cluster, NS_A, "a-es-remote-api-keys")
    if secret is None:
        return {}
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def active_key_ids(fake: FakeElasticsearch) -> list[str]:
    return sorted(fake.active_keys("eck-").keys())


async def test_seeds_trust_and_keys_then_all_removed_with_the_relationship(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")

    result = await reconcile(cluster, fake_es, signing_key, NS_A, "a")

    assert result.phase is Phase.READY, result.message
    assert fake_es.state.persistent_settings == {
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
    [key_id] = active_key_ids(fake_es)
    key = fake_es.state.api_keys[key_id]
    assert (key["name"], key["access"]) == ("eck-team-a-a-to-b", ACCESS)
    assert key["metadata"]["elasticsearch.k8s.elastic.co/managed-by"] == "eck"
    credentials = await stored_credentials(cluster)
    assert credentials == {
        "cluster.remote.to-b.credentials": base64.b64encode(
            f"{key_id}:secret-{key_id}".encode()
        ).decode()
    }

    # The server's own reconcile finds everything in line: the key is neither made nor remade.
    again = await reconcile(cluster, fake_es, signing_key, NS_B, "b")
    assert again.phase is Phase.READY, again.message
    assert active_key_ids(fake_es) == [key_id]

    # The remote removed from the spec: seeds set to null, trust and keys removed both ways.
    await cluster.raw.merge_patch(ES, {"spec": {"remoteClusters": None}}, namespace=NS_A, name="a")
    await reconcile(cluster, fake_es, signing_key, NS_A, "a")

    assert fake_es.state.persistent_settings == {}
    assert fake_es.calls_to("PUT", "/_cluster/settings")[-1].body == {
        "persistent": {"cluster.remote.to-b.seeds": None}
    }
    es = await cluster.raw.get(ES, namespace=NS_A, name="a")
    assert "elasticsearch.k8s.elastic.co/managed-remote-clusters" not in (
        es["metadata"].get("annotations") or {}
    )
    assert await copies(cluster) == {}
    assert active_key_ids(fake_es) == []
    assert await stored_credentials(cluster) == {}


async def test_a_peer_out_of_scope_loses_trust_and_keys_and_gets_them_back(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    await reconcile(cluster, fake_es, signing_key, NS_A, "a")
    [first_key] = active_key_ids(fake_es)

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NS_B
    )
    await eventually(lambda: "eck" not in (cluster.namespaces.namespace_labels(NS_B) or {"eck": 1}))
    out = await reconcile(cluster, fake_es, signing_key, NS_A, "a")

    # Both copies go, the one in the out-of-scope namespace by name; the client drops the key.
    assert await copies(cluster) == {}
    assert await stored_credentials(cluster) == {}
    assert "trust revoked with 1 clusters" in out.message
    # The server is out of scope: it is not dialled, its key waits for its return.
    assert active_key_ids(fake_es) == [first_key]
    # The seeds follow the client's spec, as ECK: they stay.
    assert fake_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-remote-cluster.team-b.svc:9443"]
    }

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": "on"}}}, namespace=None, name=NS_B
    )
    await eventually(lambda: (cluster.namespaces.namespace_labels(NS_B) or {}).get("eck") == "on")
    back = await reconcile(cluster, fake_es, signing_key, NS_A, "a")

    assert back.phase is Phase.READY, back.message
    assert set(await copies(cluster)) == {"a-team-b-b-es-remote-ca", "b-team-a-a-es-remote-ca"}
    # The old key's secret part is gone from the client: it is replaced.
    [second_key] = active_key_ids(fake_es)
    assert second_key != first_key
    assert fake_es.state.api_keys[first_key]["invalidated"]
    assert list(await stored_credentials(cluster)) == ["cluster.remote.to-b.credentials"]


async def test_unlicensed_warns_the_client_and_applies_nothing_until_a_license(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await create_cluster(cluster, NS_A, "a", [to_b(api_key=False)])
    await create_cluster(cluster, NS_B, "b")
    await create_cluster(cluster, NS_B, "alone")

    waiting = await reconcile(cluster, fake_es, signing_key, NS_A, "a")
    server = await reconcile(cluster, fake_es, signing_key, NS_B, "b")
    alone = await reconcile(cluster, fake_es, signing_key, NS_B, "alone")

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
    assert fake_es.calls == []
    assert await copies(cluster) == {}

    await install_license(cluster, signing_key)
    licensed = await reconcile(cluster, fake_es, signing_key, NS_A, "a")

    assert licensed.phase is Phase.READY, licensed.message
    assert fake_es.state.persistent_settings == {
        "cluster.remote.to-b.seeds": ["b-es-transport.team-b.svc:9300"]
    }
    assert set(await copies(cluster)) == {"a-team-b-b-es-remote-ca", "b-team-a-a-es-remote-ca"}


async def test_a_deleted_server_is_finalized_and_the_flip_mapper_finds_both_sides(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    await create_cluster(cluster, NS_B, "unrelated")
    await reconcile(cluster, fake_es, signing_key, NS_A, "a")
    context = cluster.context(
        selector=SELECTOR,
        public_keys=(public_key_pem(signing_key.public_key()),),
        elasticsearch=FakeFactory(fake_es),
    )

    flipped = await remoteclusters.flip_mapper(context, NS_B, "out")
    assert sorted((e["metadata"]["namespace"], e["metadata"]["name"]) for e in flipped) == [
        (NS_A, "a"),
        (NS_B, "b"),
        (NS_B, "unrelated"),
    ]
    only_a = await remoteclusters.flip_mapper(context, NS_A, "out")
    assert sorted((e["metadata"]["namespace"], e["metadata"]["name"]) for e in only_a) == [
        (NS_A, "a"),
        (NS_B, "b"),
    ]

    # The client is deleted: the server's copy of its CA goes, its key in the server too.
    await cluster.raw.delete(ES, namespace=NS_A, name="a")
    await ActivityEnvironment().run(
        remoteclusters.finalize,
        context,
        FinalizeInput(ref=REMOTE_CLUSTER_CONTROLLER.ref(namespace=NS_A, name="a")),
    )
    assert await secret_or_none(cluster, NS_B, "b-team-a-a-es-remote-ca") is None
    assert active_key_ids(fake_es) == []


async def test_a_client_out_of_scope_loses_its_key_in_the_server_and_both_copies(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
) -> None:
    await install_license(cluster, signing_key)
    await create_cluster(cluster, NS_A, "a", [to_b()])
    await create_cluster(cluster, NS_B, "b")
    await reconcile(cluster, fake_es, signing_key, NS_A, "a")
    [key_id] = active_key_ids(fake_es)

    await cluster.raw.merge_patch(
        NAMESPACES, {"metadata": {"labels": {"eck": None}}}, namespace=None, name=NS_A
    )
    await eventually(lambda: "eck" not in (cluster.namespaces.namespace_labels(NS_A) or {"eck": 1}))
    # The flip wakes the server (it is the declared counterpart of a cluster in the namespace).
    result = await reconcile(cluster, fake_es, signing_key, NS_B, "b")

    assert result.phase is Phase.READY, result.message
    # The server is in scope: the client's key there is invalidated; both copies are deleted.
    assert fake_es.state.api_keys[key_id]["invalidated"]
    assert await copies(cluster) == {}
    # The client's own Secret sits in the out-of-scope namespace: it is not touched (its key is
    # dead), and replaced once the client is back.
    assert list(await stored_credentials(cluster)) == ["cluster.remote.to-b.credentials"]


async def test_leaving_the_license_wait_keeps_another_controllers_waiting_condition(
    cluster: Cluster, fake_es: FakeElasticsearch, signing_key: rsa.RSAPrivateKey
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
