"""The operator process behind ``stackflow run``.

Start-up order: Kubernetes client → Namespace informer (synced) → matcher → Temporal client
(connect, register missing search attributes) → Worker (workflows + activities) on every replica →
informers of every controller's kinds (synced) → leader election → watchers signal only while
leader (other replicas keep their informers warm) → probes (``/healthz``, ``/readyz``,
``/metrics``). On SIGTERM/SIGINT: stop the watchers, let in-flight activities finish (up to the
graceful shutdown timeout), release the Lease, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import structlog
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from activities.binding import Family
from activities.context import ControllerContext, operator_pod_name
from activities.registry import FAMILIES, build_activities
from stackflow.cli.build_id import worker_build_id
from stackflow.cli.reports import schedule_reports
from stackflow.cli.sizing import SANDBOX_RESTRICTIONS, sticky_cache_size
from stackflow.config import OperatorConfig
from stackflow.controllers import CONTROLLERS, ControllerTable
from stackflow.elastic.factory import elasticsearch_factory, runs_in_cluster
from stackflow.kube.access import access_reviewer
from stackflow.kube.backoff import Backoff
from stackflow.kube.client import close_api_client, make_api_client
from stackflow.kube.events import EventRecorder
from stackflow.kube.informer import NamespaceInformer
from stackflow.kube.leader import LeaderCallbacks, LeaderElector
from stackflow.kube.operator_licenses import OperatorLicenseReader, read_public_keys
from stackflow.kube.reader import ObjectReader
from stackflow.kube.resources import ResourceClient
from stackflow.kube.scoped import ScopedClient, UnscopedClient
from stackflow.kube.writes import OwnWrites
from stackflow.metrics import Registry
from stackflow.observability import ActivityMetrics, ProbeServer
from stackflow.scope import NamespaceMatcher
from stackflow.stack.rsa_keys import RSA_KEYS
from stackflow.temporal import (
    TemporalReachability,
    connect_client,
    register_search_attributes,
)
from stackflow.webhooks.runner import start_webhooks
from watchers.config_reload import CONFIG_POLL_SECONDS, ConfigFileWatcher
from watchers.informers import InformerSet
from watchers.signals import Signaller
from watchers.sweep import ensure_sweep_schedule
from watchers.wiring import Watchers
from workflows import WORKFLOWS

__all__ = [
    "TEMPORAL_RETRY",
    "OperatorOptions",
    "connect_temporal_when_reachable",
    "run_operator",
    "workflow_runner",
]

_log = structlog.get_logger("stackflow.cli.operator")

#: Retries while Temporal is unreachable at start-up: a compose stack or a Pod often starts the
#: operator before the server listens; waiting (and saying so) beats a silent crash loop.
TEMPORAL_RETRY = Backoff(initial=0.5, maximum=15.0, jitter=0.2)


@dataclass(frozen=True)
class OperatorOptions:
    """Process options that are not operator configuration (flags of ``stackflow run``)."""

    kubeconfig: Path | None = None
    kube_context: str | None = None
    kube_timeout_seconds: float = 30.0
    health_host: str = "0.0.0.0"  # probes must be reachable from the kubelet
    health_port: int = 8081
    graceful_shutdown_seconds: float = 20.0
    identity: str = ""
    lease_duration_seconds: int = 15
    lease_renew_deadline_seconds: float = 10.0
    lease_retry_period_seconds: float = 2.0
    #: The configuration file ``config`` was read from, watched for live changes (None: none).
    config_file: Path | None = None
    config_poll_seconds: float = CONFIG_POLL_SECONDS


class _Leadership:
    """Whether this replica may signal: the elector's verdict, or always without election."""

    def __init__(self, *, elected: bool) -> None:
        self.elected = elected
        self.elector: LeaderElector | None = None

    def __call__(self) -> bool:
        if not self.elected:
            return True
        # Before the first election nobody leads: the informers' initial list queues nothing
        # (the leader's resync covers every object it finds).
        return self.elector is not None and self.elector.is_leader


def workflow_runner(*, sandboxed: bool) -> WorkflowRunner:
    """The worker's workflow runner (config ``temporal-workflow-sandbox``, see its comment)."""
    if sandboxed:
        # The pure modules the workflows import are shared, not re-imported per run (memory).
        return SandboxedWorkflowRunner(restrictions=SANDBOX_RESTRICTIONS)
    return UnsandboxedWorkflowRunner()


