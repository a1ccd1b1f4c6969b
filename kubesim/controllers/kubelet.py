"""A fake scheduler + kubelet: pods get a node, go Pending, then Running and Ready after a delay.

Deterministic: the delay is a ``loop.call_later`` timer counted by the work tracker, so
``Controllers.settle()`` waits for it. Tests can force readiness with :meth:`Kubelet.force_ready`.

As on a real cluster, a pod runs only on a node that exists, and the scheduler decides as the
default scheduler does (the rules are in :mod:`kubesim.controllers.scheduling`): it schedules only
pods whose ``spec.schedulerName`` is empty or ``default-scheduler``; it skips pods with scheduling
gates (condition ``PodScheduled=False``, ``SchedulingGated``) and leaves pods that no node fits —
``nodeSelector``, ``NoSchedule`` / ``NoExecute`` taints against the pod's tolerations — unscheduled
(``Unschedulable``); a pod bound by its creator to a node that does not exist stays Pending, since
no kubelet runs it. An unscheduled pod is looked at again when a node is added, removed, or changes
its labels, taints or annotations.

With a scheduler extender (a :class:`~kubesim.controllers.scheduling.NodeFilter`, ``--scheduler-extender
URL``), the nodes that pass those filters are offered to its ``filter`` verb before one is chosen, and
only the ones it keeps may be. Reconciling is synchronous, so the call runs in a task the work tracker
counts, and the pod is queued again when the verdict arrives. An extender error (unreachable, not 200,
its ``Error``) leaves the pod ``SchedulerError``, an empty answer ``Unschedulable``; either way the pod
is tried again after a backoff (0.5 s doubling up to 10 s) that ``settle()`` does not wait for.

Pods bound to a node annotated ``stackflow.dev/kubelet: external`` are run by another kubelet (the
Elasticsearch Pod runner): kubesim's kubelet neither starts them nor writes their status.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    WorkTracker,
    is_deleting,
    meta,
    name_of,
    namespace_of,
    uid_of,
)
from kubesim.controllers.scheduling import (
    SCHEDULER_ERROR,
    SCHEDULING_GATED,
    UNSCHEDULABLE,
    ExtenderVerdict,
    NodeFilter,
    extender_rejections,
    fit_nodes,
    has_external_kubelet,
    scheduled_by_default_scheduler,
    unschedulable_message,
)
from kubesim.controllers.store_access import get_or_none, type_for
from kubesim.meta import now_rfc3339
from kubesim.resources import Registry
from kubesim.store import Store

log = logging.getLogger(__name__)

PodKey = tuple[str, str]
NODE_PREFIX = "kubesim-node-"
#: The first wait before a pod the extender failed (or refused) is tried again; it doubles up to
#: ``EXTENDER_BACKOFF_MAX`` (kube-scheduler backs off 1 s doubling to 10 s).
EXTENDER_BACKOFF_INITIAL = 0.5
EXTENDER_BACKOFF_MAX = 10.0
#: What the real scheduler answers when the cluster has no node at all (``ErrNoNodesAvailable``).
NO_NODES = "no nodes available to schedule pods"


def node_name(index: int) -> str:
    """The name of simulated node ``index``."""
    return f"{NODE_PREFIX}{index}"


def node_for_pod(pod_name: str, *, nodes: int) -> str:
    """A stable node choice for a pod (the fake scheduler)."""
    return node_name(zlib.crc32(pod_name.encode()) % max(nodes, 1))


def unscheduled_status(reason: str, message: str, *, now: str) -> dict[str, Any]:
    """The status the scheduler leaves on a pod it cannot (or may not yet) schedule."""
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
        ],
    }


def pod_ip(index: int) -> str:
    """The ``index``-th pod IP in 10.244.0.0/16, skipping network and gateway addresses."""
    offset = index + 2
    return f"10.244.{offset // 256}.{offset % 256}"


def _true(kind: str, *, status: str = "True", now: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": now}


def kubelet_status(
    pod: Mapping[str, Any], *, ready: bool | None, ip: str, now: str
) -> dict[str, Any]:
    """The pod status a kubelet would report: Pending (``ready`` None), or Running ready / not ready."""
    previous = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    assert isinstance(previous, dict)
    started = str(previous.get("startTime") or now)
    since = {c.get("type"): c for c in previous.get("conditions") or [] if isinstance(c, dict)}

    def cond(kind: str, status: str) -> dict[str, Any]:
        # Keeping the transition time makes re-deriving an unchanged status a no-op write.
        old = since.get(kind)
        stamp = old.get("lastTransitionTime") if old and old.get("status") == status else None
        return _true(kind, status=status, now=str(stamp or now))

    if ready is None:
        return {
            "phase": "Pending",
            "conditions": [cond("PodScheduled", "True")],
            "qosClass": "BestEffort",
        }
    flag = "True" if ready else "False"

    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    containers = [
        {
            "name": str(c.get("name", "")),
            "image": str(c.get("image", "")),
            "imageID": f"sha256:{zlib.crc32(str(c.get('image', '')).encode()):08x}",
            "containerID": f"containerd://{zlib.crc32((name_of(pod) + str(c.get('name'))).encode()):08x}",
            "ready": bool(ready),
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": started}},
        }
        for c in spec.get("containers") or []
        if isinstance(c, dict)
    ]
    return {
        "phase": "Running",
        "conditions": [
            cond("Initialized", "True"),
            cond("Ready", flag),
            cond("ContainersReady", flag),
            cond("PodScheduled", "True"),
        ],
        "hostIP": "172.18.0.2",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": started,
        "containerStatuses": containers,
        "qosClass": "BestEffort",
    }


@dataclass(frozen=True)
class _Answer:
    """An extender verdict, with what it was asked about (a changed pod or node set asks again)."""

    uid: str
    asked: tuple[str, ...]
    verdict: ExtenderVerdict


def _scheduling_view(node: Mapping[str, Any] | None) -> Any:
    """What of a node the scheduler's filters read (a change requeues the unscheduled pods)."""
    if node is None:
        return None
    spec = node.get("spec") if isinstance(node.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    return (meta(node).get("labels"), meta(node).get("annotations"), spec.get("taints"))


class Kubelet:
    """Reconciler keyed by ``(namespace, pod name)``."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        tracker: WorkTracker,
        ready_delay: float,
        nodes: int = 1,
        extender: NodeFilter | None = None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._tracker = tracker
        self._delay = ready_delay
        self._nodes = nodes
        self._extender = extender
        self._forced: dict[PodKey, bool] = {}
        self._due: set[PodKey] = set()
        self._timers: dict[PodKey, asyncio.TimerHandle] = {}
        self._next_ip = 0
        # Pods without a node: a node event may let them fit.
        self._unscheduled: set[PodKey] = set()
        # The extender: calls in flight, answers not yet used, failures and their backoff timers.
        self._asking: dict[PodKey, asyncio.Task[None]] = {}
        self._answers: dict[PodKey, _Answer] = {}
        self._failures: dict[PodKey, int] = {}
        self._backoff: dict[PodKey, asyncio.TimerHandle] = {}
        self.requeue: Callable[[Hashable], None] = lambda _key: None

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Live pods need a look, and unscheduled ones again when a node changes in a way the
        filters read; deleted pods forget their timers, forced states and extender answers."""
        kind = (event.rt.group, event.rt.plural)
        if kind == ("", "nodes"):
            old = None if event.type == "ADDED" else event.old
            new = None if event.type == "DELETED" else event.obj
            if event.type == "MODIFIED" and _scheduling_view(old) == _scheduling_view(new):
                return []
            return sorted(self._unscheduled)
        if kind != ("", "pods"):
            return []
        key = (namespace_of(event.obj) or "", name_of(event.obj))
        if event.type == "DELETED":
            self._forget(key)
            return []
        spec = event.obj.get("spec")
        if is_deleting(event.obj) or (isinstance(spec, dict) and spec.get("nodeName")):
            self._unscheduled.discard(key)
        else:
            self._unscheduled.add(key)
        return [] if is_deleting(event.obj) else [key]

    def force_ready(self, namespace: str, name: str, ready: bool) -> None:
        """Test hook: pin the pod's readiness until set again."""
        self._forced[(namespace, name)] = ready
        self.requeue((namespace, name))

    def cancel_timers(self) -> None:
        """Drop pending ready timers, extender calls and backoff timers (on stop)."""
        for key in list(self._timers):
            self._timers.pop(key).cancel()
            self._tracker.done()
        for task in self._asking.values():
            task.cancel()
        self._asking.clear()
        for timer in self._backoff.values():
            timer.cancel()
        self._backoff.clear()

    def _nodes_by_name(self) -> dict[str, Mapping[str, Any]] | None:
        """The simulated nodes (None when the registry serves no nodes: every pod may run)."""
        nodes = type_for(self._registry, "", "nodes")
        if nodes is None:
            return None
        items, _ = self._store.list(nodes, None)
        return {name_of(node): node for node in items}

    def _kubelet_runs(self, name: str) -> bool:
        """Whether kubesim's kubelet runs the pods of node ``name`` (it exists, and no other
        kubelet runs it)."""
        known = self._nodes_by_name()
        if known is None:
            return True
        node = known.get(name)
        return node is not None and not has_external_kubelet(node)

    def _schedule(self, key: PodKey, pod: Mapping[str, Any]) -> str | dict[str, Any] | None:
        """The node for a pod, the status saying why it stays unscheduled, or None while an
        extender's verdict (or the backoff after a failed one) is awaited."""
        now = now_rfc3339()
        spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        if spec.get("schedulingGates"):
            return unscheduled_status(
                SCHEDULING_GATED,
                "Scheduling is blocked due to non-empty scheduling gates",
                now=now,
            )
        preferred = node_for_pod(key[1], nodes=self._nodes)
        known = self._nodes_by_name()
        if known is None:
            return preferred
        if not known:
            return unscheduled_status(SCHEDULER_ERROR, NO_NODES, now=now)
        fit = fit_nodes(spec, known)
        if not fit.feasible:
            message = unschedulable_message(len(known), fit.rejected)
            return unscheduled_status(UNSCHEDULABLE, message, now=now)
        candidates = fit.feasible
        if self._extender is not None:
            if key in self._backoff:
                return None
            verdict = self._extender_verdict(key, pod, candidates)
            if verdict is None:
                return None
            if verdict.error:
                self._back_off(key)
                return unscheduled_status(SCHEDULER_ERROR, verdict.error, now=now)
            kept = tuple(sorted(set(verdict.node_names) & set(candidates)))
            if not kept:
                self._back_off(key)
                unresolvable, resolvable = extender_rejections(fit, verdict)
                message = unschedulable_message(len(known), unresolvable, resolvable)
                return unscheduled_status(UNSCHEDULABLE, message, now=now)
            self._failures.pop(key, None)
            candidates = kept
        return preferred if preferred in candidates else candidates[0]

    def _extender_verdict(
        self, key: PodKey, pod: Mapping[str, Any], candidates: tuple[str, ...]
    ) -> ExtenderVerdict | None:
        """The extender's answer for this pod and these candidates; None once it has been asked."""
        answer = self._answers.pop(key, None)
        if answer is not None and (answer.uid, answer.asked) == (uid_of(pod), candidates):
            return answer.verdict
        if key not in self._asking:
            self._tracker.begin()
            task = asyncio.get_running_loop().create_task(
                self._ask(key, uid_of(pod), pod, candidates), name=f"extender filter {key}"
            )
            task.add_done_callback(lambda _task: self._tracker.done())
            self._asking[key] = task
        return None

    async def _ask(
        self, key: PodKey, uid: str, pod: Mapping[str, Any], candidates: tuple[str, ...]
    ) -> None:
        """Call the extender, keep its answer and queue the pod again."""
        assert self._extender is not None
        try:
            verdict = await self._extender.filter(pod, candidates)
        except Exception as exc:  # a broken extender client must not lose the pod
            log.exception("scheduler extender call for %s/%s failed", *key)
            verdict = ExtenderVerdict(error=f"scheduler extender call failed: {exc}")
        self._asking.pop(key, None)
        self._answers[key] = _Answer(uid, candidates, verdict)
        self.requeue(key)

    def _back_off(self, key: PodKey) -> None:
        """Try the pod again later (not counted by ``settle()``: the pod is waiting, not working)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(EXTENDER_BACKOFF_INITIAL * 2**failures, EXTENDER_BACKOFF_MAX)
        self._backoff[key] = asyncio.get_running_loop().call_later(delay, self._retry, key)

    def _retry(self, key: PodKey) -> None:
        self._backoff.pop(key, None)
        self.requeue(key)

    def _report_unscheduled(
        self, pods: Any, key: PodKey, pod: dict[str, Any], wanted: dict[str, Any]
    ) -> None:
        status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
        assert isinstance(status, dict)
        previous = {c.get("type"): c for c in status.get("conditions") or []}.get("PodScheduled")
        condition = wanted["conditions"][0]
        if previous and all(
            previous.get(k) == condition.get(k) for k in ("status", "reason", "message")
        ):
            return
        status.update({"phase": "Pending", "conditions": wanted["conditions"]})
        pod["status"] = status
        self._store.update(pods, pod, namespace=key[0], name=key[1], subresource="status")

    def _forget_scheduling(self, key: PodKey) -> None:
        """Drop what the scheduler kept for a pod (bound or gone)."""
        self._unscheduled.discard(key)
        self._answers.pop(key, None)
        self._failures.pop(key, None)
        task = self._asking.pop(key, None)
        if task is not None:
            task.cancel()
        backoff = self._backoff.pop(key, None)
        if backoff is not None:
            backoff.cancel()

    def _forget(self, key: PodKey) -> None:
        self._forget_scheduling(key)
        self._forced.pop(key, None)
        self._due.discard(key)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
            self._tracker.done()

    def _fire(self, key: PodKey) -> None:
        self._timers.pop(key, None)
        self._due.add(key)
        self.requeue(key)
        self._tracker.done()

    def reconcile(self, key: Hashable) -> None:
        """Schedule the pod, then report Pending / Running as its readiness dictates."""
        assert isinstance(key, tuple)
        pods = type_for(self._registry, "", "pods")
        if pods is None:
            return
        pod = get_or_none(self._store, pods, key[0], key[1])
        if pod is None or is_deleting(pod):
            return
        spec = pod.setdefault("spec", {})
        status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
        assert isinstance(status, dict)
        if not spec.get("nodeName"):
            if not scheduled_by_default_scheduler(spec):
                return  # another scheduler's pod
            verdict = self._schedule(key, pod)
            if verdict is None:
                return
            if isinstance(verdict, dict):
                self._report_unscheduled(pods, key, pod, verdict)
                return
            spec["nodeName"] = verdict
            pod = self._store.update(
                pods, pod, namespace=key[0], name=key[1], subresource="binding"
            )
            stored = pod.get("status")
            status = stored if isinstance(stored, dict) else {}
        self._forget_scheduling(key)
        if not self._kubelet_runs(str(spec["nodeName"])):
            return
        ready: bool | None
        if key in self._forced:
            ready = self._forced[key]
        elif key in self._due or status.get("phase") in ("Running", "Succeeded", "Failed"):
            if status.get("phase") in ("Succeeded", "Failed"):
                return
            ready = True
        else:
            ready = None
            if key not in self._timers:
                self._tracker.begin()
                loop = asyncio.get_running_loop()
                self._timers[key] = loop.call_later(self._delay, self._fire, key)
        ip = str(status.get("podIP") or "")
        if ready is not None and not ip:
            ip = pod_ip(self._next_ip)
            self._next_ip += 1
        wanted = kubelet_status(pod, ready=ready, ip=ip, now=now_rfc3339())
        if wanted != status:
            pod["status"] = wanted
            self._store.update(pods, pod, namespace=key[0], name=key[1], subresource="status")
