"""Shared set-up of the activity tests: a ControllerContext wired to kubesim (and the fake ES)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from activities.context import ControllerContext
from kubesim.testing import KubeSim
from stackflow.api.crds import crd_for
from stackflow.api.kinds import kind_info
from stackflow.config import OperatorConfig
from stackflow.controllers import CONTROLLERS, ControllerTable
from stackflow.elastic import AiohttpElasticsearchClient, ElasticsearchApi
from stackflow.elastic.factory import ElasticsearchApiFactory, ElasticsearchEndpoint
from stackflow.kube.access import AccessReviewer, PermissiveAccessReviewer
from stackflow.kube.backoff import Backoff
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import ReconcileInput, ResourceRef, Trigger, TriggerReason
from stackflow.models.kinds import NAMESPACES
from stackflow.scope import NamespaceMatcher
from tests.fakes.fake_elasticsearch import FakeElasticsearch, unreachable_elasticsearch
from tests.polling import eventually

OPERATOR_NAMESPACE = "elastic-system"
OPERATOR_POD = "stackflow-0"
SELECTOR = {"matchLabels": {"eck": "on"}}


@dataclass
class Clock:
    """A settable clock for activities that judge licenses or stamp events."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __call__(self) -> datetime:
        """The current instant."""
        return self.now


@dataclass
class Cluster:
    """kubesim, a raw client and a Namespace informer (the matcher's source)."""

    kubesim: KubeSim
    raw: ResourceClient
    namespaces: NamespaceInformer

    async def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        """Create a Namespace and wait until the matcher's source sees it."""
        await self.raw.create(NAMESPACES, {"metadata": {"name": name, "labels": labels or {}}})
        await eventually(lambda: self.namespaces.namespace_labels(name) is not None)

    def context(
        self,
        *,
        selector: dict[str, Any] | None = None,
        public_keys: Sequence[bytes] = (),
        elasticsearch: ElasticsearchApiFactory = unreachable_elasticsearch,
        clock: Clock | None = None,
        controllers: ControllerTable = CONTROLLERS,
        access: AccessReviewer | None = None,
    ) -> ControllerContext:
        """A ControllerContext in dynamic mode (``selector``) or watching all namespaces.

        Clusters never answer unless ``elasticsearch`` points them at a fake server. Without
        ``access``, every reference is allowed (``enforce-rbac-on-refs`` off).
        """
        settings: dict[str, Any] = {"operator-namespace": OPERATOR_NAMESPACE}
        if selector is not None:
            settings["namespace-selector"] = selector
        config = OperatorConfig.model_validate(settings)
        matcher = NamespaceMatcher(config.scope(), source=self.namespaces)
        scoped = ScopedClient(self.raw, matcher)
        the_clock = clock or Clock()
        return ControllerContext(
            controllers=controllers,
            scoped=scoped,
            unscoped=UnscopedClient(self.raw),
            matcher=matcher,
            config=config,
            events=EventRecorder(self.raw, component="stackflow", host=OPERATOR_POD),
            licenses=OperatorLicenseReader(
                scoped,
                operator_namespace=OPERATOR_NAMESPACE,
                public_keys=public_keys,
                clock=the_clock,
            ),
            elasticsearch=elasticsearch,
            pod_name=OPERATOR_POD,
            clock=the_clock,
            access=access or PermissiveAccessReviewer(),
        )


async def serve_crds(kubesim: KubeSim, api_client: client.ApiClient, *kinds: str) -> None:
    """Create the CRDs of ``kinds`` (ECK kind names) and wait until kubesim serves them."""
    api: Any = client.ApiextensionsV1Api(api_client)
    for kind in kinds:
        await api.create_custom_resource_definition(crd_for(kind_info(kind)))
    await kubesim.settle()


@pytest.fixture
async def cluster(kubesim: KubeSim, ka_client: client.ApiClient) -> AsyncIterator[Cluster]:
    """kubesim with the Elasticsearch CRD, the operator namespace and a running Namespace informer."""
    await serve_crds(kubesim, ka_client, "Elasticsearch")
    raw = ResourceClient(ka_client)
    informer = NamespaceInformer(raw, backoff=Backoff(initial=0.05, maximum=0.5))
    informer.start()
    async with asyncio.timeout(10):
        await informer.wait_synced()
    harness = Cluster(kubesim=kubesim, raw=raw, namespaces=informer)
    await harness.create_namespace(OPERATOR_NAMESPACE)
    try:
        yield harness
    finally:
        await informer.stop()


def startup(ref: ResourceRef) -> ReconcileInput:
    """A reconcile request for ``ref`` with one Startup trigger (as after an operator start)."""
    return ReconcileInput(ref=ref, triggers=(Trigger(reason=TriggerReason.STARTUP, source="test"),))


@pytest.fixture
async def fake_es() -> AsyncIterator[FakeElasticsearch]:
    """A fake Elasticsearch on a free 127.0.0.1 port, stopped after the test."""
    async with FakeElasticsearch() as fake:
        yield fake


@pytest.fixture
async def any_user_es() -> AsyncIterator[FakeElasticsearch]:
    """A fake Elasticsearch accepting every user: one server standing for several clusters, each
    dialled with its own internal user (``FakeFactory(..., endpoint_users=True)``)."""
    async with FakeElasticsearch(any_credentials=True) as fake:
        yield fake


class FakeFactory:
    """An ``ElasticsearchApiFactory`` pointing every cluster at the fake server, as the fake's
    default user (or, with ``endpoint_users``, as each endpoint's own user, as the
    ``elasticsearch-url`` key does); an endpoint's API key, when it has one, authenticates instead.
    It remembers the endpoints asked for."""

    def __init__(self, fake: FakeElasticsearch, *, endpoint_users: bool = False) -> None:
        """Serve every cluster from ``fake``."""
        self.fake = fake
        self.endpoint_users = endpoint_users
        self.endpoints: list[ElasticsearchEndpoint] = []

    def __call__(self, endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
        """A client of the fake server for the cluster at ``endpoint``."""
        self.endpoints.append(endpoint)
        if self.endpoint_users:
            username, password = endpoint.username, endpoint.password
        else:
            username, password = "elastic", "changeme"
        return AiohttpElasticsearchClient(
            url=self.fake.url, username=username, password=password, api_key=endpoint.api_key
        )