class WorkerConcurrency(TypedDict):
    """The worker's bounds on the work it runs at once."""

    max_concurrent_activities: int
    max_concurrent_local_activities: int


def worker_concurrency(config: OperatorConfig) -> WorkerConcurrency:
    """``max-concurrent-reconciles`` as the worker's bounds: that many activities and as many
    local activities (the reconcile steps, the scope and license checks) at once; the rest wait,
    activities in their task queue, local activities in the worker."""
    bound = config.max_concurrent_reconciles
    return WorkerConcurrency(max_concurrent_activities=bound, max_concurrent_local_activities=bound)


async def connect_temporal_when_reachable(
    config: OperatorConfig,
    stop: asyncio.Event,
    *,
    connect: Callable[[OperatorConfig], Awaitable[Client]] = connect_client,
    backoff: Backoff = TEMPORAL_RETRY,
) -> Client | None:
    """Connect to Temporal, retrying with ``backoff`` while it is unreachable; None on ``stop``.

    Every failed attempt logs ``temporal.waiting`` with the address, so an operator started
    before its server says what it waits for instead of crash-looping. Only connection failures
    are retried (the SDK reports them as RuntimeError); anything else propagates.
    """
    attempt = 0
    while not stop.is_set():
        try:
            return await connect(config)
        except (RuntimeError, OSError, TimeoutError) as error:
            delay = backoff.delay(attempt)
            _log.warning(
                "temporal.waiting",
                address=config.temporal_address,
                namespace=config.temporal_namespace,
                attempt=attempt + 1,
                retry_in_seconds=round(delay, 2),
                error=str(error) or repr(error),
            )
            attempt += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=delay)
    return None


