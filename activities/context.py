"""``ControllerContext``: everything activities need, built once per process by ``stackflow.cli.operator``.

It holds the controller table, the scoped client (every namespaced read), the explicitly unscoped
client (flip mappers only), the optional read-through informer cache (``ObjectReader``: the scope
check and the license check read from it when it has a synced informer, else call the API server),
the namespace matcher, the operator configuration, the event recorder, the license reader, the
Elasticsearch client factory and the access reviewer (``enforce-rbac-on-refs``). It holds no
state of its own: whatever must be the same on every replica lives in Kubernetes or in Temporal.

Where a cluster's HTTP API is dialled follows the configuration (`elasticsearch_factory`): the one
``elasticsearch-url``; else, with ``elasticsearch-dial: endpoints``, the ready addresses of the
cluster's internal HTTP Service, which `ControllerContext.elasticsearch_session` computes from the
Service and its Pods, read through the scoped client, before building the client; else the
Service's name, when in-cluster networking is on, and nothing when it is off.
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

from activities.licenses import OperatorLicenseReader
from stackflow.config import ElasticsearchDial, OperatorConfig
from stackflow.controllers import ControllerTable
from stackflow.elastic import (
    AiohttpElasticsearchClient,
    ElasticsearchApi,
    NotDialledElasticsearch,
    OutOfClusterElasticsearch,
)
from stackflow.kube.access import AccessReviewer, PermissiveAccessReviewer
from stackflow.kube.events import EventRecorder
from stackflow.kube.reader import ObjectReader
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.models.engine import TASK_QUEUE
from stackflow.models.kinds import PODS, SERVICES
from stackflow.scope import NamespaceMatcher, equality_selector_string
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.dial import DialPlan, dial_plan, pod_selector

__all__ = [
    "ControllerContext",
    "ElasticsearchApi",
    "ElasticsearchApiFactory",
    "ElasticsearchEndpoint",
    "ObjectReader",
    "aiohttp_elasticsearch",
    "dials_ready_addresses",
    "elasticsearch_factory",
    "operator_pod_name",
    "out_of_cluster_elasticsearch",
    "ready_address_elasticsearch",
    "runs_in_cluster",
]


def operator_pod_name(environ: Mapping[str, str] | None = None) -> str:
    """The operator Pod's name: ``POD_NAME``, else the hostname (as ECK)."""
    env = os.environ if environ is None else environ
    return env.get("POD_NAME") or socket.gethostname()


@dataclass(frozen=True)
class ElasticsearchEndpoint:
    """Where and how to reach one cluster's HTTP API."""

    namespace: str
    name: str
    url: str
    username: str
    password: str
    ca_pem: bytes | None = None
    #: An encoded API key (``base64(id:key)``) to authenticate with instead of the user: the
    #: AutoOps clean-up lets a key invalidate itself when its cluster may not be read.
    api_key: str | None = None
    #: With ``elasticsearch-dial: endpoints``: the ready addresses of the cluster's internal HTTP
    #: Service and the name its certificate must carry, read when a session opens; None: the
    #: client dials ``url``.
    dial: DialPlan | None = None


#: Builds a client for one cluster; tests point it at the fake Elasticsearch server.
ElasticsearchApiFactory = Callable[[ElasticsearchEndpoint], ElasticsearchApi]


def aiohttp_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """The production factory: an aiohttp client trusting the cluster's internal HTTP CA."""
    return AiohttpElasticsearchClient(
        url=endpoint.url,
        username=endpoint.username,
        password=endpoint.password,
        ca_pem=endpoint.ca_pem,
        api_key=endpoint.api_key,
    )


def out_of_cluster_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """The factory outside a cluster: a client that reports the cluster unreachable, never dialing."""
    return OutOfClusterElasticsearch(endpoint.url)


def ready_address_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """The factory with ``elasticsearch-dial: endpoints``: an aiohttp client dialling the
    cluster's ready addresses in turn (``endpoint.dial``), trusting only the cluster's CA and
    checking that the certificate names its internal HTTP Service. Without a ready address, a
    client that reports the cluster not reachable, as when it does not answer."""
    service = f"{endpoint.namespace}/{names.internal_http_service_name(endpoint.name)}"
    plan = endpoint.dial
    if plan is None:
        return NotDialledElasticsearch(f"the ready addresses of Service {service} were not read")
    if not plan.urls:
        return NotDialledElasticsearch(f"Service {service} has no ready address")
    return AiohttpElasticsearchClient(
        url=plan.urls[0],
        alternate_urls=plan.urls[1:],
        server_hostname=plan.server_hostname,
        username=endpoint.username,
        password=endpoint.password,
        ca_pem=endpoint.ca_pem,
        api_key=endpoint.api_key,
    )


def runs_in_cluster(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs in a Pod: the kubelet sets ``KUBERNETES_SERVICE_HOST`` there."""
    env = os.environ if environ is None else environ
    return bool(env.get("KUBERNETES_SERVICE_HOST"))


def elasticsearch_factory(
    config: OperatorConfig, environ: Mapping[str, str] | None = None
) -> ElasticsearchApiFactory:
    """The Elasticsearch client factory for ``config``: every cluster at ``elasticsearch-url``
    when it is set; else, with ``elasticsearch-dial: endpoints``, at its Service's ready
    addresses; else in-cluster networking (the
    ``in-cluster-networking`` key; unset, on exactly when the operator runs in a Pod) dials the
    clusters' Services, else nothing is dialled (their names resolve only inside the cluster)."""
    if config.elasticsearch_url is not None:
        return redirected_elasticsearch(str(config.elasticsearch_url).rstrip("/"))
    if dials_ready_addresses(config):
        return ready_address_elasticsearch
    dial = config.in_cluster_networking
    if dial is None:
        dial = runs_in_cluster(environ)
    return aiohttp_elasticsearch if dial else out_of_cluster_elasticsearch


def dials_ready_addresses(config: OperatorConfig) -> bool:
    """Whether clusters are dialled at their Service's ready addresses, which each session then
    reads first: ``elasticsearch-dial: endpoints``, unless ``elasticsearch-url`` redirects every
    cluster (it keeps precedence, for the fault-injection tests' one fake Elasticsearch)."""
    return (
        config.elasticsearch_url is None
        and config.elasticsearch_dial is ElasticsearchDial.ENDPOINTS
    )


def redirected_elasticsearch(url: str) -> ElasticsearchApiFactory:
    """A factory dialling ``url`` for every cluster (the ``elasticsearch-url`` key), with each
    cluster's own credentials."""

    def factory(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
        # Over TLS the certificate is still verified against the cluster's CA, but not its
        # name: it names the cluster's Service, not this forwarded address.
        return AiohttpElasticsearchClient(
            url=url,
            username=endpoint.username,
            password=endpoint.password,
            ca_pem=endpoint.ca_pem,
            check_hostname=False,
            api_key=endpoint.api_key,
        )

    return factory


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
