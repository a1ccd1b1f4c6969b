"""Building and closing the kubernetes_asyncio ``ApiClient`` Stackflow talks through."""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import rest as k8s_rest

from stackflow.config import UnusableSettingError

__all__ = [
    "REQUEST_CONNECTIONS",
    "TimedApiClient",
    "api_client_session",
    "close_api_client",
    "make_api_client",
    "mark_informer_task",
]

# The environment variable Kubernetes sets in every Pod; its presence selects in-cluster config.
_IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


#: Connections of the pool every request but a watch shares: enough for the reconciles' bursts
#: of concurrent reads, few enough that their TLS state stays small (asyncio keeps a 256 KiB read
#: buffer per TLS connection; with no cap, 200 namespaces held 170 connections and 42 MiB of them).
REQUEST_CONNECTIONS = 32


#: The sessions' read buffer, as kubernetes_asyncio sizes it: a watch event carries a whole object,
#: up to etcd's 1.5 MiB request limit, beyond aiohttp's default buffer.
_READ_BUFFER_BYTES = 2**21


#: True in an informer's task: its lists go through the watches' pool too, so that each watch
#: takes over the connection its list has just used (a TLS handshake per informer, not two).
_INFORMER_TASK: ContextVar[bool] = ContextVar("stackflow_informer_task", default=False)


def mark_informer_task() -> None:
    """Send every request of the current task (and of the tasks it starts) through the watches'
    pool: an informer's lists and watches share its connections."""
    _INFORMER_TASK.set(True)


class TimedApiClient(k8s_client.ApiClient):
    """An ``ApiClient`` whose requests default to a total timeout, and whose watches have a
    connection pool of their own.

    kubernetes_asyncio passes an explicit, unbounded ``aiohttp.ClientTimeout`` when a call
    gives no ``_request_timeout``, so a hung API server would hang every caller; this
    subclass fills in the configured timeout instead. Watches pass their own.

    Over HTTP/1.1 every open watch holds a connection for as long as it runs, and the operator
    keeps one per watched kind (per namespace with a static list: dozens). In one capped pool
    the watches took every connection and the Lease renewals queued until they timed out; in one
    uncapped pool every burst of concurrent reads opened connections of its own. So watches (and
    the lists of an informer's task, ``mark_informer_task``) get a pool with no cap, and every
    other request the ``REQUEST_CONNECTIONS`` of the other.
    """

    def __init__(self, configuration: Any, *, request_timeout: float) -> None:
        """Build a client for ``configuration`` with a default request timeout in seconds."""
        super().__init__(configuration)
        self.request_timeout = request_timeout
        self.watch_rest_client = k8s_rest.RESTClientObject(configuration, maxsize=0)
        for rest_client in (self.rest_client, self.watch_rest_client):
            rest_client.pool_manager = _session_without_environment_lookups(
                rest_client.pool_manager
            )

    async def close(self) -> None:
        """Close both connection pools."""
        await super().close()
        await self.watch_rest_client.close()

    async def request(
        self,
        method: str,
        url: str,
        query_params: Any = None,
        headers: Any = None,
        post_params: Any = None,
        body: Any = None,
        _preload_content: bool = True,
        _request_timeout: Any = None,
    ) -> Any:
        """Send one request, defaulting the timeout to ``request_timeout``; a watch, and an
        informer's list, go through the watches' pool."""
        timeout = _request_timeout if _request_timeout is not None else self.request_timeout
        watch = method == "GET" and bool(query_params) and ("watch", "true") in query_params
        if watch or (method == "GET" and _INFORMER_TASK.get()):
            return await self.watch_rest_client.GET(
                url,
                query_params=query_params,
                _preload_content=_preload_content,
                _request_timeout=timeout,
                headers=headers,
            )
        return await super().request(
            method,
            url,
            query_params=query_params,
            headers=headers,
            post_params=post_params,
            body=body,
            _preload_content=_preload_content,
            _request_timeout=timeout,
        )