def install_stop_signals(stop: asyncio.Event) -> Callable[[], None]:
    """Set ``stop`` on SIGTERM/SIGINT; returns the function that removes the handlers."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    def remove() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)

    return remove


async def run_operator(
    config: OperatorConfig,
    *,
    options: OperatorOptions,
    stop: asyncio.Event,
    controllers: ControllerTable = CONTROLLERS,
    families: Mapping[str, Family] = FAMILIES,
    on_ready: Callable[[ProbeServer], object] | None = None,
) -> int:
    """Run the operator with ``controllers`` until ``stop`` is set; returns the exit status.

    ``families`` binds the table's activity names (``activities.registry``).

    Every component is entered on one exit stack, so shutdown unwinds them in reverse order
    whatever step start-up reached: watchers first, then the Lease, the worker (in-flight
    activities finish), the informers, the API client.
    """
    metrics = Registry()
    async with contextlib.AsyncExitStack() as running:
        running.callback(_log.info, "operator.stopped")
        api_client = await make_api_client(
            kubeconfig=options.kubeconfig,
            context=options.kube_context,
            timeout=options.kube_timeout_seconds,
        )
        running.push_async_callback(close_api_client, api_client)
        # One memory of the operator's own writes: the activities record, the watchers consult.
        resources = ResourceClient(api_client, own_writes=OwnWrites())
        namespaces = NamespaceInformer(resources)
        matcher = NamespaceMatcher(config.scope(), source=namespaces)
        leadership = _Leadership(elected=config.enable_leader_election)
        scoped = ScopedClient(resources, matcher)
        # One license reader for the webhooks, the reconciles and the watchers' license events:
        # one memory of verified signatures. It lists the license Secrets until the informers
        # it reads from are attached (`_controller_context`).
        licenses = OperatorLicenseReader(
            scoped,
            operator_namespace=config.operator_namespace,
            public_keys=read_public_keys(config.license_public_key),
        )
        # Bound first: a taken webhook-port stops start-up at once (WebhookPortInUseError).
        await start_webhooks(
            config,
            client=scoped,
            is_managed=matcher.name_matches,
            is_leader=leadership,
            in_cluster=runs_in_cluster(),
            stop=stop,
            running=running,
            licenses=licenses,
        )
        namespaces.start()
        running.push_async_callback(namespaces.stop)
        if not await _until_or_stop(namespaces.wait_synced(), stop):
            return 0
        temporal = await connect_temporal_when_reachable(config, stop)
        if temporal is None:
            return 0
        added = await register_search_attributes(temporal)
        if added:
            _log.info("temporal.search_attributes_registered", names=added)
        # Built before the worker so activities read from its caches once they sync (until
        # then, and for kinds it does not watch, they call the API server).
        informers = InformerSet(resources, matcher)
        running.push_async_callback(informers.stop)
        context = _controller_context(
            config, controllers, resources, matcher, temporal, licenses=licenses, cache=informers
        )
        worker = Worker(
            temporal,
            task_queue=config.temporal_task_queue,
            workflows=list(WORKFLOWS),
            activities=list(build_activities(context, families=families).values()),
            interceptors=[ActivityMetrics(metrics)],
            graceful_shutdown_timeout=timedelta(seconds=options.graceful_shutdown_seconds),
            max_cached_workflows=sticky_cache_size(
                config.temporal_max_cached_workflows, sandboxed=config.temporal_workflow_sandbox
            ),
            workflow_runner=workflow_runner(sandboxed=config.temporal_workflow_sandbox),
            # Given, not left to the SDK, which would hash every loaded module's code on the way
            # to ready (more than half a second of the start; ``stackflow.cli.build_id``).
            build_id=worker_build_id(),
            **worker_concurrency(config),
        )
        # Every long-running task in one group: the worker and the elector stop the operator
        # when they end; all are cancelled and awaited once, after the worker's shutdown.
        tasks = _LongRunning(within=options.graceful_shutdown_seconds + 5)
        running.push_async_callback(tasks.finish)
        worker_task = tasks.start(worker.run(), name="temporal-worker")
        running.push_async_callback(_shutdown_worker, worker)
        # The elector releases the Lease when it sees ``stop``; set it on every way out.
        running.callback(stop.set)
        signaller = Signaller(
            temporal,
            task_queue=config.temporal_task_queue,
            is_leader=leadership,
            metrics=metrics,
            local_step=lambda name: controllers.named(name).local_step,
        )
        watchers = Watchers(
            controllers=controllers,
            informers=informers,
            namespaces=namespaces,
            signaller=signaller,
            temporal=temporal,
            task_queue=config.temporal_task_queue,
            metrics=metrics,
            events=context.events,
            own_writes=resources.own_writes,
            # The reconciles' reader: the events judge licenses with the gate's own keys.
            licenses=licenses,
            license_waiters=context.license_waiters,
        )
        running.push_async_callback(watchers.stop)
        informers.start()
        if not await _until_or_stop(informers.wait_synced(), stop):
            return 0
        signaller.start()
        running.push_async_callback(signaller.stop)
        # /readyz is false while the Temporal frontend does not answer (one check per interval).
        reachability = TemporalReachability.of(temporal, address=config.temporal_address)
        tasks.start(reachability.run(stop), name="temporal-reachability", essential=False)
        probes = ProbeServer(
            registry=metrics,
            is_healthy=lambda: not worker_task.done(),
            is_ready=lambda: (
                not worker_task.done() and namespaces.has_synced and informers.has_synced
            ),
            readiness_checks=[reachability.not_ready_reason],
            host=options.health_host,
            health_port=options.health_port,
            metrics_port=config.metrics_port,
        )
        await probes.start()
        running.push_async_callback(probes.stop)
        running.callback(_log.info, "operator.stopping")
        _log.info(
            "operator.started",
            scope=config.scope().mode.value,
            controllers=len(controllers),
            health_port=probes.bound_health_port,
            metrics_port=probes.bound_metrics_port,
            task_queue=config.temporal_task_queue,
        )
        tasks.start(
            _lead(config, options, resources, watchers, signaller, leadership, stop, metrics),
            name="leader-election",
        )
        # Once ready, not before: made during the start, the keys lengthened it by a tenth.
        RSA_KEYS.start()
        running.callback(RSA_KEYS.stop)
        if options.config_file is not None:
            # A new selector applies live; another change ends the run (exit 0, restarted).
            config_watcher = ConfigFileWatcher(
                options.config_file,
                current=config,
                matcher=matcher,
                watchers=watchers,
                restart=stop.set,
                environ=os.environ,
                interval=options.config_poll_seconds,
            )
            tasks.start(config_watcher.run(stop), name="config-watch", essential=False)
        if on_ready is not None:
            on_ready(probes)
        return 1 if await tasks.until_stop_or_failure(stop) else 0
    return 0  # unreachable: mypy cannot see that the exit stack does not swallow returns


def _controller_context(
    config: OperatorConfig,
    controllers: ControllerTable,
    resources: ResourceClient,
    matcher: NamespaceMatcher,
    temporal: Client,
    *,
    licenses: OperatorLicenseReader,
    cache: ObjectReader,
) -> ControllerContext:
    """The reconciles' dependencies; from now on ``licenses`` reads from the informers' caches."""
    scoped = ScopedClient(resources, matcher)
    licenses.cache = cache
    return ControllerContext(
        controllers=controllers,
        scoped=scoped,
        unscoped=UnscopedClient(resources),
        matcher=matcher,
        config=config,
        events=EventRecorder(resources, component="stackflow"),
        licenses=licenses,
        temporal_client=temporal,
        task_queue=config.temporal_task_queue,
        cache=cache,
        elasticsearch=elasticsearch_factory(config),
        access=access_reviewer(enforce=config.enforce_rbac_on_refs, client=resources),
    )


async def _lead(
    config: OperatorConfig,
    options: OperatorOptions,
    resources: ResourceClient,
    watchers: Watchers,
    signaller: Signaller,
    leadership: _Leadership,
    stop: asyncio.Event,
    metrics: Registry,
) -> None:
    """Take part in leader election (or lead alone when it is disabled) until ``stop``."""
    leading = metrics.gauge("stackflow_leader", "1 while this replica holds the leader Lease.")

    async def started() -> None:
        leading.set(1)
        queued = await watchers.resync()
        _log.info("leader.resync", queued=queued)
        # The leader keeps the garbage sweep's Schedule and runs it once now: what was
        # deleted while no operator ran is collected at start, not an interval later.
        await ensure_sweep_schedule(watchers.temporal, task_queue=config.temporal_task_queue)
        # Only the leader keeps the report Schedules (licensing usage, telemetry) as configured.
        await schedule_reports(watchers.temporal, config)

    def stopped() -> None:
        leading.set(0)
        signaller.clear()

    if not config.enable_leader_election:
        await started()
        await stop.wait()
        return
    identity = options.identity or f"{operator_pod_name()}_{uuid.uuid4().hex[:8]}"
    leadership.elector = LeaderElector(
        resources,
        namespace=config.operator_namespace,
        identity=identity,
        lease_duration_seconds=options.lease_duration_seconds,
        renew_deadline_seconds=options.lease_renew_deadline_seconds,
        retry_period_seconds=options.lease_retry_period_seconds,
        callbacks=LeaderCallbacks(on_started_leading=started, on_stopped_leading=stopped),
    )
    await leadership.elector.run(stop)


async def _until_or_stop(awaitable: Awaitable[None], stop: asyncio.Event) -> bool:
    """Await ``awaitable`` unless ``stop`` is set first; True when it finished."""
    waiting = asyncio.ensure_future(awaitable)
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    await _cancel_and_wait((waiting, stopping))
    return waiting.done() and not waiting.cancelled() and not stop.is_set()


async def _cancel_and_wait(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel what has not ended yet and wait until everything has (errors are not raised:
    a task that ended early was reported when it ended)."""
    pending = list(tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def _shutdown_worker(worker: Worker) -> None:
    """Stop polling and let in-flight activities finish (up to the graceful timeout)."""
    with contextlib.suppress(Exception):
        await worker.shutdown()


class _LongRunning:
    """The operator's long-running tasks, started, watched and ended as one group.

    An essential task (the worker, the elector) ending stops the operator; the others (the
    Temporal reachability check, the configuration watch) only serve it while it runs.
    """

    def __init__(self, *, within: float) -> None:
        self._essential: list[asyncio.Task[object]] = []
        self._background: list[asyncio.Task[object]] = []
        self._within = within

    def start(
        self, coroutine: Coroutine[Any, Any, object], *, name: str, essential: bool = True
    ) -> asyncio.Task[object]:
        """Run ``coroutine`` as a task of the group."""
        task: asyncio.Task[object] = asyncio.create_task(coroutine, name=name)
        (self._essential if essential else self._background).append(task)
        return task

    async def until_stop_or_failure(self, stop: asyncio.Event) -> bool:
        """Wait for ``stop``; True when an essential task ended first (it is logged)."""
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait(
            {stopping, *self._essential}, return_when=asyncio.FIRST_COMPLETED
        )
        await _cancel_and_wait((stopping,))
        if stopping in done:
            return False
        for task in done:
            error = None if task.cancelled() else task.exception()
            _log.error("operator.component_ended", task=task.get_name(), error=repr(error))
        return True

    async def finish(self) -> None:
        """End the group: the background tasks at once; the essential ones (they watch
        ``stop``) get a while to end by themselves before they are cancelled too."""
        await _cancel_and_wait(self._background)
        if self._essential:
            await asyncio.wait(self._essential, timeout=self._within)
        await _cancel_and_wait(self._essential)
