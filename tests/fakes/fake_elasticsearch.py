"""A small fake Elasticsearch HTTP server: the few API calls the operator makes, scriptable, recorded.

Binds 127.0.0.1 on a free port, optionally serves TLS with a given certificate, checks basic auth, and
records every call so tests can assert on what the client sent. ``unreachable_elasticsearch`` is a
client factory for tests that do not care about the cluster's API: its clusters never answer.

Its answers are checked against a real node's by ``tests/elasticsearch/test_fake_matches_real.py``:
status codes and body shapes agree, Elasticsearch's error shape included, except for the
differences ``FAKE_ELASTICSEARCH_DIFFERENCES.md`` (next to this module) lists with their reasons.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import fnmatch
import json
import ssl
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from activities.context import ElasticsearchEndpoint
from stackflow.elastic import ElasticsearchApi, ElasticsearchUnavailable
from stackflow.elastic.client import ApiKey, ClusterHealth, FileSettingsState

REQUEST_BODY = web.RequestKey("request_body", dict[str, Any])
#: The caller's Authorization header: with ``any_credentials`` one fake stands for many clusters,
#: each calling with its own internal user, so the keys a cluster lists are its own.
REQUEST_CALLER = web.RequestKey("request_caller", str)

#: The cluster name in the fake's answers (health, and a self-generated license's ``issued_to``).
CLUSTER_NAME = "fake"
#: What Elasticsearch names in ``WWW-Authenticate`` when it refuses a request's credentials (the
#: token service, hence ``Bearer``, is on with HTTPS, as the operator's clusters serve).
AUTHENTICATE_CHALLENGES = (
    'Basic realm="security", charset="UTF-8"',
    'Bearer realm="security"',
    "ApiKey",
)
#: The dynamic cluster settings the fake accepts (fnmatch patterns; ``*`` spans dots): the
#: families the operator and the tests write. Any other name is refused as Elasticsearch refuses
#: a setting it does not know ("persistent setting [x], not recognized").
KNOWN_CLUSTER_SETTINGS = (
    "cluster.remote.*.seeds",
    "cluster.remote.*.mode",
    "cluster.remote.*.proxy_address",
    "cluster.remote.*.server_name",
    "cluster.remote.*.skip_unavailable",
    "cluster.remote.*.proxy_socket_connections",
    "cluster.remote.*.node_connections",
    "cluster.remote.*.transport.*",
    "cluster.routing.*",
    "cluster.max_shards_per_node*",
    "cluster.blocks.*",
    "cluster.info.*",
    "cluster.indices.*",
    "action.*",
    "indices.*",
    "ingest.*",
    "logger.*",
    "search.*",
    "snapshot.*",
    "xpack.*",
)
#: A self-generated trial lasts 30 days.
TRIAL_DAYS = 30
_DAY_MILLIS = 24 * 3600 * 1000


def _iso_millis(millis: int) -> str:
    """An epoch-millisecond instant as Elasticsearch prints dates (``2026-01-05T10:00:00.123Z``)."""
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def self_generated_license(type_: str) -> dict[str, Any]:
    """A license as Elasticsearch generates it for itself: ``basic``, or a 30-day ``trial``."""
    issued = int(time.time() * 1000)
    license_: dict[str, Any] = {
        "status": "active",
        "uid": str(uuid.uuid4()),
        "type": type_,
        "issue_date": _iso_millis(issued),
        "issue_date_in_millis": issued,
    }
    if type_ == "trial":
        expiry = issued + TRIAL_DAYS * _DAY_MILLIS
        license_ |= {"expiry_date": _iso_millis(expiry), "expiry_date_in_millis": expiry}
    return license_ | {
        "max_nodes": 1000,
        "max_resource_units": None,
        "issued_to": CLUSTER_NAME,
        "issuer": "elasticsearch",
        "start_date_in_millis": -1,
    }


def es_error(
    status: int,
    type_: str,
    reason: str | None,
    *,
    details: Mapping[str, Any] | None = None,
) -> web.Response:
    """An error answer in Elasticsearch's shape: ``{"error": {"root_cause": [...], "type",
    "reason", ...}, "status"}``; ``details`` are further fields of the cause (``header``)."""
    cause = {"type": type_, "reason": reason, **dict(details or {})}
    error: dict[str, Any] = {"root_cause": [cause], **cause}
    return web.json_response({"error": error, "status": status}, status=status)


def _unauthenticated(reason: str, **details: Any) -> web.Response:
    """Elasticsearch's 401: a ``security_exception`` carrying its challenges, in the body and as
    ``WWW-Authenticate`` headers."""
    response = es_error(
        401,
        "security_exception",
        reason,
        details={**details, "header": {"WWW-Authenticate": list(AUTHENTICATE_CHALLENGES)}},
    )
    for challenge in AUTHENTICATE_CHALLENGES:
        response.headers.add("WWW-Authenticate", challenge)
    return response


@dataclass(frozen=True)
class RecordedCall:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass
class FakeElasticsearchState:
    """What the fake answers; tests change it between calls."""

    health: str = "green"
    number_of_nodes: int = 3
    license: dict[str, Any] = field(default_factory=lambda: self_generated_license("basic"))
    unavailable: bool = False
    #: Seconds every answer is delayed (a slow cluster).
    latency: float = 0.0
    #: Elasticsearch runs a self-generated trial at most once per cluster.
    trial_activated: bool = False
    file_settings_version: int | None = None
    file_settings_errors: dict[str, Any] | None = None
    api_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Autoscaling policies by name, as put (``{"roles", "deciders"}``).
    autoscaling_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``GET _autoscaling/capacity`` answer's ``policies`` (tests set it); a policy that is
    #: put but absent here is answered with nothing required.
    autoscaling_capacity: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Persistent cluster settings, flat (``PUT _cluster/settings``; a null removes a setting),
    #: as sent (answers print them as Elasticsearch stores them: strings).
    persistent_settings: dict[str, Any] = field(default_factory=dict)
    #: Transient cluster settings, likewise.
    transient_settings: dict[str, Any] = field(default_factory=dict)


class FakeElasticsearch:
    """The fake server; use as ``async with FakeElasticsearch(...) as fake: fake.url``."""

    def __init__(
        self,
        *,
        username: str = "elastic",
        password: str = "changeme",
        cert_pem: bytes | None = None,
        key_pem: bytes | None = None,
        any_credentials: bool = False,
        port: int = 0,
        host: str = "127.0.0.1",
    ) -> None:
        """Configure credentials and, with ``cert_pem``/``key_pem``, TLS.

        ``any_credentials`` accepts every user (one fake standing in for many clusters, each with
        its own generated password); ``port`` binds a given port (a restart on the same address);
        ``host`` another loopback address (a Pod's IP, ``127.0.0.x``).
        """
        self.state = FakeElasticsearchState()
        self.calls: list[RecordedCall] = []
        self._credentials = (username, password)
        self._any_credentials = any_credentials
        self.port = port
        self.host = host
        self._tls = (cert_pem, key_pem) if cert_pem and key_pem else None
        self._runner: web.AppRunner | None = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        self.url = ""

    async def __aenter__(self) -> FakeElasticsearch:
        """Start serving."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop serving."""
        await self.stop()

    def _ssl_context(self) -> ssl.SSLContext | None:
        if self._tls is None:
            return None
        self._tempdir = tempfile.TemporaryDirectory()
        cert_path = Path(self._tempdir.name) / "tls.crt"
        key_path = Path(self._tempdir.name) / "tls.key"
        cert_path.write_bytes(self._tls[0] or b"")
        key_path.write_bytes(self._tls[1] or b"")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_path, key_path)
        return context

    async def start(self) -> None:
        """Bind ``host`` (127.0.0.1) on a free port, or ``port``, and serve."""
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/_cluster/health", self._health)
        app.router.add_get("/_license", self._get_license)
        app.router.add_put("/_license", self._put_license)
        app.router.add_post("/_license", self._put_license)
        app.router.add_post("/_license/start_trial", self._start_trial)
        app.router.add_post("/_security/api_key", self._create_api_key)
        app.router.add_put("/_security/api_key", self._create_api_key)
        app.router.add_delete("/_security/api_key", self._invalidate_api_key)
        app.router.add_get("/_security/api_key", self._get_api_keys)
        app.router.add_get("/_cluster/state/metadata", self._cluster_state)
        app.router.add_put("/_autoscaling/policy/{name}", self._put_autoscaling_policy)
        app.router.add_get("/_autoscaling/policy/{name}", self._get_autoscaling_policy)
        app.router.add_delete("/_autoscaling/policy/{name}", self._delete_autoscaling_policy)
        app.router.add_get("/_autoscaling/capacity", self._autoscaling_capacity)
        app.router.add_put("/_cluster/settings", self._put_cluster_settings)
        app.router.add_get("/_cluster/settings", self._get_cluster_settings)
        app.router.add_post("/_security/cross_cluster/api_key", self._create_cross_cluster_key)
        app.router.add_put(
            "/_security/cross_cluster/api_key/{key_id}", self._update_cross_cluster_key
        )
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl_context())
        try:
            await site.start()
        except OSError:
            await self.stop()  # the address is taken: leave nothing behind
            raise
        self.port = int(self._runner.addresses[0][1])
        self.url = f"{'https' if self._tls else 'http'}://{self.host}:{self.port}"

    async def stop(self) -> None:
        """Stop serving and remove the temporary certificate files."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def api_keys_named(self, name: str) -> dict[str, bool]:
        """The API keys of ``name`` created so far: id → whether it is still valid."""
        return {
            key_id: not key["invalidated"]
            for key_id, key in self.state.api_keys.items()
            if key["name"] == name
        }

    def calls_to(self, method: str, path: str) -> list[RecordedCall]:
        """Return the recorded calls of ``method`` on ``path``."""
        return [c for c in self.calls if c.method == method and c.path == path]

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.calls.append(RecordedCall(request.method, request.path, dict(request.query), body))
        expected = "Basic " + base64.b64encode(":".join(self._credentials).encode()).decode()
        if self.state.latency:
            await asyncio.sleep(self.state.latency)  # the injected slowness itself
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("ApiKey "):
            # An API key authenticates while it is valid, whatever ``any_credentials`` says.
            encoded = authorization.removeprefix("ApiKey ")
            if not self._valid_api_key(encoded):
                return _unauthenticated(
                    "unable to authenticate with provided credentials and anonymous access is "
                    "not allowed for this request",
                    additional_unsuccessful_credentials=f"API key: {_api_key_failure(encoded)}",
                )
        elif not self._any_credentials and authorization != expected:
            if not authorization:
                return _unauthenticated(
                    f"missing authentication credentials for REST request [{request.path}]"
                )
            user = _basic_user(authorization)
            return _unauthenticated(
                f"unable to authenticate user [{user}] for REST request [{request.path}]"
            )
        if self.state.unavailable:
            return es_error(503, "master_not_discovered_exception", None)
        request[REQUEST_BODY] = body if isinstance(body, dict) else {}
        request[REQUEST_CALLER] = request.headers.get("Authorization", "")
        response: web.StreamResponse = await handler(request)
        return response

    def _valid_api_key(self, encoded: str) -> bool:
        try:
            key_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            return False
        key = self.state.api_keys.get(key_id)
        return key is not None and not key["invalidated"] and secret == f"secret-{key_id}"

    async def _health(self, request: web.Request) -> web.Response:
        nodes = self.state.number_of_nodes
        return web.json_response(
            {
                "cluster_name": CLUSTER_NAME,
                "status": self.state.health,
                "timed_out": False,
                "number_of_nodes": nodes,
                "number_of_data_nodes": nodes,
                "active_primary_shards": 0,
                "active_shards": 0,
                "relocating_shards": 0,
                "initializing_shards": 0,
                "unassigned_shards": 0,
                "unassigned_primary_shards": 0,
                "delayed_unassigned_shards": 0,
                "number_of_pending_tasks": 0,
                "number_of_in_flight_fetch": 0,
                "task_max_waiting_in_queue_millis": 0,
                "active_shards_percent_as_number": 100.0,
            }
        )

    async def _get_license(self, request: web.Request) -> web.Response:
        return web.json_response({"license": self.state.license})

    async def _put_license(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        licenses = (body or {}).get("licenses")
        if not licenses:
            return es_error(400, "parse_exception", "failed to parse licenses expected field")
        # Any signature is accepted: the fake cannot verify Elastic's, and tests put licenses
        # with made-up ones (a real node refuses them; see FAKE_ELASTICSEARCH_DIFFERENCES.md).
        self.state.license = {**licenses[0], "status": "active"}
        return web.json_response({"acknowledged": True, "license_status": "valid"})

    async def _start_trial(self, request: web.Request) -> web.Response:
        if self.state.trial_activated:
            # What Elasticsearch answers to a second trial: 403, acknowledged, not started.
            return web.json_response(
                {
                    "acknowledged": True,
                    "trial_was_started": False,
                    "error_message": "Operation failed: Trial was already activated.",
                },
                status=403,
            )
        self.state.trial_activated = True
        self.state.license = self_generated_license("trial")
        return web.json_response({"acknowledged": True, "trial_was_started": True, "type": "trial"})

    async def _create_api_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        key_id = f"key-{len(self.state.api_keys) + 1}"
        secret = f"secret-{key_id}"
        name = str((body or {}).get("name", ""))
        self.state.api_keys[key_id] = {
            "name": name,
            "invalidated": False,
            "request": body,
            # Returned by GET, as Elasticsearch returns a key's metadata.
            "metadata": (body or {}).get("metadata") or {},
        }
        encoded = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        return web.json_response(
            {"id": key_id, "name": name, "api_key": secret, "encoded": encoded}
        )

    async def _invalidate_api_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        ids = set((body or {}).get("ids") or [])
        name = (body or {}).get("name")
        invalidated = []
        caller = request[REQUEST_CALLER]
        for key_id, key in self.state.api_keys.items():
            if key.get("caller", caller) != caller:
                continue  # another cluster's key
            if (key_id in ids or (name is not None and key["name"] == name)) and not key[
                "invalidated"
            ]:
                key["invalidated"] = True
                invalidated.append(key_id)
        return web.json_response(
            {
                "invalidated_api_keys": invalidated,
                "previously_invalidated_api_keys": [],
                "error_count": 0,
            }
        )

    def active_keys(self, prefix: str = "") -> dict[str, dict[str, Any]]:
        """The API keys not invalidated, whose name starts with ``prefix``, by id."""
        return {
            key_id: key
            for key_id, key in self.state.api_keys.items()
            if not key["invalidated"] and str(key["name"]).startswith(prefix)
        }

    async def _put_cluster_settings(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        updates = {
            "transient": _flatten(body.get("transient") or {}),
            "persistent": _flatten(body.get("persistent") or {}),
        }
        if not any(updates.values()):
            return es_error(
                400,
                "action_request_validation_exception",
                "Validation Failed: 1: no settings to update;",
            )
        # Elasticsearch checks the transient settings first and names the first unknown one of
        # a scope in sorted order.
        for scope, settings in updates.items():
            unknown = sorted(name for name in settings if not known_cluster_setting(name))
            if unknown:
                return es_error(
                    400,
                    "illegal_argument_exception",
                    f"{scope} setting [{unknown[0]}], not recognized",
                )
        stores = {
            "transient": self.state.transient_settings,
            "persistent": self.state.persistent_settings,
        }
        for scope, settings in updates.items():
            for setting, value in settings.items():
                if value is None:
                    stores[scope].pop(setting, None)
                else:
                    stores[scope][setting] = value
        # The answer echoes what was set (not what was removed), nested, as strings.
        applied = {
            scope: _nested({name: value for name, value in settings.items() if value is not None})
            for scope, settings in updates.items()
        }
        return web.json_response(
            {
                "acknowledged": True,
                "persistent": applied["persistent"],
                "transient": applied["transient"],
            }
        )

    async def _get_cluster_settings(self, request: web.Request) -> web.Response:
        render = _stored if request.query.get("flat_settings") == "true" else _nested
        return web.json_response(
            {
                "persistent": render(self.state.persistent_settings),
                "transient": render(self.state.transient_settings),
            }
        )

    async def _create_cross_cluster_key(self, request: web.Request) -> web.Response:
        body = request[REQUEST_BODY]
        key_id = f"key-{len(self.state.api_keys) + 1}"
        secret = f"secret-{key_id}"
        name = str(body.get("name", ""))
        self.state.api_keys[key_id] = {
            "name": name,
            "invalidated": False,
            "request": body,
            "type": "cross_cluster",
            "caller": request[REQUEST_CALLER],
            "access": body.get("access") or {},
            "metadata": body.get("metadata") or {},
        }
        encoded = base64.b64encode(f"{key_id}:{secret}".encode()).decode()
        return web.json_response(
            {"id": key_id, "name": name, "api_key": secret, "encoded": encoded}
        )

    async def _update_cross_cluster_key(self, request: web.Request) -> web.Response:
        key = self.state.api_keys.get(request.match_info["key_id"])
        if key is None or key["invalidated"] or key.get("caller") != request[REQUEST_CALLER]:
            reason = (
                f"no API key owned by requesting user found for ID [{request.match_info['key_id']}]"
            )
            return es_error(404, "resource_not_found_exception", reason)
        body = request[REQUEST_BODY]
        key["access"] = body.get("access") or {}
        key["metadata"] = body.get("metadata") or {}
        return web.json_response({"updated": True})

    async def _get_api_keys(self, request: web.Request) -> web.Response:
        # By id and by name (an Elasticsearch wildcard pattern), only the caller's own keys
        # (one fake stands in for every cluster), invalidated ones unless ``active_only``.
        wanted_id = request.query.get("id")
        pattern = request.query.get("name", "*")
        active_only = request.query.get("active_only") == "true"
        caller = request[REQUEST_CALLER]
        keys = [
            {
                "id": key_id,
                "name": key["name"],
                "invalidated": key["invalidated"],
                "metadata": key.get("metadata") or {},
            }
            for key_id, key in self.state.api_keys.items()
            if key.get("caller", caller) == caller
            and not (active_only and key["invalidated"])
            and (wanted_id is None or key_id == wanted_id)
            and fnmatch.fnmatchcase(str(key["name"]), pattern)
        ]
        return web.json_response({"api_keys": keys})

    async def _cluster_state(self, request: web.Request) -> web.Response:
        if self.state.file_settings_version is None:
            return web.json_response({})
        file_settings: dict[str, Any] = {
            "version": self.state.file_settings_version,
            "handlers": {},
            "errors": self.state.file_settings_errors,
        }
        return web.json_response({"metadata": {"reserved_state": {"file_settings": file_settings}}})

    async def _put_autoscaling_policy(self, request: web.Request) -> web.Response:
        self.state.autoscaling_policies[request.match_info["name"]] = request[REQUEST_BODY]
        return web.json_response({"acknowledged": True})

    async def _get_autoscaling_policy(self, request: web.Request) -> web.Response:
        policy = self.state.autoscaling_policies.get(request.match_info["name"])
        if policy is None:
            return _not_found(request.match_info["name"])
        return web.json_response(policy)

    async def _delete_autoscaling_policy(self, request: web.Request) -> web.Response:
        pattern = request.match_info["name"]
        matching = [
            name for name in self.state.autoscaling_policies if fnmatch.fnmatchcase(name, pattern)
        ]
        if not matching:
            return _not_found(pattern)
        for name in matching:
            del self.state.autoscaling_policies[name]
        return web.json_response({"acknowledged": True})

    async def _autoscaling_capacity(self, request: web.Request) -> web.Response:
        nothing: dict[str, Any] = {"node": {}, "total": {}}
        policies = {
            name: self.state.autoscaling_capacity.get(
                name,
                {
                    "required_capacity": nothing,
                    "current_capacity": nothing,
                    "current_nodes": [],
                    "deciders": {},
                },
            )
            for name in self.state.autoscaling_policies
        }
        return web.json_response({"policies": policies})


def _not_found(name: str) -> web.Response:
    """Elasticsearch's answer for an autoscaling policy that does not exist."""
    reason = f"autoscaling policy with name [{name}] does not exist"
    return es_error(404, "resource_not_found_exception", reason)


