"""The Elasticsearch status, computed from the cluster's StatefulSets, Pods and (optional) health API.

Pure: the caller gathers the objects and asks the cluster for its health (``None`` when the API did
not answer) and gets back the status to write and whether, and when, to look again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, ES_VERSION_LABEL
from stackflow.stack.version import parse_version

PHASE_READY = "Ready"
PHASE_APPLYING_CHANGES = "ApplyingChanges"
PHASE_INVALID = "Invalid"
RECONCILIATION_COMPLETE = "ReconciliationComplete"
ELASTICSEARCH_IS_REACHABLE = "ElasticsearchIsReachable"
RUNNING_DESIRED_VERSION = "RunningDesiredVersion"
REQUEUE_SECONDS = 10.0
#: How soon to look again while the cluster is being changed (data moving, a node restarting).
ORCHESTRATION_REQUEUE_SECONDS = 5.0
HEALTH_VALUES = frozenset({"green", "yellow", "red"})


@dataclass(frozen=True)
class StatusDecision:
    """The status to write and when to reconcile again (``None``: only on the next event)."""

    status: dict[str, Any]
    requeue_after_seconds: float | None


def format_time(moment: datetime) -> str:
    """Render ``moment`` as a Kubernetes timestamp (RFC 3339, UTC, seconds)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return view(obj).labels


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """Return whether a pod's ``Ready`` condition is ``True`` and it is not being deleted."""
    if view(pod).deletion_timestamp:
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _statefulset_converged(statefulset: Mapping[str, Any] | None, count: int) -> bool:
    if statefulset is None:
        return count == 0
    spec = statefulset.get("spec") or {}
    status = statefulset.get("status") or {}
    generation = view(statefulset).generation
    observed = status.get("observedGeneration")
    revisions_match = status.get("currentRevision") == status.get("updateRevision")
    return (
        spec.get("replicas") == count
        and (generation is None or observed is None or observed >= generation)
        and int(status.get("readyReplicas") or 0) == count
        and int(status.get("replicas") or 0) == count
        and revisions_match
    )


def lowest_version(pods: Sequence[Mapping[str, Any]]) -> str | None:
    """Return the lowest version label among ``pods`` (None when no pod has a parsable one)."""
    versions = []
    for pod in pods:
        try:
            versions.append(parse_version(_labels(pod).get(ES_VERSION_LABEL, "")))
        except ValueError:
            continue
    return str(min(versions)) if versions else None


def derived_health(*, expected: int, ready: int, pods: int) -> str:
    """Health from pod readiness when the API is unreachable: all ready green, some yellow, none red."""
    if expected == 0 or pods == 0:
        return "unknown"
    if ready >= expected:
        return "green"
    return "yellow" if ready > 0 else "red"


def _condition(
    previous: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    status: bool,
    message: str,
    now: datetime,
) -> dict[str, Any]:
    """Return a condition, keeping the previous transition time when its status did not change."""
    value = "True" if status else "False"
    before = next((c for c in previous if c.get("type") == kind), None)
    transition = (
        str(before["lastTransitionTime"])
        if before is not None and before.get("status") == value and before.get("lastTransitionTime")
        else format_time(now)
    )
    return {"type": kind, "status": value, "lastTransitionTime": transition, "message": message}


