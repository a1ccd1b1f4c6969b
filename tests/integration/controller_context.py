"""Shared set-up of the activity tests: a ControllerContext wired to kubesim (and the fake ES)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from activities.context import ControllerContext, ElasticsearchApiFactory
from activities.licenses import OperatorLicenseReader
from kubesim.testing import KubeSim
from stackflow.api.crds import crd_for
from stackflow.api.kinds import kind_info
from stackflow.config import OperatorConfig
from stackflow.controllers import CONTROLLERS, ControllerTable
from stackflow.kube.access import AccessReviewer, PermissiveAccessReviewer
from stackflow.kube.backoff import Backoff
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.kinds import NAMESPACES
from stackflow.scope import NamespaceMatcher
from tests.fakes.fake_elasticsearch import unreachable_elasticsearch
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


async def install_elasticsearch_crd(kubesim: KubeSim, api_client: client.ApiClient) -> None:
    """Create and serve the Elasticsearch CRD."""
    api: Any = client.ApiextensionsV1Api(api_client)
    await api.create_custom_resource_definition(crd_for(kind_info("Elasticsearch")))
    await kubesim.settle()


@pytest.fixture
async def cluster(kubesim: KubeSim, ka_client: client.ApiClient) -> AsyncIterator[Cluster]:
    """kubesim with the Elasticsearch CRD, the operator namespace and a running Namespace informer."""
    await install_elasticsearch_crd(kubesim, ka_client)
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
