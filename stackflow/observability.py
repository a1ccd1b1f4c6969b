"""The operator's HTTP endpoints (``/metrics``, ``/healthz``, ``/readyz``) and its reconcile metrics.

``ProbeServer`` serves all three paths on the health port and, when ``metrics-port`` is set,
``/metrics`` on that port too. ``/readyz`` answers 503 while the operator is not ready or one of
its readiness checks names a reason (``not ready: temporal: ...``). A client must send a request
within ``READ_TIMEOUT_SECONDS`` (else its connection is closed), its body at most
``MAX_BODY_BYTES``: a probe sends none. ``ActivityMetrics`` is a Temporal worker interceptor: it times and
counts the activities that matter to an operator (reconciles by controller and outcome, license
waits, scope checks that found a resource out of scope) without the activities knowing.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from stackflow.config import port_in_use_error
from stackflow.metrics import CONTENT_TYPE, LicenseGauges, Registry
from stackflow.models.engine import ACT_LICENSE_WAIT_NOTICE, ACT_SCOPE_CHECK
from stackflow.models.telemetry import ACT_LICENSE_USAGE

__all__ = ["ActivityMetrics", "ProbeServer", "ReadinessCheck", "not_ready_reasons"]

_RECONCILE_SUFFIX = ".reconcile"

#: How long a client may take to send a request (and how long an idle connection stays open).
READ_TIMEOUT_SECONDS = 10.0

#: The probes and the scrape are GETs: a larger body is refused with a 413.
MAX_BODY_BYTES = 64 * 1024

ReadinessCheck = Callable[[], str | None]
"""Why the operator is not ready (e.g. ``temporal: unreachable at host:7233``), None when it is."""


def not_ready_reasons(is_ready: bool, checks: Sequence[ReadinessCheck]) -> list[str]:
    """Every reason the operator is not ready; empty when it is (pure but for the checks)."""
    reasons = [] if is_ready else ["the worker or the informers are not running"]
    for check in checks:
        reason = check()
        if reason:
            reasons.append(reason)
    return reasons


class _ActivityMetricsInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, metrics: ActivityMetrics) -> None:
        super().__init__(next)
        self._metrics = metrics

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        name = activity.info().activity_type
        started = time.monotonic()
        try:
            result = await super().execute_activity(input)
        except BaseException:
            self._metrics.record(name, None, time.monotonic() - started, failed=True)
            raise
        self._metrics.record(name, result, time.monotonic() - started, failed=False)
        return result


class ActivityMetrics(Interceptor):
    """Worker interceptor recording reconcile counts/durations, license waits, scope misses."""

    def __init__(self, registry: Registry) -> None:
        """Declare the metrics in ``registry``."""
        self.reconciles = registry.counter(
            "stackflow_reconciles_total",
            "Reconcile activities by controller and outcome (the phase, or error).",
            ("controller", "outcome"),
        )
        self.duration = registry.histogram(
            "stackflow_reconcile_duration_seconds",
            "Duration of reconcile activity attempts, by controller.",
            ("controller",),
        )
        self.license_waits = registry.counter(
            "stackflow_license_waits_total",
            "License waits started (InvalidLicense notices emitted).",
        )
        self.out_of_scope = registry.counter(
            "stackflow_out_of_scope_total",
            "Scope checks that found a resource out of scope (one per out-of-scope wake).",
        )
        self.license = LicenseGauges(registry)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap every activity."""
        return _ActivityMetricsInbound(next, self)

    def record(self, activity_name: str, result: Any, seconds: float, *, failed: bool) -> None:
        """Account for one finished activity attempt (pure bookkeeping)."""
        if activity_name.endswith(_RECONCILE_SUFFIX):
            controller = activity_name[: -len(_RECONCILE_SUFFIX)]
            phase = getattr(result, "phase", None)
            outcome = "error" if failed else str(getattr(phase, "value", phase) or "unknown")
            self.reconciles.inc(controller=controller, outcome=outcome)
            self.duration.observe(seconds, controller=controller)
        elif activity_name == ACT_LICENSE_WAIT_NOTICE and not failed:
            self.license_waits.inc()
        elif (
            activity_name == ACT_SCOPE_CHECK
            and not failed
            and getattr(result, "exists", True)
            and not getattr(result, "in_scope", True)
        ):
            self.out_of_scope.inc()
        elif activity_name == ACT_LICENSE_USAGE and not failed:
            # The licensing usage report runs as an activity; its figures become gauges here.
            self.license.record(
                level=str(getattr(result, "level", "")),
                units=int(getattr(result, "enterprise_resource_units", 0)),
                max_units=int(getattr(result, "max_enterprise_resource_units", 0)),
            )


class ProbeServer:
    """``/healthz``, ``/readyz`` and ``/metrics`` over aiohttp."""

    def __init__(
        self,
        *,
        registry: Registry,
        is_healthy: Callable[[], bool],
        is_ready: Callable[[], bool],
        host: str,
        health_port: int,
        metrics_port: int = 0,
        readiness_checks: Sequence[ReadinessCheck] = (),
        read_timeout_seconds: float = READ_TIMEOUT_SECONDS,
    ) -> None:
        """``health_port`` 0 picks a free port; ``metrics_port`` 0 adds no metrics listener.

        ``/readyz`` is 200 when ``is_ready()`` and no ``readiness_checks`` names a reason.
        """
        self.registry = registry
        self.is_healthy = is_healthy
        self.is_ready = is_ready
        self.readiness_checks = tuple(readiness_checks)
        self.read_timeout_seconds = read_timeout_seconds
        self.host = host
        self.health_port = health_port
        self.metrics_port = metrics_port
        self._runner: web.AppRunner | None = None
        self.bound_health_port = 0
        self.bound_metrics_port = 0

    def app(self) -> web.Application:
        """The aiohttp application."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def _healthz(self, _: web.Request) -> web.Response:
        if self.is_healthy():
            return web.Response(text="ok\n")
        return web.Response(status=503, text="unhealthy\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        reasons = not_ready_reasons(self.is_ready(), self.readiness_checks)
        if not reasons:
            return web.Response(text="ok\n")
        return web.Response(status=503, text=f"not ready: {'; '.join(reasons)}\n")

    async def _metrics(self, _: web.Request) -> web.Response:
        response = web.Response(body=self.registry.render().encode())
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    async def start(self) -> None:
        """Bind and serve."""
        # keepalive_timeout also bounds a connection whose request headers are not complete;
        # lingering_time how long an unread body is drained.
        self._runner = web.AppRunner(
            self.app(),
            handle_signals=False,
            access_log=None,
            keepalive_timeout=self.read_timeout_seconds,
            lingering_time=self.read_timeout_seconds,
        )
        await self._runner.setup()
        await self._bind("--health-port", self.health_port)
        self.bound_health_port = int(self._runner.addresses[0][1])
        if self.metrics_port:
            await self._bind("metrics-port", self.metrics_port)
            self.bound_metrics_port = int(self._runner.addresses[-1][1])

    async def _bind(self, setting: str, port: int) -> None:
        """Serve on ``port``; a taken port is the setting's fault, said in one line."""
        assert self._runner is not None
        try:
            await web.TCPSite(self._runner, self.host, port).start()
        except OSError as error:
            if error.errno != errno.EADDRINUSE:
                raise
            await self.stop()
            raise port_in_use_error(setting, self.host, port) from None

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
