"""Remote clusters end to end: a Temporal dev server, ``stackflow run`` (dynamic scope) and a fake
Elasticsearch every cluster is dialled at (the ``elasticsearch-url`` key), driven only through the
Kubernetes API; the fake's state shows what the clusters were told.

* two clusters in two namespaces, ``a`` declaring ``b`` with ``apiKey``: seeds, the CA exchanged
  both ways (and ``a``'s ``<es>-es-remote-ca`` bundle holding ``b``'s CA), a cross-cluster key in
  ``b`` stored in ``a``'s keys Secret; a copy deleted by hand comes back (the copy's labels wake
  the clusters it concerns). ``b``'s namespace flips out: both CA copies and ``a``'s
  stored key go (the copy in the out-of-scope namespace deleted by name, ``b``'s Elasticsearch not
  dialled). It flips back in: everything is restored, the old key replaced by a new one;
* no license: ``a`` gets the Warning ``AssociationError`` / ``LicenseCheck`` and nothing is applied;
  the enterprise trial arrives and the seeds and the CA exchange follow without a restart.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from stackflow.kube.resources import ResourceClient
from stackflow.models.kinds import EVENTS, SECRETS
from tests.clusters import ClusterTarget
from tests.e2e.harness import ES, accept_trial, create_namespace, get_or_none, set_in_scope
from tests.e2e.remote_stack import (
    NS_A,
    NS_B,
    OPERATOR_NAMESPACE,
    copies,
    elasticsearch,
    remote_stack,
    to_b,
)
from tests.fakes.fake_elasticsearch import FakeElasticsearch
from tests.polling import eventually

pytestmark = [pytest.mark.timeout(400)]

#: Long enough for a loaded 2-core machine to start an operator and reconcile.
WITHIN = 120.0


async def ca_of(kube: ResourceClient, namespace: str, name: str) -> str | None:
    """The ``ca.crt`` of a Secret (None: no such Secret)."""
    secret = await get_or_none(kube, SECRETS, namespace=namespace, name=name)
    if secret is None:
        return None
    return base64.b64decode((secret.get("data") or {}).get("ca.crt", "")).decode()


def seeds(fake: FakeElasticsearch) -> Any:
    return fake.state.persistent_settings.get("cluster.remote.to-b.seeds")


async def stored_key(kube: ResourceClient) -> str | None:
    """The key id ``a``'s keys Secret holds for ``to-b`` (its encoded ``id:secret``)."""
    secret = await get_or_none(kube, SECRETS, namespace=NS_A, name="a-es-remote-api-keys")
    encoded = ((secret or {}).get("data") or {}).get("cluster.remote.to-b.credentials")
    if encoded is None:
        return None
    return base64.b64decode(base64.b64decode(encoded)).decode().partition(":")[0]


async def keystore_credentials(kube: ResourceClient) -> str | None:
    """The ``to-b`` credentials in ``a``'s aggregated keystore Secret (None: no such key)."""
    secret = await get_or_none(kube, SECRETS, namespace=NS_A, name="a-es-secure-settings")
    return ((secret or {}).get("data") or {}).get("cluster.remote.to-b.credentials")