def _session_without_environment_lookups(session: aiohttp.ClientSession) -> aiohttp.ClientSession:
    """The same connection pool in a session that does not read the environment per request.

    kubernetes_asyncio opens its session with ``trust_env=True``, and aiohttp then looks for
    ``~/.netrc`` and the proxy variables in a worker thread on every request: two thread-pool
    round trips before each request is sent. The proxy is read once instead
    (``proxy_from_environment``, into the configuration); a netrc is not read at all, as
    client-go reads none.
    """
    connector = session.connector
    session.detach()  # hands the connector over without closing it
    return aiohttp.ClientSession(
        connector=connector, trust_env=False, read_bufsize=_READ_BUFFER_BYTES
    )


def proxy_from_environment(server: str) -> str | None:
    """The proxy the environment names for the API server at ``server`` (a URL), or None.

    ``HTTPS_PROXY``/``HTTP_PROXY`` by the server's scheme, none when ``NO_PROXY`` covers its
    host: what aiohttp looked up on every request, read once.
    """
    url = urllib.parse.urlsplit(server)
    if not url.hostname or urllib.request.proxy_bypass(url.hostname):
        return None
    return urllib.request.getproxies_environment().get(url.scheme)


async def make_api_client(
    *,
    kubeconfig: Path | None,
    context: str | None,
    timeout: float,  # noqa: ASYNC109 - the per-request timeout, not this call's
) -> TimedApiClient:
    """Build an API client from a kubeconfig, or from the in-cluster service account.

    ``kubeconfig`` None means: in-cluster config when running in a Pod, else the default
    kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``). ``timeout`` bounds every request
    that does not set its own (seconds). Close the client with ``close_api_client``.
    """
    configuration = k8s_client.Configuration()
    # The requests' pool (watches have their own: TimedApiClient).
    configuration.connection_pool_maxsize = REQUEST_CONNECTIONS
    if kubeconfig is None and os.environ.get(_IN_CLUSTER_ENV):
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return _timed_client(configuration, timeout=timeout)
    # One stat at start-up, before anything else runs on the loop.
    if kubeconfig is not None and not kubeconfig.is_file():  # noqa: ASYNC240
        raise UnusableSettingError("--kubeconfig", f"{kubeconfig} does not exist or is not a file")
    try:
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig) if kubeconfig is not None else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except Exception as error:  # the loader raises anything from TypeError to its own kinds
        where = str(kubeconfig) if kubeconfig is not None else "the default kubeconfig"
        reason = str(error) or type(error).__name__
        if isinstance(error, TypeError | AttributeError | KeyError):
            reason = "not a kubeconfig (no clusters, users and contexts)"
        raise UnusableSettingError("--kubeconfig", f"{where} cannot be used: {reason}") from None
    return _timed_client(configuration, timeout=timeout)


def _timed_client(configuration: Any, *, timeout: float) -> TimedApiClient:
    """The client for a loaded configuration; a kubeconfig's ``proxy-url`` comes before the
    environment's proxy."""
    if not configuration.proxy:
        configuration.proxy = proxy_from_environment(configuration.host)
    return TimedApiClient(configuration, request_timeout=timeout)


async def close_api_client(api_client: k8s_client.ApiClient) -> None:
    """Close the client's HTTP session (idempotent)."""
    await api_client.close()


@asynccontextmanager
async def api_client_session(
    *,
    kubeconfig: Path | None,
    context: str | None,
    timeout: float,  # noqa: ASYNC109 - the per-request timeout, not this call's
) -> AsyncIterator[TimedApiClient]:
    """``make_api_client`` as an async context manager that closes the client on exit."""
    api_client = await make_api_client(kubeconfig=kubeconfig, context=context, timeout=timeout)
    try:
        yield api_client
    finally:
        await close_api_client(api_client)
