"""The scope check and the license gate read from the watchers' informer caches (against kubesim).

A synced informer answers without an API call; a cache miss of the scope check is confirmed by
one GET (the cache may not have seen a just-created object yet); without a synced informer every
read goes to the API server as before.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.testing import ActivityEnvironment

from activities import generic
from activities.context import ControllerContext
from stackflow.controllers.elasticsearch import ELASTICSEARCH
from stackflow.kube.backoff import Backoff
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.kube.reader import UNKNOWN, ObjectReader, Unknown
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.licensing.issue import generate_private_key, public_key_pem
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR
from stackflow.models.engine import LicenseCheckInput, ScopeCheckInput
from stackflow.models.kinds import PODS, SECRETS, Kind
from tests.integration.controller_context import (
    OPERATOR_NAMESPACE,
    SELECTOR,
    Clock,
    Cluster,
    cluster,
)
from tests.integration.elasticsearch_setup import es_manifest, es_ref
from tests.integration.license_setup import enterprise_license, license_secret
from tests.polling import eventually
from watchers.informers import InformerSet

__all__ = ["cluster"]

NAMESPACE = "team-a"


class CountingClient(ResourceClient):
    """The API client of the activities, counting GETs and LISTs by resource plural."""

    def __init__(self, raw: ResourceClient) -> None:
        super().__init__(raw.api_client)
        self.gets: Counter[str] = Counter()
        self.lists: Counter[str] = Counter()

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        self.gets[resource.plural] += 1
        return await super().get(resource, namespace=namespace, name=name)

    async def list(
        self,
        resource: Kind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        from_watch_cache: bool = False,
    ) -> dict[str, Any]:
        self.lists[resource.plural] += 1
        return await super().list(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
            from_watch_cache=from_watch_cache,
        )


class LaggingCache:
    """A synced cache that has not seen anything yet: every Get misses."""

    def get(
        self, resource: Kind, *, namespace: str | None, name: str
    ) -> dict[str, Any] | Unknown | None:
        return None

    def list(
        self, resource: Kind, *, namespace: str | None, label_selector: str | None
    ) -> list[dict[str, Any]] | Unknown:
        return []

    def resource_version(self, resource: Kind, *, namespace: str | None, name: str) -> str | None:
        return None


def cached_context(
    cluster: Cluster,
    calls: CountingClient,
    cache: ObjectReader,
    *,
    public_keys: tuple[bytes, ...] = (),
) -> ControllerContext:
    """A dynamic-mode context whose API reads are counted and whose cache is ``cache``."""
    base = cluster.context(selector=SELECTOR, public_keys=public_keys)
    scoped = ScopedClient(calls, base.matcher)
    return dataclasses.replace(
        base,
        scoped=scoped,
        unscoped=UnscopedClient(calls),
        cache=cache,
        licenses=OperatorLicenseReader(
            scoped, operator_namespace=OPERATOR_NAMESPACE, public_keys=public_keys, cache=cache
        ),
    )


@pytest.fixture
async def informers(cluster: Cluster) -> AsyncIterator[InformerSet]:
    """The informers the watchers would run for Elasticsearch and Secrets, synced."""
    matcher = cluster.context(selector=SELECTOR).matcher
    informer_set = InformerSet(cluster.raw, matcher, backoff=Backoff(initial=0.05, maximum=0.5))
    informer_set.informer(ELASTICSEARCH)
    informer_set.informer(SECRETS)
    informer_set.informer(SECRETS, label_selector=OPERATOR_LICENSE_SELECTOR)
    informer_set.start()
    await eventually(lambda: informer_set.has_synced)
    try:
        yield informer_set
    finally:
        await informer_set.stop()


@pytest.mark.parametrize(
    ("labels", "in_scope"),
    [
        pytest.param({"eck": "on"}, True, id="managed-namespace"),
        pytest.param({}, False, id="descoped-namespace-still-exists"),
    ],
)
async def test_scope_check_reads_existence_from_the_cache(
    cluster: Cluster, informers: InformerSet, labels: dict[str, str], in_scope: bool
) -> None:
    calls = CountingClient(cluster.raw)
    context = cached_context(cluster, calls, informers)
    await cluster.create_namespace(NAMESPACE, labels)
    await cluster.raw.create(ELASTICSEARCH, es_manifest())
    await eventually(
        lambda: isinstance(
            informers.get(ELASTICSEARCH, namespace=NAMESPACE, name="quickstart"), dict
        )
    )

    result = await ActivityEnvironment().run(
        generic.scope_check, context, ScopeCheckInput(ref=es_ref())
    )

    assert (result.exists, result.in_scope) == (True, in_scope)
    assert calls.gets["elasticsearches"] == 0


@pytest.mark.parametrize(
    ("cache_kind", "created", "exists"),
    [
        pytest.param("lagging", True, True, id="miss-of-a-just-created-object-is-confirmed"),
        pytest.param("lagging", False, False, id="miss-of-a-deleted-object"),
        pytest.param("unsynced", True, True, id="no-synced-informer-asks-the-api"),
        pytest.param("unsynced", False, False, id="no-synced-informer-deleted"),
    ],
)
async def test_scope_check_asks_the_api_once_when_the_cache_cannot_tell(
    cluster: Cluster, cache_kind: str, created: bool, exists: bool
) -> None:
    calls = CountingClient(cluster.raw)
    matcher = cluster.context(selector=SELECTOR).matcher
    cache = LaggingCache() if cache_kind == "lagging" else InformerSet(cluster.raw, matcher)
    context = cached_context(cluster, calls, cache)
    await cluster.create_namespace(NAMESPACE, {"eck": "on"})
    if created:
        await cluster.raw.create(ELASTICSEARCH, es_manifest())

    result = await ActivityEnvironment().run(
        generic.scope_check, context, ScopeCheckInput(ref=es_ref())
    )

    assert result.exists is exists
    assert calls.gets["elasticsearches"] == 1


@pytest.fixture(scope="module")
def signing_key() -> rsa.RSAPrivateKey:
    return generate_private_key()


@pytest.mark.parametrize(
    ("namespace", "labels", "licensed"),
    [
        pytest.param(OPERATOR_NAMESPACE, None, True, id="operator-namespace-always-counts"),
        pytest.param(NAMESPACE, {"eck": "on"}, True, id="managed-namespace"),
        pytest.param(NAMESPACE, {}, False, id="unmanaged-namespace-does-not-count"),
    ],
)
async def test_license_check_lists_license_secrets_from_the_cache(
    cluster: Cluster,
    informers: InformerSet,
    signing_key: rsa.RSAPrivateKey,
    namespace: str,
    labels: dict[str, str] | None,
    licensed: bool,
) -> None:
    calls = CountingClient(cluster.raw)
    public_keys = (public_key_pem(signing_key.public_key()),)
    context = cached_context(cluster, calls, informers, public_keys=public_keys)
    if labels is not None:
        await cluster.create_namespace(namespace, labels)
    secret = license_secret(enterprise_license(signing_key, Clock()), namespace=namespace)
    await cluster.raw.create(SECRETS, secret)
    await eventually(
        lambda: bool(
            informers.list(SECRETS, namespace=namespace, label_selector=OPERATOR_LICENSE_SELECTOR)
        )
    )

    result = await ActivityEnvironment().run(
        generic.license_check, context, LicenseCheckInput(ref=es_ref())
    )

    assert result.licensed is licensed
    assert calls.lists["secrets"] == 0


@pytest.mark.parametrize(
    ("label_selector", "expected"),
    [
        pytest.param("app=web", ["web"], id="equality-from-the-unfiltered-informer"),
        pytest.param("app==web,tier=front", ["web"], id="several-equalities"),
        pytest.param("app=db", [], id="no-match"),
        pytest.param(OPERATOR_LICENSE_SELECTOR, [], id="informer-of-that-selector"),
        pytest.param("app!=web", UNKNOWN, id="inequality-is-not-answered"),
        pytest.param("app", UNKNOWN, id="existence-is-not-answered"),
    ],
)
async def test_informer_set_lists_from_its_caches(
    cluster: Cluster,
    informers: InformerSet,
    label_selector: str,
    expected: list[str] | Unknown,
) -> None:
    await cluster.raw.create(
        SECRETS,
        {
            "metadata": {
                "name": "web",
                "namespace": OPERATOR_NAMESPACE,
                "labels": {"app": "web", "tier": "front"},
            }
        },
    )
    await eventually(
        lambda: isinstance(informers.get(SECRETS, namespace=OPERATOR_NAMESPACE, name="web"), dict)
    )

    listed = informers.list(SECRETS, namespace=OPERATOR_NAMESPACE, label_selector=label_selector)

    names = listed if isinstance(listed, Unknown) else [obj["metadata"]["name"] for obj in listed]
    assert names == expected


async def test_informer_set_answers_unknown_for_kinds_it_does_not_watch(
    informers: InformerSet,
) -> None:
    assert informers.get(PODS, namespace=NAMESPACE, name="x") is UNKNOWN
    assert informers.list(PODS, namespace=None, label_selector=None) is UNKNOWN
