"""Where and how the operator dials a cluster's HTTP API: the Elasticsearch client factory.

An adapter: ``stackflow run`` picks one factory from the configuration (`elasticsearch_factory`)
and the reconciles' context calls it for every session. The one ``elasticsearch-url`` redirects
every cluster; else, with ``elasticsearch-dial: endpoints``, a cluster is dialled at the ready
addresses of its internal HTTP Service (``ElasticsearchEndpoint.dial``, which the caller reads
before building the client); else at the Service's name when in-cluster networking is on, and
nowhere when it is off (those names resolve only inside the cluster).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from stackflow.config import ElasticsearchDial, OperatorConfig
from stackflow.elastic.client import (
    AiohttpElasticsearchClient,
    ElasticsearchApi,
    NotDialledElasticsearch,
    OutOfClusterElasticsearch,
)
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.dial import DialPlan

__all__ = [
    "ElasticsearchApiFactory",
    "ElasticsearchEndpoint",
    "aiohttp_elasticsearch",
    "dials_ready_addresses",
    "elasticsearch_factory",
    "out_of_cluster_elasticsearch",
    "ready_address_elasticsearch",
    "redirected_elasticsearch",
    "runs_in_cluster",
]


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