def compute_status(
    es: Mapping[str, Any],
    *,
    statefulsets: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    health: str | None,
    now: datetime,
) -> StatusDecision:
    """Return the cluster's status and requeue decision.

    ``health`` is the ``status`` of ``_cluster/health`` or ``None`` when the API was unreachable.
    """
    cluster = view(es)
    spec = es.get("spec") or {}
    es_name = cluster.name
    previous: Mapping[str, Any] = es.get("status") or {}
    node_sets = spec.get("nodeSets") or []
    expected = sum(int(node_set.get("count", 0)) for node_set in node_sets)
    cluster_pods = [
        pod
        for pod in pods
        if _labels(pod).get(ES_CLUSTER_NAME_LABEL) == es_name and not view(pod).deletion_timestamp
    ]
    ready = sum(1 for pod in cluster_pods if is_pod_ready(pod))
    by_name = {
        view(sts).name: sts
        for sts in statefulsets
        if _labels(sts).get(ES_CLUSTER_NAME_LABEL) == es_name
    }
    wanted = {
        names.statefulset_name(es_name, str(node_set["name"])): int(node_set.get("count", 0))
        for node_set in node_sets
    }
    converged = all(
        _statefulset_converged(by_name.get(name), count) for name, count in wanted.items()
    ) and not (set(by_name) - set(wanted))
    desired_version = str(spec.get("version", ""))
    running_desired = all(
        _labels(pod).get(ES_VERSION_LABEL) == desired_version for pod in cluster_pods
    ) and (len(cluster_pods) >= expected)
    reachable = health is not None
    health_value = (
        health.lower()
        if health is not None and health.lower() in HEALTH_VALUES
        else derived_health(expected=expected, ready=ready, pods=len(cluster_pods))
    )
    complete = converged and ready == expected and running_desired
    phase = PHASE_READY if complete else PHASE_APPLYING_CHANGES
    previous_conditions: Sequence[Mapping[str, Any]] = previous.get("conditions") or []
    conditions = [
        _condition(
            previous_conditions,
            kind=RECONCILIATION_COMPLETE,
            status=complete,
            message="" if complete else f"{ready} of {expected} nodes ready and up to date",
            now=now,
        ),
        _condition(
            previous_conditions,
            kind=ELASTICSEARCH_IS_REACHABLE,
            status=reachable,
            message="Service is reachable" if reachable else "Elasticsearch API is not reachable",
            now=now,
        ),
        _condition(
            previous_conditions,
            kind=RUNNING_DESIRED_VERSION,
            status=running_desired,
            message=f"All nodes are running version {desired_version}"
            if running_desired
            else f"Not all nodes are running version {desired_version} yet",
            now=now,
        ),
    ]
    status: dict[str, Any] = {
        "availableNodes": ready,
        "health": health_value,
        "phase": phase,
        "conditions": conditions,
        "observedGeneration": cluster.generation or 0,
    }
    version = lowest_version(cluster_pods) or previous.get("version")
    if version:
        status["version"] = version
    settled = complete and (reachable or expected == 0)
    return StatusDecision(status=status, requeue_after_seconds=None if settled else REQUEUE_SECONDS)


def invalid_status(
    es: Mapping[str, Any], *, errors: Sequence[tuple[str, str]], now: datetime
) -> dict[str, Any]:
    """Return the status of a cluster whose spec failed validation (phase ``Invalid``)."""
    previous: Mapping[str, Any] = es.get("status") or {}
    message = "; ".join(f"{field}: {text}" for field, text in errors)
    status = dict(previous)
    status["phase"] = PHASE_INVALID
    status["observedGeneration"] = view(es).generation or 0
    others = [
        c for c in previous.get("conditions") or [] if c.get("type") != RECONCILIATION_COMPLETE
    ]
    status["conditions"] = [
        _condition(
            previous.get("conditions") or [],
            kind=RECONCILIATION_COMPLETE,
            status=False,
            message=message,
            now=now,
        ),
        *others,
    ]
    return status


def with_orchestration(
    decision: StatusDecision,
    *,
    operations: Mapping[str, Any],
    message: str,
    phase: str | None,
    in_progress: bool,
    now: datetime,
) -> StatusDecision:
    """``decision`` with what the node specs pass reports: ``inProgressOperations``, the
    ``ReconciliationComplete`` message while it is False (what is in progress and why a node
    waits), the downscale's phase (``MigratingData``, ``Stalled``), and a cluster whose changes are
    in progress is never complete nor settled."""
    status = dict(decision.status)
    status["inProgressOperations"] = dict(operations)
    conditions = [dict(condition) for condition in status.get("conditions") or []]
    complete = status.get("phase") == PHASE_READY and not in_progress
    for condition in conditions:
        if condition.get("type") != RECONCILIATION_COMPLETE:
            continue
        if not complete:
            if condition.get("status") != "False":
                condition["lastTransitionTime"] = format_time(now)
            condition["status"] = "False"
            condition["message"] = message
    status["conditions"] = conditions
    if not complete:
        status["phase"] = phase or PHASE_APPLYING_CHANGES
    requeue = decision.requeue_after_seconds
    if in_progress:
        requeue = min(requeue or ORCHESTRATION_REQUEUE_SECONDS, ORCHESTRATION_REQUEUE_SECONDS)
    return StatusDecision(status=status, requeue_after_seconds=requeue)
