"""The kubesim aiohttp application: wiring, middleware, discovery and routing (§1, §2).

:class:`KubeSimServer` is the top of kubesim: it builds the registry, store, admission and
controllers, hands the resource handlers (:mod:`kubesim.handlers`) the
:class:`~kubesim.backend.Backend` they serve from, and :meth:`KubeSimServer.app` builds the aiohttp
application. Nothing below imports this module.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubesim import discovery, errors, handlers, request
from kubesim.admission import Admission
from kubesim.backend import Backend, WatchStreams
from kubesim.controllers import Controllers
from kubesim.errors import StatusError
from kubesim.resources import Registry
from kubesim.responses import json_response, status_response
from kubesim.scheduler_extender import HttpExtender
from kubesim.store import Store

log = logging.getLogger("kubesim.server")

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
RECORDED_KEY = web.RequestKey("kubesim.recorded", bool)
REQUEST_LOG_SIZE = 10000
HEALTH_PATHS = frozenset({"/healthz", "/readyz", "/livez"})


@dataclass(frozen=True)
class ServerOptions:
    """Knobs of a simulated cluster (all have test-friendly defaults)."""

    controllers: bool = True
    pod_ready_delay: float = 0.0
    history_window: int = 1000
    watch_timeout_seconds: float = 1800.0
    # The real server sends a bookmark about every minute on an idle watch.
    bookmark_interval_seconds: float = 60.0
    # The URL prefix of a kube-scheduler extender whose `filter` verb the fake scheduler asks.
    scheduler_extender: str | None = None


@dataclass(frozen=True)
class RequestRecord:
    """One answered request, as kept in :attr:`KubeSimServer.request_log` (conformance check 1)."""

    method: str
    path: str
    query: dict[str, str]
    accept: str
    content_type: str
    status: int
    response_content_type: str


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class KubeSimServer:
    """A simulated API server: registry, store, admission and controllers behind one aiohttp app."""

    options: ServerOptions = field(default_factory=ServerOptions)
    registry: Registry = field(init=False)
    store: Store = field(init=False)
    # Bounded so that a long-running `kubesim` does not grow without end.
    request_log: deque[RequestRecord] = field(
        default_factory=lambda: deque(maxlen=REQUEST_LOG_SIZE), init=False
    )
    request_hooks: list[Callable[[RequestRecord], None]] = field(default_factory=list, init=False)
    server_address: str = field(default="127.0.0.1:0", init=False)
    admission: Admission = field(init=False)
    controllers: Controllers = field(init=False)
    # The scheduler extender the fake scheduler calls (None: no extender).
    extender: HttpExtender | None = field(default=None, init=False)
    # What the resource handlers serve from: the state above plus apply memory and watch streams.
    backend: Backend = field(init=False)

    def __post_init__(self) -> None:
        self.registry = Registry.builtin()
        self.store = Store(self.registry, history_window=self.options.history_window)
        self.admission = Admission(list_configurations=self._webhook_configurations)
        if self.options.scheduler_extender:
            self.extender = HttpExtender(self.options.scheduler_extender)
        self.controllers = Controllers(
            self.store,
            enabled=self.options.controllers,
            pod_ready_delay=self.options.pod_ready_delay,
            registry=self.registry,
            scheduler_extender=self.extender,
        )
        self.backend = Backend(
            registry=self.registry,
            store=self.store,
            admission=self.admission,
            watches=WatchStreams(
                timeout_seconds=self.options.watch_timeout_seconds,
                bookmark_interval_seconds=self.options.bookmark_interval_seconds,
                started=self.record,
            ),
        )

    def _webhook_configurations(self, flavour: str) -> list[dict[str, Any]]:
        plural = f"{flavour}webhookconfigurations"
        rt = self.registry.lookup("admissionregistration.k8s.io", "v1", plural)
        if rt is None:
            return []
        items, _ = self.store.list(rt, None)
        return items

    @property
    def closing(self) -> asyncio.Event:
        """Set when the server shuts down; open watch streams end on it."""
        return self.backend.watches.closing

    @property
    def open_watches(self) -> int:
        """Watch streams currently open (tests poll it to know a client is watching)."""
        return self.backend.watches.open

    def app(self) -> web.Application:
        """Build the aiohttp application serving this simulated cluster."""
        application = web.Application(
            middlewares=[self._middleware], client_max_size=64 * 1024 * 1024
        )
        application.router.add_route("*", "/{tail:.*}", self._dispatch)
        application.on_startup.append(self._on_startup)
        application.on_shutdown.append(self._on_shutdown)
        return application

    async def _on_startup(self, _app: web.Application) -> None:
        await self.start()

    async def _on_shutdown(self, _app: web.Application) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the simulated controllers in the running loop."""
        self.controllers.start()

    async def stop(self) -> None:
        """End open watches, stop the controllers and close the webhook and extender clients."""
        self.closing.set()
        await self.controllers.stop()
        await self.admission.close()
        if self.extender is not None:
            await self.extender.close()

    async def settle(self) -> None:
        """Wait until the simulated controllers have nothing left to do."""
        await self.controllers.settle()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Turn every failure into a Status (500 for the unexpected) and record the request."""
        try:
            response = await handler(request)
        except StatusError as err:
            response = status_response(err)
        except web.HTTPException as exc:
            response = status_response(_http_exception_status(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("unexpected error answering %s %s", request.method, request.path_qs)
            response = status_response(errors.internal_error(f"{type(exc).__name__}: {exc}"))
        if not request.get(RECORDED_KEY):
            self.record(request, response)
        return response

    def record(self, req: web.Request, response: web.StreamResponse) -> None:
        """Log an answered request and call the request hooks (watches: once the stream starts)."""
        req[RECORDED_KEY] = True
        record = RequestRecord(
            method=req.method,
            path=req.path,
            query=dict(req.query),
            accept=req.headers.get("Accept", ""),
            content_type=req.headers.get("Content-Type", ""),
            status=response.status,
            response_content_type=response.headers.get("Content-Type", ""),
        )
        self.request_log.append(record)
        for hook in list(self.request_hooks):
            hook(record)

    async def _dispatch(self, req: web.Request) -> web.StreamResponse:
        """Route by hand: trailing slashes, ``namespaces/{name}`` vs ``namespaces/{ns}/{plural}``."""
        path = "/" + req.path.strip("/")
        if req.method in ("GET", "HEAD"):
            answered = self._answer_fixed_path(path, req.headers.get("Accept"))
            if answered is not None:
                return answered
        resource_path = request.parse_resource_path(path)
        if resource_path is None:
            raise errors.unknown_resource()
        return await handlers.handle_resource(self.backend, req, path=resource_path)

    def _answer_fixed_path(self, path: str, accept: str | None) -> web.StreamResponse | None:
        """Health, version, discovery and OpenAPI documents; ``None`` when the path is a resource."""
        if path in HEALTH_PATHS:
            response = web.Response(text="ok")
            response.headers["Content-Type"] = "text/plain; charset=utf-8"
            return response
        if path == "/version":
            return json_response(discovery.version_info())
        if path in ("/api", "/apis"):
            if request.wants_aggregated_discovery(accept):
                return json_response(
                    discovery.aggregated_discovery(self.registry, core=path == "/api"),
                    content_type=AGGREGATED_CONTENT_TYPE,
                )
            if path == "/api":
                return json_response(discovery.api_versions(self.server_address))
            return json_response(discovery.api_group_list(self.registry))
        if path == "/openapi/v3":
            return json_response(discovery.openapi_v3_index(self.registry))
        if path.startswith("/openapi/v3/"):
            document = discovery.openapi_v3_document(self.registry, path[len("/openapi/v3/") :])
            if document is None:
                raise errors.unknown_resource()
            return json_response(document)
        if path == "/openapi/v2":
            # kubectl reads it (as protobuf only) to validate the items of a `kind: List`.
            return web.Response(
                body=discovery.openapi_v2_protobuf(),
                headers={"Content-Type": discovery.OPENAPI_V2_PROTOBUF},
            )
        if path.startswith("/openapi/"):
            raise errors.unknown_resource()
        segments = path.strip("/").split("/")
        if segments[0] == "api" and len(segments) == 2:
            group, version = "", segments[1]
        elif segments[0] == "apis" and len(segments) == 2:
            group_doc = discovery.api_group(self.registry, segments[1])
            if group_doc is None:
                raise errors.unknown_resource()
            return json_response(group_doc)
        elif segments[0] == "apis" and len(segments) == 3:
            group, version = segments[1], segments[2]
        else:
            return None
        resource_list = discovery.api_resource_list(self.registry, group, version)
        if resource_list is None:
            raise errors.unknown_resource()
        return json_response(resource_list)


def _http_exception_status(exc: web.HTTPException) -> StatusError:
    """aiohttp's own errors (body too large, bad method) as Status objects."""
    if exc.status == 413:
        return errors.too_large("the request body is too large")
    if exc.status == 405:
        return errors.method_not_allowed()
    if exc.status == 404:
        return errors.unknown_resource()
    reason = exc.reason or "Error"
    return StatusError(exc.status, reason.replace(" ", ""), exc.text or reason, {})


def create_app(sim: KubeSimServer) -> web.Application:
    """The aiohttp application of ``sim`` (kept for callers that prefer a function)."""
    return sim.app()
