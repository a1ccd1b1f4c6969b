"""The few Elasticsearch API calls the operator makes, behind a protocol so tests can fake the server.

Errors are translated into two types: :class:`ElasticsearchUnavailable` when the cluster cannot answer
(connection refused, TLS failure, timeout, 502/503/504) — callers report it as "not reachable" and
retry — and :class:`ElasticsearchError` when it answered with an error (bad credentials, bad request).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp

from stackflow.elastic.cluster_view import (
    allocation_from,
    health_from,
    nodes_from,
    shards_from,
    shutdown_answer_is_nodes_info,
    shutdown_api_missing,
    shutdowns_from,
    voting_exclusions_from,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    AllocationSettings,
    ClusterNode,
    NodeShutdown,
    Shard,
)
from stackflow.stack.elasticsearch.orchestration.snapshot import (
    ClusterHealth as OrchestrationHealth,
)

DEFAULT_TIMEOUT_SECONDS = 10.0
UNAVAILABLE_STATUSES = frozenset({502, 503, 504})


class ElasticsearchUnavailable(Exception):  # noqa: N818 - the name the controllers use
    """The cluster did not answer (network, TLS, timeout, or a gateway/unavailable status)."""


class ElasticsearchError(Exception):
    """The cluster answered with an error status."""

    def __init__(self, status: int, body: str) -> None:
        """Record the HTTP status and (truncated) body."""
        super().__init__(f"Elasticsearch answered {status}: {body[:500]}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class ClusterHealth:
    """The answer of ``GET /_cluster/health``."""

    status: str
    number_of_nodes: int
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiKey:
    """A created API key (``encoded`` is ``base64(id:api_key)``, the Authorization credential)."""

    id: str
    name: str
    api_key: str
    encoded: str


@dataclass(frozen=True)
class FileSettingsState:
    """The file-based settings version the cluster applied (None when it reports none) and errors."""

    version: int | None
    errors: Mapping[str, Any] | None = None


class ElasticsearchApi(Protocol):
    """The Elasticsearch calls the operator makes."""

    async def cluster_health(self) -> ClusterHealth:
        """Return the cluster's health."""
        ...

    async def get_license(self) -> dict[str, Any]:
        """Return the current license (the ``license`` object of ``GET /_license``)."""
        ...

    async def start_trial(self) -> dict[str, Any]:
        """Start the cluster's self-generated trial; return the answer."""
        ...

    async def put_license(self, license_: Mapping[str, Any]) -> dict[str, Any]:
        """Install ``license_`` (an Elasticsearch license object); return the answer."""
        ...

    async def create_api_key(
        self,
        *,
        name: str,
        role_descriptors: Mapping[str, Any],
        expiration: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ApiKey:
        """Create an API key."""
        ...

    async def invalidate_api_key(self, *, ids: Sequence[str] = (), name: str | None = None) -> int:
        """Invalidate API keys by id or name; return how many were invalidated."""
        ...

    async def file_settings_state(self) -> FileSettingsState:
        """Return the file-based settings state the cluster reports."""
        ...

    async def put_autoscaling_policy(self, name: str, policy: Mapping[str, Any]) -> None:
        """Create or replace the autoscaling policy ``name`` (``{"roles", "deciders"}``)."""
        ...

    async def delete_autoscaling_policies(self) -> None:
        """Delete every autoscaling policy (none there is not an error)."""
        ...

    async def autoscaling_capacity(self) -> dict[str, Any]:
        """Return the ``GET _autoscaling/capacity`` answer (``{"policies": {...}}``)."""

    async def put_cluster_settings(self, persistent: Mapping[str, Any]) -> dict[str, Any]:
        """Update persistent cluster settings (a ``None`` value removes the setting)."""
        ...

    async def create_cross_cluster_api_key(
        self, *, name: str, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> ApiKey:
        """Create a cross-cluster API key (8.10+)."""
        ...

    async def update_cross_cluster_api_key(
        self, key_id: str, *, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> None:
        """Update a cross-cluster API key's access and metadata in place."""
        ...

    async def active_api_keys(self, name: str) -> list[dict[str, Any]]:
        """Return the active API keys whose name matches ``name`` (wildcards allowed)."""
        ...

    async def cluster_uuid(self) -> str:
        """Return the cluster's UUID (``_na_`` while it has not formed)."""
        ...

    async def orchestration_health(self) -> OrchestrationHealth:
        """Return ``GET _cluster/health`` with the shard counters the orchestration reads."""
        ...

    async def nodes(self) -> tuple[ClusterNode, ...]:
        """Return every node of the cluster (``GET _nodes``): name, id, roles, version."""
        ...

    async def shards(self) -> tuple[Shard, ...]:
        """Return every shard copy (``GET _cat/shards``)."""
        ...

    async def allocation_settings(self) -> AllocationSettings:
        """Return the transient shard allocation settings."""
        ...

    async def put_transient_settings(self, settings: Mapping[str, str | None]) -> None:
        """Update transient cluster settings (a ``None`` value removes the setting)."""
        ...

    async def flush(self) -> None:
        """Flush every index (``POST _flush``)."""
        ...

    async def voting_exclusions(self) -> tuple[str, ...]:
        """Return the names of the nodes excluded from the voting configuration."""
        ...

    async def add_voting_exclusions(self, node_names: Sequence[str]) -> None:
        """Exclude ``node_names`` from the voting configuration."""
        ...

    async def clear_voting_exclusions(self) -> None:
        """Clear the voting configuration exclusions without waiting for the nodes to leave."""
        ...

    async def node_shutdowns(self) -> tuple[NodeShutdown, ...] | None:
        """Return the node shutdown records; None when the cluster has no node shutdown API."""
        ...

    async def put_node_shutdown(
        self, node_id: str, *, type: str, reason: str, allocation_delay: str | None = None
    ) -> None:
        """Request a shutdown of node ``node_id`` (``restart`` or ``remove``)."""
        ...

    async def delete_node_shutdown(self, node_id: str) -> None:
        """Delete the shutdown record of node ``node_id`` (none there is not an error)."""
        ...


class _NotConnectedError(Exception):
    """No connection to one URL could be made (its cause says why); nothing was sent."""


def tls_context(ca_pem: bytes | None, *, check_hostname: bool = True) -> ssl.SSLContext:
    """Return a client TLS context trusting only ``ca_pem`` (system CAs when None)."""
    if ca_pem is None:
        return ssl.create_default_context()
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.check_hostname = check_hostname
    return context


class AiohttpElasticsearchClient:
    """:class:`ElasticsearchApi` over aiohttp: basic auth, a private CA, timeouts.

    Given more than one URL (``alternate_urls``), a call that cannot connect to one (refused,
    unreachable, TLS handshake or certificate refused) tries the next, starting from the one that
    last answered. Only a failure to connect moves on: nothing was sent yet, so even a ``POST``
    is safe to send elsewhere, whereas a call that failed after it was sent may have been applied.
    """

    def __init__(
        self,
        *,
        url: str,
        username: str,
        password: str,
        ca_pem: bytes | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        check_hostname: bool = True,
        api_key: str | None = None,
        alternate_urls: Sequence[str] = (),
        server_hostname: str | None = None,
    ) -> None:
        """Prepare a client for ``url`` (``https://<es>-es-internal-http.<ns>.svc:9200``);
        with ``api_key`` (encoded) it authenticates as that key, not as the user.

        ``alternate_urls`` are dialled in turn when ``url`` cannot be connected to.
        ``server_hostname`` is the name the server's certificate must carry (and the TLS server
        name sent) when the URLs name an address rather than that name: a Pod's IP address.
        """
        self._urls = tuple(candidate.rstrip("/") for candidate in (url, *alternate_urls))
        self._preferred = 0
        if api_key is not None:
            self._headers = {"Authorization": f"ApiKey {api_key}"}
        else:
            credentials = base64.b64encode(f"{username}:{password}".encode()).decode()
            self._headers = {"Authorization": f"Basic {credentials}"}
        self._ssl: ssl.SSLContext | bool = (
            tls_context(ca_pem, check_hostname=check_hostname) if url.startswith("https") else False
        )
        self._server_hostname = server_hostname if self._ssl is not False else None
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AiohttpElasticsearchClient:
        """Open the HTTP session."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the HTTP session."""
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session (a later call opens a new one)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _session_for_call(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers, timeout=self._timeout)
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        failures: list[str] = []
        count = len(self._urls)
        for offset in range(count):
            index = (self._preferred + offset) % count
            try:
                payload = await self._request_at(
                    self._urls[index], method, path, params=params, body=body
                )
            except _NotConnectedError as failure:
                shown = repr(failure.__cause__)
                failures.append(f"{self._urls[index]}: {shown}" if count > 1 else shown)
                continue
            self._preferred = index
            return payload
        raise ElasticsearchUnavailable(f"{method} {path}: {'; '.join(failures)}")

    async def _request_at(
        self,
        url: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """One call at one URL; `_NotConnectedError` when no connection could be made."""
        try:
            async with self._session_for_call().request(
                method,
                f"{url}{path}",
                params=params,
                json=body,
                ssl=self._ssl,
                server_hostname=self._server_hostname,
            ) as response:
                text = await response.text()
                if response.status in UNAVAILABLE_STATUSES:
                    raise ElasticsearchUnavailable(
                        f"{method} {path}: Elasticsearch answered {response.status}"
                    )
                if response.status >= 400:
                    raise ElasticsearchError(response.status, text)
                try:
                    payload = await response.json(content_type=None)
                except ValueError as error:
                    raise ElasticsearchError(response.status, text) from error
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
            raise _NotConnectedError from error
        except (TimeoutError, aiohttp.ClientError, ssl.SSLError, OSError) as error:
            raise ElasticsearchUnavailable(f"{method} {path}: {error!r}") from error
        return payload if isinstance(payload, dict) else {"value": payload}

    async def cluster_health(self) -> ClusterHealth:
        """Return the cluster's health."""
        payload = await self._request("GET", "/_cluster/health")
        return ClusterHealth(
            status=str(payload.get("status", "unknown")),
            number_of_nodes=int(payload.get("number_of_nodes", 0)),
            raw=payload,
        )

    async def get_license(self) -> dict[str, Any]:
        """Return the current license object."""
        payload = await self._request("GET", "/_license")
        license_ = payload.get("license")
        return dict(license_) if isinstance(license_, dict) else {}

    async def start_trial(self) -> dict[str, Any]:
        """Start the cluster's self-generated trial (acknowledged)."""
        return await self._request("POST", "/_license/start_trial", params={"acknowledge": "true"})

    async def put_license(self, license_: Mapping[str, Any]) -> dict[str, Any]:
        """Install ``license_`` (acknowledged)."""
        return await self._request(
            "PUT",
            "/_license",
            params={"acknowledge": "true"},
            body={"licenses": [dict(license_)]},
        )

    async def create_api_key(
        self,
        *,
        name: str,
        role_descriptors: Mapping[str, Any],
        expiration: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ApiKey:
        """Create an API key."""
        body: dict[str, Any] = {"name": name, "role_descriptors": dict(role_descriptors)}
        if expiration is not None:
            body["expiration"] = expiration
        if metadata is not None:
            body["metadata"] = dict(metadata)
        payload = await self._request("POST", "/_security/api_key", body=body)
        key_id = str(payload.get("id", ""))
        secret = str(payload.get("api_key", ""))
        encoded = str(
            payload.get("encoded") or base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        )
        return ApiKey(
            id=key_id, name=str(payload.get("name", name)), api_key=secret, encoded=encoded
        )

    async def invalidate_api_key(self, *, ids: Sequence[str] = (), name: str | None = None) -> int:
        """Invalidate API keys by id or name; return how many were invalidated."""
        body: dict[str, Any] = {}
        if ids:
            body["ids"] = list(ids)
        if name is not None:
            body["name"] = name
        payload = await self._request("DELETE", "/_security/api_key", body=body)
        return len(payload.get("invalidated_api_keys") or [])

    async def file_settings_state(self) -> FileSettingsState:
        """Return the file-based settings version and errors from the cluster state."""
        payload = await self._request(
            "GET",
            "/_cluster/state/metadata",
            params={"filter_path": "metadata.reserved_state.file_settings"},
        )
        file_settings = (
            ((payload.get("metadata") or {}).get("reserved_state") or {}).get("file_settings")
        ) or {}
        version = file_settings.get("version")
        return FileSettingsState(
            version=int(version) if version is not None else None,
            errors=file_settings.get("errors"),
        )

    async def put_autoscaling_policy(self, name: str, policy: Mapping[str, Any]) -> None:
        """Create or replace the autoscaling policy ``name``."""
        await self._request("PUT", f"/_autoscaling/policy/{quote(name, safe='')}", body=policy)

    async def delete_autoscaling_policies(self) -> None:
        """Delete every autoscaling policy, as ECK does before it puts the declared ones."""
        try:
            await self._request("DELETE", "/_autoscaling/policy/*")
        except ElasticsearchError as error:
            # No policy to delete: Elasticsearch answers 404 for the wildcard.
            if error.status != HTTPStatus.NOT_FOUND:
                raise

    async def autoscaling_capacity(self) -> dict[str, Any]:
        """Return the autoscaling capacity of every policy."""
        return await self._request("GET", "/_autoscaling/capacity")

    async def put_cluster_settings(self, persistent: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT /_cluster/settings`` with ``persistent`` (``None`` removes a setting)."""
        return await self._request(
            "PUT", "/_cluster/settings", body={"persistent": dict(persistent)}
        )

    async def create_cross_cluster_api_key(
        self, *, name: str, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> ApiKey:
        """``POST /_security/cross_cluster/api_key``."""
        payload = await self._request(
            "POST",
            "/_security/cross_cluster/api_key",
            body={"name": name, "access": dict(access), "metadata": dict(metadata)},
        )
        key_id = str(payload.get("id", ""))
        secret = str(payload.get("api_key", ""))
        encoded = str(
            payload.get("encoded") or base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        )
        return ApiKey(
            id=key_id, name=str(payload.get("name", name)), api_key=secret, encoded=encoded
        )

    async def update_cross_cluster_api_key(
        self, key_id: str, *, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> None:
        """``PUT /_security/cross_cluster/api_key/<id>``."""
        await self._request(
            "PUT",
            f"/_security/cross_cluster/api_key/{key_id}",
            body={"access": dict(access), "metadata": dict(metadata)},
        )

    async def active_api_keys(self, name: str) -> list[dict[str, Any]]:
        """``GET /_security/api_key?name=<name>&active_only=true``: the keys' documents."""
        payload = await self._request(
            "GET", "/_security/api_key", params={"name": name, "active_only": "true"}
        )
        keys = payload.get("api_keys") or []
        return [dict(key) for key in keys if isinstance(key, dict)]

    async def cluster_uuid(self) -> str:
        """``GET /_cluster/state/metadata``: the cluster's UUID (``GET /`` is not served by the
        minimal distribution)."""
        payload = await self._request(
            "GET", "/_cluster/state/metadata", params={"filter_path": "metadata.cluster_uuid"}
        )
        return str((payload.get("metadata") or {}).get("cluster_uuid", ""))

    async def orchestration_health(self) -> OrchestrationHealth:
        """``GET /_cluster/health``: status and shard counters."""
        return health_from(await self._request("GET", "/_cluster/health"))

    async def nodes(self) -> tuple[ClusterNode, ...]:
        """``GET /_nodes``, only the names, roles and versions."""
        payload = await self._request(
            "GET",
            "/_nodes",
            params={"filter_path": "nodes.*.name,nodes.*.roles,nodes.*.version"},
        )
        return nodes_from(payload)

    async def shards(self) -> tuple[Shard, ...]:
        """``GET /_cat/shards?format=json``."""
        payload = await self._request(
            "GET", "/_cat/shards", params={"format": "json", "h": "index,shard,prirep,state,node"}
        )
        return shards_from(payload.get("value"))

    async def allocation_settings(self) -> AllocationSettings:
        """``GET /_cluster/settings?flat_settings=true``, the transient allocation settings."""
        payload = await self._request("GET", "/_cluster/settings", params={"flat_settings": "true"})
        return allocation_from(payload)

    async def put_transient_settings(self, settings: Mapping[str, str | None]) -> None:
        """``PUT /_cluster/settings`` with ``transient`` settings."""
        await self._request("PUT", "/_cluster/settings", body={"transient": dict(settings)})

    async def flush(self) -> None:
        """``POST /_flush``."""
        await self._request("POST", "/_flush")

    async def voting_exclusions(self) -> tuple[str, ...]:
        """``GET /_cluster/state/metadata``: the voting configuration exclusions."""
        payload = await self._request(
            "GET",
            "/_cluster/state/metadata",
            params={"filter_path": "metadata.cluster_coordination.voting_config_exclusions"},
        )
        return voting_exclusions_from(payload)

    async def add_voting_exclusions(self, node_names: Sequence[str]) -> None:
        """``POST /_cluster/voting_config_exclusions?node_names=...``."""
        await self._request(
            "POST",
            "/_cluster/voting_config_exclusions",
            params={"node_names": ",".join(node_names), "timeout": "30s"},
        )

    async def clear_voting_exclusions(self) -> None:
        """``DELETE /_cluster/voting_config_exclusions?wait_for_removal=false``."""
        await self._request(
            "DELETE", "/_cluster/voting_config_exclusions", params={"wait_for_removal": "false"}
        )

    async def node_shutdowns(self) -> tuple[NodeShutdown, ...] | None:
        """``GET /_nodes/shutdown``; None when the cluster has no node shutdown API."""
        try:
            payload = await self._request("GET", "/_nodes/shutdown")
        except ElasticsearchError as error:
            if shutdown_api_missing(error.status, error.body):
                return None
            raise
        if shutdown_answer_is_nodes_info(payload):
            return None
        return shutdowns_from(payload)

    async def put_node_shutdown(
        self, node_id: str, *, type: str, reason: str, allocation_delay: str | None = None
    ) -> None:
        """``PUT /_nodes/<id>/shutdown``."""
        body: dict[str, Any] = {"type": type, "reason": reason}
        if allocation_delay is not None:
            body["allocation_delay"] = allocation_delay
        await self._request("PUT", f"/_nodes/{quote(node_id, safe='')}/shutdown", body=body)

    async def delete_node_shutdown(self, node_id: str) -> None:
        """``DELETE /_nodes/<id>/shutdown`` (a 404 is not an error)."""
        try:
            await self._request("DELETE", f"/_nodes/{quote(node_id, safe='')}/shutdown")
        except ElasticsearchError as error:
            if error.status != HTTPStatus.NOT_FOUND:
                raise


class NotDialledElasticsearch:
    """:class:`ElasticsearchApi` of a cluster the operator has nowhere to dial: never dials.

    Every call answers "unavailable" at once with the reason, so the cluster is reported not
    reachable, as when it does not answer, and its health is derived from its Pods.
    """

    def __init__(self, reason: str) -> None:
        """Remember why nothing is dialled (for the message)."""
        self._reason = reason

    def _unavailable(self, path: str) -> ElasticsearchUnavailable:
        return ElasticsearchUnavailable(f"{path}: {self._reason}")

    async def cluster_health(self) -> ClusterHealth:
        """Unavailable."""
        raise self._unavailable("GET /_cluster/health")

    async def get_license(self) -> dict[str, Any]:
        """Unavailable."""
        raise self._unavailable("GET /_license")

    async def start_trial(self) -> dict[str, Any]:
        """Unavailable."""
        raise self._unavailable("POST /_license/start_trial")

    async def put_license(self, license_: Mapping[str, Any]) -> dict[str, Any]:
        """Unavailable."""
        raise self._unavailable("PUT /_license")

    async def create_api_key(
        self,
        *,
        name: str,
        role_descriptors: Mapping[str, Any],
        expiration: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ApiKey:
        """Unavailable."""
        raise self._unavailable("POST /_security/api_key")

    async def invalidate_api_key(self, *, ids: Sequence[str] = (), name: str | None = None) -> int:
        """Unavailable."""
        raise self._unavailable("DELETE /_security/api_key")

    async def file_settings_state(self) -> FileSettingsState:
        """Unavailable."""
        raise self._unavailable("GET /_cluster/state")

    async def put_autoscaling_policy(self, name: str, policy: Mapping[str, Any]) -> None:
        """Unavailable."""
        raise self._unavailable(f"PUT /_autoscaling/policy/{name}")

    async def delete_autoscaling_policies(self) -> None:
        """Unavailable."""
        raise self._unavailable("DELETE /_autoscaling/policy/*")

    async def autoscaling_capacity(self) -> dict[str, Any]:
        """Unavailable."""
        raise self._unavailable("GET /_autoscaling/capacity")

    async def put_cluster_settings(self, persistent: Mapping[str, Any]) -> dict[str, Any]:
        """Unavailable."""
        raise self._unavailable("PUT /_cluster/settings")

    async def create_cross_cluster_api_key(
        self, *, name: str, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> ApiKey:
        """Unavailable."""
        raise self._unavailable("POST /_security/cross_cluster/api_key")

    async def update_cross_cluster_api_key(
        self, key_id: str, *, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> None:
        """Unavailable."""
        raise self._unavailable("PUT /_security/cross_cluster/api_key")

    async def active_api_keys(self, name: str) -> list[dict[str, Any]]:
        """Unavailable."""
        raise self._unavailable("GET /_security/api_key")

    async def cluster_uuid(self) -> str:
        """Unavailable."""
        raise self._unavailable("GET /")

    async def orchestration_health(self) -> OrchestrationHealth:
        """Unavailable."""
        raise self._unavailable("GET /_cluster/health")

    async def nodes(self) -> tuple[ClusterNode, ...]:
        """Unavailable."""
        raise self._unavailable("GET /_nodes")

    async def shards(self) -> tuple[Shard, ...]:
        """Unavailable."""
        raise self._unavailable("GET /_cat/shards")

    async def allocation_settings(self) -> AllocationSettings:
        """Unavailable."""
        raise self._unavailable("GET /_cluster/settings")

    async def put_transient_settings(self, settings: Mapping[str, str | None]) -> None:
        """Unavailable."""
        raise self._unavailable("PUT /_cluster/settings")

    async def flush(self) -> None:
        """Unavailable."""
        raise self._unavailable("POST /_flush")

    async def voting_exclusions(self) -> tuple[str, ...]:
        """Unavailable."""
        raise self._unavailable("GET /_cluster/state/metadata")

    async def add_voting_exclusions(self, node_names: Sequence[str]) -> None:
        """Unavailable."""
        raise self._unavailable("POST /_cluster/voting_config_exclusions")

    async def clear_voting_exclusions(self) -> None:
        """Unavailable."""
        raise self._unavailable("DELETE /_cluster/voting_config_exclusions")

    async def node_shutdowns(self) -> tuple[NodeShutdown, ...] | None:
        """Unavailable."""
        raise self._unavailable("GET /_nodes/shutdown")

    async def put_node_shutdown(
        self, node_id: str, *, type: str, reason: str, allocation_delay: str | None = None
    ) -> None:
        """Unavailable."""
        raise self._unavailable("PUT /_nodes/<id>/shutdown")

    async def delete_node_shutdown(self, node_id: str) -> None:
        """Unavailable."""
        raise self._unavailable("DELETE /_nodes/<id>/shutdown")


class OutOfClusterElasticsearch(NotDialledElasticsearch):
    """:class:`ElasticsearchApi` for an operator running outside the cluster: never dials.

    A cluster's address is its in-cluster Service name (``<es>-es-internal-http.<ns>.svc``), which
    only the cluster's DNS resolves. Outside a Pod, asking the machine's resolver for it leaks
    lookups to whatever name server the machine has and, where that server is slow, stalls every
    reconcile behind the resolver's timeouts. Every call answers "unavailable" at once instead.
    """

    def __init__(self, url: str) -> None:
        """Remember the address that is not dialled (for the message)."""
        super().__init__(f"{url} is an in-cluster address and in-cluster networking is off")
