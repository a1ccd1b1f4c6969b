"""Shared set-up of the remote-cluster activity tests: the labelled namespaces ``team-a`` and
``team-b``, an enterprise license, clusters as the Elasticsearch controller leaves them, one
reconcile, and what the exchange left behind (CA copies, stored credentials, active keys).

Every cluster is dialled at the one fake server (as the ``elasticsearch-url`` key does) with its own
internal user, so its state holds every cluster's settings and keys; the names say whose they are.
"""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities.errors import translated_errors
from activities.remoteclusters import RemoteClusterActivities
from stackflow.controllers.remoteclusters import REMOTE_CLUSTER_CONTROLLER
from stackflow.kube import errors
from stackflow.kube.access import AccessReviewer
from stackflow.licensing.issue import generate_private_key, new_license, public_key_pem, signed
from stackflow.models.engine import CompensateInput, ReconcileInput, ReconcileResult
from stackflow.models.kinds import SECRETS
from stackflow.stack.elasticsearch.remote_clusters import remote_ca_copy_name
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Clock,
    Cluster,
    FakeFactory,
    startup,
)

ES = REMOTE_CLUSTER_CONTROLLER.primary
NS_A, NS_B = "team-a", "team-b"
ACCESS = {"search": [{"names": ["logs-*"]}]}


def pem(label: str) -> str:
    """A certificate-shaped PEM block around ``label``."""
    return f"-----BEGIN CERTIFICATE-----\n{label}\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    """``text`` base64-encoded, as a Secret's data holds it."""
    return base64.b64encode(text.encode()).decode()


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    """The key the test licenses are signed with (the operator trusts its public half)."""
    return generate_private_key()


@pytest.fixture
async def peers(cluster: Cluster) -> Cluster:
    """kubesim with the labelled namespaces of both clusters, ``team-a`` and ``team-b``."""
    for namespace in (NS_A, NS_B):
        await cluster.create_namespace(namespace, {"eck": "on"})
    return cluster


async def install_license(cluster: Cluster, key: rsa.RSAPrivateKey) -> None:
    """An enterprise operator license signed with ``key``."""
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
    """A cluster with ``remotes`` and the Secrets its Elasticsearch controller publishes."""
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
    """The remote ``to-b`` entry of cluster ``a``: ``team-b/b``, by API key unless told."""
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
    """One Startup reconcile of the cluster ``namespace/name`` by the remote-cluster controller,
    licensed by ``key``, every cluster dialled at ``fake`` as its own user; then the compensations
    it asks to run now (``release_now``), each as its own activity, as the workflow runs them."""
    context = cluster.context(
        selector=SELECTOR,
        public_keys=(public_key_pem(key.public_key()),),
        elasticsearch=FakeFactory(fake, endpoint_users=True),
        access=access,
    )
    activities = RemoteClusterActivities(context, REMOTE_CLUSTER_CONTROLLER)
    ref = REMOTE_CLUSTER_CONTROLLER.ref(namespace=namespace, name=name)

    async def run(request: ReconcileInput) -> ReconcileResult:
        try:
            es = await context.scoped.get(ref.resource, namespace=namespace, name=name)
        except errors.NotFound:
            return activities.primary_missing(ref)
        return await activities.reconcile(request, es)

    result = await ActivityEnvironment().run(translated_errors(run), startup(ref))
    for step in result.release_now:
        compensate = translated_errors(activities.compensations[step.activity])
        await ActivityEnvironment().run(compensate, CompensateInput(ref=ref, step=step))
    return result


async def secret_or_none(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The Secret ``namespace/name``, or None when there is none."""
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
    """The decoded remote credentials ``a`` keeps in its ``a-es-remote-api-keys`` Secret."""
    secret = await secret_or_none(cluster, NS_A, "a-es-remote-api-keys")
    if secret is None:
        return {}
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def active_key_ids(fake: FakeElasticsearch) -> list[str]:
    """The ids of the cross-cluster API keys the operator made that are still valid."""
    return sorted(fake.active_keys("eck-").keys())
