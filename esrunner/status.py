"""The Pod status a kubelet reports, built from what the runner knows of each container (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HOST_IP = "127.0.0.1"


@dataclass(frozen=True)
class ContainerState:
    """One container as the runner sees it."""

    name: str
    image: str
    state: str  # waiting | running | terminated
    reason: str = ""
    message: str = ""
    started_at: str = ""
    finished_at: str = ""
    exit_code: int = 0
    restart_count: int = 0
    ready: bool = False


def _state(container: ContainerState) -> dict[str, Any]:
    if container.state == "running":
        return {"running": {"startedAt": container.started_at}}
    if container.state == "terminated":
        return {
            "terminated": {
                "exitCode": container.exit_code,
                "reason": container.reason
                or ("Completed" if container.exit_code == 0 else "Error"),
                "startedAt": container.started_at or None,
                "finishedAt": container.finished_at or None,
            }
        }
    waiting: dict[str, Any] = {"reason": container.reason or "ContainerCreating"}
    if container.message:
        waiting["message"] = container.message
    return {"waiting": waiting}


def container_status(container: ContainerState) -> dict[str, Any]:
    """A ``containerStatuses`` entry."""
    return {
        "name": container.name,
        "image": container.image,
        "imageID": "",
        "containerID": f"esrunner://{container.name}" if container.state != "waiting" else "",
        "ready": container.ready,
        "started": container.state == "running",
        "restartCount": container.restart_count,
        "state": _state(container),
    }


def _condition(kind: str, ok: bool, now: str, previous: Mapping[str, Any]) -> dict[str, Any]:
    status = "True" if ok else "False"
    before = previous.get(kind) or {}
    since = before.get("lastTransitionTime") if before.get("status") == status else None
    return {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": since or now,
    }


def pod_status(
    *,
    pod_ip: str,
    started: str,
    init: Sequence[ContainerState],
    main: Sequence[ContainerState],
    previous: Mapping[str, Any],
    now: str,
) -> dict[str, Any]:
    """The whole ``status`` of a Pod: phase, conditions, addresses and container statuses."""
    conditions_before: dict[str, Any] = {
        str(c.get("type")): c for c in previous.get("conditions") or [] if isinstance(c, dict)
    }
    initialised = all(c.state == "terminated" and c.exit_code == 0 for c in init)
    running = bool(main) and all(c.state == "running" for c in main)
    ready = running and all(c.ready for c in main)
    phase = "Running" if initialised and any(c.state == "running" for c in main) else "Pending"
    status: dict[str, Any] = {
        "phase": phase,
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "startTime": started,
        "conditions": [
            _condition("PodReadyToStartContainers", bool(pod_ip), now, conditions_before),
            _condition("Initialized", initialised, now, conditions_before),
            _condition("Ready", ready, now, conditions_before),
            _condition("ContainersReady", ready, now, conditions_before),
            _condition("PodScheduled", True, now, conditions_before),
        ],
        "initContainerStatuses": [container_status(c) for c in init],
        "containerStatuses": [container_status(c) for c in main],
        "qosClass": previous.get("qosClass") or "Burstable",
    }
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    return status
