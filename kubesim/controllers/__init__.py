"""kubesim's simulated controllers (reference §6, §7, §10) behind one :class:`Controllers` facade.

The facade subscribes to the store; each store event is mapped synchronously to keys of the
reconcilers that care, which are processed by one asyncio worker per reconciler. ``settle()``
returns when every queue is empty, nothing is in flight and no kubelet timer or scheduler extender
call is pending (a pod waiting out the backoff after a failed extender call is not work).

Namespace lifecycle, CRD cleanup, the garbage collector and PVC protection always run (API-server
semantics, or kube-controller-manager's that deleting anything depends on); ``enabled=False``
switches off the workload and EndpointSlice controllers and the kubelet only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable
from typing import Any

from kubesim.controllers.base import EventLike, Reconciler, WorkQueue, WorkTracker
from kubesim.controllers.crds import CrdCleanupController
from kubesim.controllers.endpointslices import EndpointSliceController
from kubesim.controllers.gc import GarbageCollector
from kubesim.controllers.kubelet import Kubelet
from kubesim.controllers.namespaces import NamespaceController
from kubesim.controllers.pvc_protection import PvcProtectionController
from kubesim.controllers.rbac import ClusterRoleAggregationController
from kubesim.controllers.scheduling import NodeFilter
from kubesim.controllers.services import ServiceController
from kubesim.controllers.store_access import list_objects, storable_types
from kubesim.controllers.workloads import (
    DaemonSetController,
    DeploymentController,
    ReplicaSetController,
    StatefulSetController,
    ensure_nodes,
)
from kubesim.errors import StatusError
from kubesim.resources import Registry
from kubesim.store import Store

__all__ = ["Controllers"]

log = logging.getLogger(__name__)


class Controllers:
    """All simulated controllers of one store."""

    def __init__(
        self,
        store: Store,
        *,
        enabled: bool = True,
        pod_ready_delay: float = 0.0,
        nodes: int = 1,
        registry: Registry | None = None,
        scheduler_extender: NodeFilter | None = None,
    ) -> None:
        """Wire the controllers to ``store`` (``registry`` defaults to the store's own); the fake
        scheduler asks ``scheduler_extender`` (when given) which nodes may take a pod."""
        self._store = store
        # The store keeps its registry private; callers that hold it should pass it explicitly.
        self._registry: Registry = registry if registry is not None else store._registry  # type: ignore[assignment]
        self._enabled = enabled
        self._nodes = nodes
        self._tracker = WorkTracker()
        self.kubelet = Kubelet(
            store,
            self._registry,
            tracker=self._tracker,
            ready_delay=pod_ready_delay,
            nodes=nodes,
            extender=scheduler_extender,
        )
        self.gc = GarbageCollector(store, self._registry)
        reconcilers: list[Reconciler] = [
            NamespaceController(store, self._registry),
            CrdCleanupController(store, self._registry),
            self.gc,
            PvcProtectionController(store, self._registry),
            ServiceController(store, self._registry),
            ClusterRoleAggregationController(store, self._registry),
        ]
        if enabled:
            reconcilers += [
                StatefulSetController(store, self._registry),
                DeploymentController(store, self._registry),
                ReplicaSetController(store, self._registry),
                DaemonSetController(store, self._registry, nodes=nodes),
                EndpointSliceController(store, self._registry),
                self.kubelet,
            ]
        self._reconcilers = reconcilers
        self._queues = [WorkQueue(self._tracker) for _ in reconcilers]
        self.kubelet.requeue = self._queues[-1].add if enabled else (lambda _key: None)
        self._tasks: list[asyncio.Task[None]] = []
        self._subscribed = False

    def start(self) -> None:
        """Subscribe to the store, look at what it already holds, and start the workers."""
        if self._tasks:
            return
        if not self._subscribed:
            self._store.subscribe(self._on_event)
            self._subscribed = True
            self._prime()
        if self._enabled and self._nodes:
            ensure_nodes(self._store, self._registry, count=self._nodes)
        for reconciler, queue in zip(self._reconcilers, self._queues, strict=True):
            name = type(reconciler).__name__
            self._tasks.append(asyncio.create_task(self._work(reconciler, queue), name=name))

    async def stop(self) -> None:
        """Stop the workers, timers and extender calls; queued work is dropped."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for queue in self._queues:
            queue.drain()
        self.kubelet.cancel_timers()

    async def settle(self) -> None:
        """Return once every queue is empty, nothing is in flight and no timer or extender call is
        pending."""
        await self._tracker.wait_idle()

    def set_pod_ready(self, namespace: str, name: str, ready: bool) -> None:
        """Test hook: force a pod Ready / NotReady (kept until set again); applied by the kubelet."""
        self.kubelet.force_ready(namespace, name, ready)

    def _prime(self) -> None:
        existing: list[tuple[Any, dict[str, Any]]] = []
        for rt in storable_types(self._registry):
            existing.extend((rt, obj) for obj in list_objects(self._store, rt, None))
        for key in self.gc.prime(existing):
            self._queues[self._reconcilers.index(self.gc)].add(key)
        for rt, obj in existing:
            # Replay the stored state as ADDED events so every controller gets a first look.
            self._on_event(_Replayed("ADDED", rt, obj, None), skip=self.gc)

    def _on_event(self, event: EventLike, skip: Reconciler | None = None) -> None:
        for reconciler, queue in zip(self._reconcilers, self._queues, strict=True):
            if reconciler is skip:
                continue
            try:
                keys = list(reconciler.observe(event))
            except Exception:
                log.exception("%s failed to observe an event", type(reconciler).__name__)
                continue
            for key in keys:
                queue.add(key)

    async def _work(self, reconciler: Reconciler, queue: WorkQueue) -> None:
        while True:
            key: Hashable = await queue.get()
            try:
                reconciler.reconcile(key)
            except StatusError as err:
                log.info("%s %r: %s", type(reconciler).__name__, key, err.message)
            except Exception:
                log.exception("%s failed on %r", type(reconciler).__name__, key)
            finally:
                self._tracker.done()
            # Reconcile is synchronous: yield so API requests are served between keys.
            await asyncio.sleep(0)


class _Replayed:
    """A synthetic ADDED event for objects stored before the controllers started."""

    def __init__(self, kind: str, rt: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.type = kind
        self.rt = rt
        self.obj = obj
        self.old = old