async def test_a_flip_out_removes_trust_and_keys_both_ways_and_a_flip_in_restores_them(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    async with remote_stack(tmp_path, cluster_target, licensed=True) as (stack, fake):
        kube = stack.kube
        await create_namespace(kube, NS_A, in_scope=True)
        await create_namespace(kube, NS_B, in_scope=True)
        await kube.create(ES, elasticsearch(NS_B, "b"), namespace=NS_B)
        await kube.create(ES, elasticsearch(NS_A, "a", [to_b(api_key=True)]), namespace=NS_A)
        both = {f"a-{NS_B}-b-es-remote-ca", f"b-{NS_A}-a-es-remote-ca"}

        async def related() -> bool:
            key = await stored_key(kube)
            return (
                await copies(kube) == both
                and key is not None
                and key in fake.active_keys("eck-")
                and seeds(fake) == [f"b-es-remote-cluster.{NS_B}.svc:9443"]
            )

        await eventually(related, within=WITHIN, what="seeds, CA exchange and a stored key")
        first_key = await stored_key(kube)
        assert fake.state.api_keys[str(first_key)]["name"] == f"eck-{NS_A}-a-to-b"
        es = await kube.get(ES, namespace=NS_A, name="a")
        assert es["metadata"]["annotations"][
            "elasticsearch.k8s.elastic.co/managed-remote-clusters"
        ] == ("to-b")
        b_ca = await ca_of(kube, NS_B, "b-es-transport-certs-public")
        assert b_ca

        async def bundle_trusts_b() -> bool:
            bundle = await ca_of(kube, NS_A, "a-es-remote-ca")
            return bundle is not None and bundle.strip() == b_ca.strip()

        await eventually(bundle_trusts_b, within=WITHIN, what="a's remote CA bundle holds b's CA")

        async def key_in_keystore() -> bool:
            keys = await get_or_none(kube, SECRETS, namespace=NS_A, name="a-es-remote-api-keys")
            stored = ((keys or {}).get("data") or {}).get("cluster.remote.to-b.credentials")
            return stored is not None and await keystore_credentials(kube) == stored

        # The keys Secret carries a's cluster-name label: its arrival wakes a's reconcile.
        await eventually(key_in_keystore, within=WITHIN, what="a's keystore holds the API key")

        # A copy deleted by hand wakes the clusters it concerns (its labels name both): restored.
        await kube.delete(SECRETS, namespace=NS_B, name=f"b-{NS_A}-a-es-remote-ca")

        async def copy_restored() -> bool:
            return await copies(kube) == both

        await eventually(copy_restored, within=WITHIN, what="the deleted CA copy restored")

        await set_in_scope(kube, NS_B, False)

        async def revoked() -> bool:
            return await copies(kube) == set() and await stored_key(kube) is None

        await eventually(revoked, within=WITHIN, what="both CA copies and a's stored key gone")
        # b is out of scope: its Elasticsearch is not dialled, the key waits for its return.
        assert first_key in fake.active_keys("eck-")

        async def bundle_back_to_own_ca() -> bool:
            own = await ca_of(kube, NS_A, "a-es-transport-certs-public")
            bundle = await ca_of(kube, NS_A, "a-es-remote-ca")
            return bool(own) and bundle is not None and bundle.strip() == (own or "").strip()

        await eventually(bundle_back_to_own_ca, within=WITHIN, what="a trusts only its own CA")

        async def keystore_cleaned() -> bool:
            return await keystore_credentials(kube) is None

        await eventually(keystore_cleaned, within=WITHIN, what="the key gone from a's keystore")

        await set_in_scope(kube, NS_B, True)

        async def restored() -> bool:
            key = await stored_key(kube)
            return (
                await copies(kube) == both
                and key is not None
                and key != first_key
                and key in fake.active_keys("eck-")
                and first_key not in fake.active_keys("eck-")
            )

        await eventually(restored, within=WITHIN, what="CA exchange and a new key restored")


async def test_unlicensed_warns_and_applies_nothing_then_a_license_applies_it(
    cluster_target: ClusterTarget, tmp_path: Path
) -> None:
    async with remote_stack(tmp_path, cluster_target, licensed=False) as (stack, fake):
        kube = stack.kube
        await create_namespace(kube, NS_A, in_scope=True)
        await create_namespace(kube, NS_B, in_scope=True)
        await kube.create(ES, elasticsearch(NS_B, "b"), namespace=NS_B)
        await kube.create(ES, elasticsearch(NS_A, "a", [to_b(api_key=False)]), namespace=NS_A)

        async def warned() -> bool:
            listed = await kube.list(EVENTS, namespace=NS_A)
            return any(
                event.get("type") == "Warning"
                and event.get("reason") == "AssociationError"
                and event.get("action") == "LicenseCheck"
                and event["involvedObject"].get("name") == "a"
                and event.get("message")
                == "Remote cluster is an enterprise feature. Enterprise features are disabled"
                for event in listed["items"]
            )

        await eventually(warned, within=WITHIN, what="an AssociationError event on a")
        assert seeds(fake) is None
        assert fake.calls_to("PUT", "/_cluster/settings") == []
        assert await copies(kube) == set()

        await accept_trial(kube, operator_namespace=OPERATOR_NAMESPACE)

        async def applied() -> bool:
            return seeds(fake) == [f"b-es-transport.{NS_B}.svc:9300"] and await copies(kube) == {
                f"a-{NS_B}-b-es-remote-ca",
                f"b-{NS_A}-a-es-remote-ca",
            }

        await eventually(applied, within=WITHIN, what="seeds and CA exchange once licensed")