def _basic_user(authorization: str) -> str:
    """The user name of a ``Basic`` Authorization header ("" when it has none)."""
    try:
        decoded = base64.b64decode(authorization.removeprefix("Basic "), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[0]


def _api_key_failure(encoded: str) -> str:
    """Why Elasticsearch says an ``ApiKey`` credential failed (it names the key's id)."""
    try:
        key_id = base64.b64decode(encoded, validate=True).decode().partition(":")[0]
    except (binascii.Error, UnicodeDecodeError):
        return "the API key credential is malformed"
    return f"apikey authentication for id {key_id} encountered a failure"


def known_cluster_setting(name: str) -> bool:
    """Whether the fake accepts a dynamic cluster setting (see ``KNOWN_CLUSTER_SETTINGS``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in KNOWN_CLUSTER_SETTINGS)


def _setting_text(value: Any) -> Any:
    """A setting's value as Elasticsearch stores it: a string, or a list of strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return [_setting_text(item) for item in value]
    return value if isinstance(value, str) else str(value)


def _stored(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Flat settings as Elasticsearch prints them with ``flat_settings=true``."""
    return {name: _setting_text(value) for name, value in sorted(settings.items())}


def _nested(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Flat settings as Elasticsearch prints them by default: nested at the dots."""
    nested: dict[str, Any] = {}
    for name, value in sorted(settings.items()):
        *parents, leaf = name.split(".")
        node = nested
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break  # a setting that is also another's prefix: the shorter one is kept
            node = child
        else:
            node[leaf] = _setting_text(value)
    return nested


def _flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as Elasticsearch stores them: dotted keys."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


class UnreachableElasticsearch:
    """A client of a cluster that never answers: every call raises ``ElasticsearchUnavailable``.

    For activity tests that do not care about the cluster's HTTP API (the reconcile reports the
    cluster "not reachable" and derives health from Pod readiness), without a network round trip.
    """

    def __init__(self, endpoint: ElasticsearchEndpoint) -> None:
        """Remember which cluster was asked for (the error names it)."""
        self.endpoint = endpoint

    def _unavailable(self, call: str) -> ElasticsearchUnavailable:
        return ElasticsearchUnavailable(f"{call}: {self.endpoint.url} is unreachable (test fake)")

    async def cluster_health(self) -> ClusterHealth:
        """Never answers."""
        raise self._unavailable("GET /_cluster/health")

    async def get_license(self) -> dict[str, Any]:
        """Never answers."""
        raise self._unavailable("GET /_license")

    async def start_trial(self) -> dict[str, Any]:
        """Never answers."""
        raise self._unavailable("POST /_license/start_trial")

    async def put_license(self, license_: Mapping[str, Any]) -> dict[str, Any]:
        """Never answers."""
        raise self._unavailable("PUT /_license")

    async def create_api_key(
        self,
        *,
        name: str,
        role_descriptors: Mapping[str, Any],
        expiration: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ApiKey:
        """Never answers."""
        raise self._unavailable("PUT /_security/api_key")

    async def invalidate_api_key(self, *, ids: Sequence[str] = (), name: str | None = None) -> int:
        """Never answers."""
        raise self._unavailable("DELETE /_security/api_key")

    async def file_settings_state(self) -> FileSettingsState:
        """Never answers."""
        raise self._unavailable("GET /_cluster/state/metadata")

    async def put_autoscaling_policy(self, name: str, policy: Mapping[str, Any]) -> None:
        """Never answers."""
        raise self._unavailable(f"PUT /_autoscaling/policy/{name}")

    async def delete_autoscaling_policies(self) -> None:
        """Never answers."""
        raise self._unavailable("DELETE /_autoscaling/policy/*")

    async def autoscaling_capacity(self) -> dict[str, Any]:
        """Never answers."""
        raise self._unavailable("GET /_autoscaling/capacity")

    async def put_cluster_settings(self, persistent: Mapping[str, Any]) -> dict[str, Any]:
        """Never answers."""
        raise self._unavailable("PUT /_cluster/settings")

    async def create_cross_cluster_api_key(
        self, *, name: str, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> ApiKey:
        """Never answers."""
        raise self._unavailable("POST /_security/cross_cluster/api_key")

    async def update_cross_cluster_api_key(
        self, key_id: str, *, access: Mapping[str, Any], metadata: Mapping[str, Any]
    ) -> None:
        """Never answers."""
        raise self._unavailable("PUT /_security/cross_cluster/api_key")

    async def active_api_keys(self, name: str) -> list[dict[str, Any]]:
        """Never answers."""
        raise self._unavailable("GET /_security/api_key")


def unreachable_elasticsearch(endpoint: ElasticsearchEndpoint) -> ElasticsearchApi:
    """An ``ElasticsearchApiFactory`` whose clusters never answer (see ``UnreachableElasticsearch``)."""
    return UnreachableElasticsearch(endpoint)
