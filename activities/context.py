"""``ControllerContext``: everything activities need, built once per process by ``stackflow.cli.operator``.

It holds the controller table, the scoped client (every namespaced read), the explicitly unscoped
client (flip mappers only), the optional read-through informer cache (``ObjectReader``: the scope
check and the license check read from it when it has a synced informer, else call the API server),
the namespace matcher, the operator configuration, the event recorder, the license reader, the
Elasticsearch client factory and the access reviewer (``enforce-rbac-on-refs``). It holds no
state of its own: whatever must be the same on every replica lives in Kubernetes or in Temporal.

The license reader (``stackflow.kube.operator_licenses``) and the Elasticsearch client factory
(``stackflow.elastic.factory``) are adapters built by ``stackflow run`` and handed in. With
``elasticsearch-dial: endpoints``, `ControllerContext.elasticsearch_session` first computes the
ready addresses of the cluster's internal HTTP Service from the Service and its Pods, read through
the scoped client, before building the client.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from temporalio.client import Client

from stackflow.config import OperatorConfig
from stackflow.controllers import ControllerTable
from stackflow.elastic import ElasticsearchApi
from stackflow.elastic.factory import (
    ElasticsearchApiFactory,
    ElasticsearchEndpoint,
    aiohttp_elasticsearch,
    dials_ready_addresses,
)
from stackflow.kube.access import AccessReviewer, PermissiveAccessReviewer
from stackflow.kube.events import EventRecorder
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.kube.reader import ObjectReader
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.licensing.waiters import LicenseWaiters
from stackflow.models.engine import TASK_QUEUE
from stackflow.models.kinds import PODS, SERVICES
from stackflow.scope import NamespaceMatcher, equality_selector_string
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.dial import dial_plan, pod_selector

__all__ = ["ControllerContext", "operator_pod_name"]


def operator_pod_name(environ: Mapping[str, str] | None = None) -> str:
    """The operator Pod's name: ``POD_NAME``, else the hostname (as ECK)."""
    env = os.environ if environ is None else environ
    return env.get("POD_NAME") or socket.gethostname()


@dataclass
class ControllerContext:
    """The process-wide dependencies of every activity."""

    scoped: ScopedClient
    unscoped: UnscopedClient
    matcher: NamespaceMatcher
    config: OperatorConfig
    events: EventRecorder
    licenses: OperatorLicenseReader
    #: The controllers of this process: the scope check reads each one's gate here.
    controllers: ControllerTable
    #: Builds the client of one cluster's HTTP API (tests point it at the fake Elasticsearch).
    elasticsearch: ElasticsearchApiFactory = aiohttp_elasticsearch
    temporal_client: Client | None = None
    task_queue: str = TASK_QUEUE
    pod_name: str = field(default_factory=operator_pod_name)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: Field manager name for the operator's writes.
    field_manager: str = "stackflow"
    #: The watchers' informer caches (unscoped); None: every read goes to the API server.
    cache: ObjectReader | None = None
    #: Whether a referring object's ServiceAccount may get what it references in another
    #: namespace (``enforce-rbac-on-refs``; off: everything is allowed, nothing asked).
    access: AccessReviewer = field(default_factory=PermissiveAccessReviewer)
    #: The workflows whose last reconcile step here found no license (the watchers wake them
    #: at once when a license appears).
    license_waiters: LicenseWaiters = field(default_factory=LicenseWaiters)

    @property
    def operator_namespace(self) -> str:
        """The namespace the operator runs in."""
        return self.config.operator_namespace

    @contextlib.asynccontextmanager
    async def elasticsearch_session(
        self, endpoint: ElasticsearchEndpoint
    ) -> AsyncIterator[ElasticsearchApi]:
        """The client of one cluster for the span of a block, closed after it, whatever happens
        (its HTTP session would otherwise outlive the activity). A port without ``close``, such
        as the out-of-cluster stub, holds nothing to close. With ``elasticsearch-dial:
        endpoints`` the cluster's ready addresses are read first (`with_ready_addresses`)."""
        if dials_ready_addresses(self.config):
            endpoint = await self.with_ready_addresses(endpoint)
        api = self.elasticsearch(endpoint)
        try:
            yield api
        finally:
            close = getattr(api, "close", None)
            if close is not None:
                await close()

    async def with_ready_addresses(self, endpoint: ElasticsearchEndpoint) -> ElasticsearchEndpoint:
        """``endpoint`` with where to dial it: the ready addresses of its internal HTTP Service,
        computed from the Service and the Pods it selects, both read through the scoped client
        (a cluster out of scope has neither), and the Service name its certificate must carry.
        Not read from the Service's EndpointSlices: the API server refuses loopback addresses
        there, which the Pods of nodes run on this machine have."""
        service = await self.scoped.get_or_none(
            SERVICES,
            namespace=endpoint.namespace,
            name=names.internal_http_service_name(endpoint.name),
        )
        selector = pod_selector(service)
        pods: list[dict[str, Any]] = []
        # Without a selector nothing is listed: an empty label selector would list every Pod.
        if selector is not None:
            listed = await self.scoped.list(
                PODS,
                namespace=endpoint.namespace,
                label_selector=equality_selector_string(selector),
            )
            pods = listed["items"]
        plan = dial_plan(
            namespace=endpoint.namespace,
            name=endpoint.name,
            scheme=urlsplit(endpoint.url).scheme,
            service=service,
            pods=pods,
        )
        return dataclasses.replace(endpoint, dial=plan)
