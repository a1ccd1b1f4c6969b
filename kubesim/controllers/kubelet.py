"""A fake scheduler + kubelet: pods get a node, go Pending, then Running and Ready after a delay.

Deterministic: the delay is a ``loop.call_later`` timer counted by the work tracker, so
``Controllers.settle()`` waits for it. Tests can force readiness with :meth:`Kubelet.force_ready`.

As on a real cluster, a pod runs only on a node that exists: the scheduler skips pods with
scheduling gates (condition ``PodScheduled=False``, ``SchedulingGated``) and leaves pods whose
``nodeSelector`` no simulated node matches unscheduled (``Unschedulable``); a pod bound by its
creator to a node that does not exist stays Pending, since no kubelet runs it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from kubesim.controllers.base import EventLike, WorkTracker, is_deleting, name_of, namespace_of
from kubesim.controllers.store_access import get_or_none, type_for
from kubesim.meta import now_rfc3339
from kubesim.resources import Registry
from kubesim.store import Store

PodKey = tuple[str, str]
NODE_PREFIX = "kubesim-node-"


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


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """Whether a pod's ``nodeSelector`` matches a node's labels."""
    return all(labels.get(key) == value for key, value in (selector or {}).items())


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
    ) -> None:
        self._store = store
        self._registry = registry
        self._tracker = tracker
        self._delay = ready_delay
        self._nodes = nodes
        self._forced: dict[PodKey, bool] = {}
        self._due: set[PodKey] = set()
        self._timers: dict[PodKey, asyncio.TimerHandle] = {}
        self._next_ip = 0
        self.requeue: Callable[[Hashable], None] = lambda _key: None

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Live pods need a look; deleted pods forget their timers and forced states."""
        if (event.rt.group, event.rt.plural) != ("", "pods"):
            return []
        key = (namespace_of(event.obj) or "", name_of(event.obj))
        if event.type == "DELETED":
            self._forget(key)
            return []
        return [] if is_deleting(event.obj) else [key]

    def force_ready(self, namespace: str, name: str, ready: bool) -> None:
        """Test hook: pin the pod's readiness until set again."""
        self._forced[(namespace, name)] = ready
        self.requeue((namespace, name))

    def cancel_timers(self) -> None:
        """Drop pending ready timers (on stop)."""
        for key in list(self._timers):
            self._timers.pop(key).cancel()
            self._tracker.done()

    def _nodes_by_name(self) -> dict[str, Mapping[str, Any]] | None:
        """The simulated nodes (None when the registry serves no nodes: every pod may run)."""
        nodes = type_for(self._registry, "", "nodes")
        if nodes is None:
            return None
        items, _ = self._store.list(nodes, None)
        return {name_of(node): node for node in items}

    def _node_exists(self, name: str) -> bool:
        known = self._nodes_by_name()
        return known is None or name in known

    def _schedule(self, pod_name: str, spec: Mapping[str, Any]) -> str | dict[str, Any]:
        """The node for a pod, or the status saying why it stays unscheduled."""
        now = now_rfc3339()
        if spec.get("schedulingGates"):
            return unscheduled_status(
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates",
                now=now,
            )
        preferred = node_for_pod(pod_name, nodes=self._nodes)
        known = self._nodes_by_name()
        if known is None:
            return preferred
        selector = spec.get("nodeSelector")
        fitting = sorted(
            name
            for name, node in known.items()
            if selector_matches(selector, (node.get("metadata") or {}).get("labels") or {})
        )
        if preferred in fitting:
            return preferred
        if fitting:
            return fitting[0]
        count = len(known)
        return unscheduled_status(
            "Unschedulable",
            f"0/{count} nodes are available: {count} node(s) didn't match Pod's node "
            f"affinity/selector. preemption: 0/{count} nodes are available: {count} Preemption is "
            "not helpful for scheduling.",
            now=now,
        )

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

    def _forget(self, key: PodKey) -> None:
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
            verdict = self._schedule(key[1], spec)
            if isinstance(verdict, dict):
                self._report_unscheduled(pods, key, pod, verdict)
                return
            spec["nodeName"] = verdict
            pod = self._store.update(
                pods, pod, namespace=key[0], name=key[1], subresource="binding"
            )
            stored = pod.get("status")
            status = stored if isinstance(stored, dict) else {}
        elif not self._node_exists(str(spec["nodeName"])):
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
