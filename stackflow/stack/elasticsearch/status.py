"""The Elasticsearch status, computed from the cluster's StatefulSets, Pods and (optional) health API.

Pure: the caller gathers the objects and asks the cluster for its health (``None`` when the API did
not answer) and gets back the status to write and whether, and when, to look again.

The status claims only what was measured, as ECK's: without an answer from the cluster the health
is ``unknown``, the phase ``ApplyingChanges`` and ``ReconciliationComplete`` False with ECK's
reason, however ready the Pods are (a ready Pod says its port answers, not that the cluster formed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stackflow.models.objects import view
from stackflow.models.quantity import parse_quantity
from stackflow.stack.elasticsearch import names
from stackflow.stack.labels import (
    ES_CLUSTER_NAME_LABEL,
    ES_CLUSTER_UUID_ANNOTATION,
    ES_VERSION_LABEL,
)
from stackflow.stack.version import parse_version

PHASE_READY = "Ready"
PHASE_APPLYING_CHANGES = "ApplyingChanges"
PHASE_INVALID = "Invalid"
RECONCILIATION_COMPLETE = "ReconciliationComplete"
ELASTICSEARCH_IS_REACHABLE = "ElasticsearchIsReachable"
RUNNING_DESIRED_VERSION = "RunningDesiredVersion"
RESOURCES_AWARE_MANAGEMENT = "ResourcesAwareManagement"
#: The order in which ECK reports its conditions in a pass (new ones are appended in this order).
CONDITION_ORDER = (
    RECONCILIATION_COMPLETE,
    RUNNING_DESIRED_VERSION,
    ELASTICSEARCH_IS_REACHABLE,
    RESOURCES_AWARE_MANAGEMENT,
)
#: The conditions ECK writes on an Elasticsearch; a merge keeps these and drops any other (the
#: license gate's ``StackflowReconciliation`` is gone once the cluster is reconciled).
ECK_CONDITION_TYPES = frozenset((*CONDITION_ORDER, "OrchestrationPaused"))
#: ECK's requeue reasons while the cluster does not answer, in the order its pass meets them.
UUID_NOT_RECONCILED_REASON = "Elasticsearch cluster UUID is not reconciled"
DESIRED_NODES_MUST_BE_CLEARED_REASON = "Desired nodes API must be cleared"
DESIRED_NODES_WAITING_REASON = (
    "Waiting for Elasticsearch to be available to update the desired nodes API"
)
NOT_REACHABLE_REASON = "Elasticsearch cannot be reached yet, re-queuing"
#: The first version with the desired nodes API (ECK reports ``ResourcesAwareManagement`` from it).
DESIRED_NODES_MIN_VERSION = parse_version("8.3.0")
#: Elasticsearch's data path unless the node set's config names another (ECK's default).
DEFAULT_PATH_DATA = "/usr/share/elasticsearch/data"
ES_CONTAINER_NAME = "elasticsearch"
REQUEUE_SECONDS = 10.0
#: How soon to look again while the cluster is being changed (data moving, a node restarting).
ORCHESTRATION_REQUEUE_SECONDS = 5.0
HEALTH_VALUES = frozenset({"green", "yellow", "red"})
UNKNOWN_HEALTH = "unknown"


@dataclass(frozen=True)
class StatusDecision:
    """The status to write and when to reconcile again (``None``: only on the next event).

    ``unreachable_reason`` is ECK's ``ReconciliationComplete`` message while the cluster does not
    answer (``None`` when it answers or has no node): it wins over the node specs' progress text.
    """

    status: dict[str, Any]
    requeue_after_seconds: float | None
    unreachable_reason: str | None = None


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


def reported_health(health: str | None) -> str:
    """The ``health`` to report: the cluster's own answer, or ``unknown`` when it gave none.

    Never derived from Pods: a ready Pod is no measure of the cluster's shards.
    """
    if health is not None and health.lower() in HEALTH_VALUES:
        return health.lower()
    return UNKNOWN_HEALTH


def reachable_message(namespace: str, es_name: str, *, has_endpoints: bool, answers: bool) -> str:
    """ECK's ``ElasticsearchIsReachable`` message for the internal HTTP Service's state."""
    service = f"{namespace}/{names.internal_http_service_name(es_name)}"
    if not has_endpoints:
        return f"Service {service} has no endpoint"
    if not answers:
        return f"Service {service} has endpoints but Elasticsearch is unavailable"
    return f"Service {service} has endpoints"


def running_version_condition(desired: str, running: str | None) -> tuple[str, str]:
    """ECK's ``RunningDesiredVersion`` (status, message) for the lowest running version."""
    if not running:
        return "Unknown", "No running version reported"
    try:
        wanted = parse_version(desired)
    except ValueError as error:
        return "Unknown", f"Error while parsing desired version: {error}"
    try:
        current = parse_version(running)
    except ValueError as error:
        return "Unknown", f"Error while parsing running version: {error}"
    if wanted > current:
        return "False", f"Upgrading from {current} to {wanted}"
    return "True", f"All nodes are running version {current}"


def _container(statefulset: Mapping[str, Any]) -> Mapping[str, Any] | None:
    template = (statefulset.get("spec") or {}).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return next((c for c in containers if c.get("name") == ES_CONTAINER_NAME), None)


def _cpu_reasons(resources: Mapping[str, Any]) -> list[str]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    reasons = []
    if "cpu" in limits and not parse_quantity(limits["cpu"]):
        reasons.append("CPU limit is set but value is 0")
        return reasons
    if "cpu" in requests:
        if not parse_quantity(requests["cpu"]):
            reasons.append("CPU request is set but value is 0")
        return reasons
    if "cpu" not in limits:
        reasons.append("no CPU request or limit set")
    return reasons


def _memory_reasons(resources: Mapping[str, Any]) -> list[str]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    if "memory" not in limits:
        return ["memory limit is not set"]
    limit = parse_quantity(limits["memory"])
    if "memory" in requests and parse_quantity(requests["memory"]) != limit:
        return ["memory request and limit do not have the same value"]
    if not limit:
        return ["memory limit is set but value is 0"]
    return []


def _storage_reasons(statefulset: Mapping[str, Any], path_data: object) -> list[str]:
    if path_data is None:
        return ["Elasticsearch path.data must be a set"]
    if not isinstance(path_data, str):
        return ["Elasticsearch path.data must be a string, multiple paths is not supported"]
    container = _container(statefulset) or {}
    volume = next(
        (
            str(mount.get("name"))
            for mount in container.get("volumeMounts") or []
            if mount.get("mountPath") == path_data
        ),
        "",
    )
    if not volume:
        return [f"Elasticsearch path.data {path_data} must mounted by a volume"]
    claims = (statefulset.get("spec") or {}).get("volumeClaimTemplates") or []
    claim = next((c for c in claims if view(c).name == volume), None)
    if claim is None:
        return [f'Volume claim with name "{volume}" not found in Spec.VolumeClaimTemplates ']
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        return [f'no storage request in claim "{view(claim).name}"']
    return []


def resources_aware_management(
    es: Mapping[str, Any], statefulsets: Sequence[Mapping[str, Any]]
) -> tuple[str, str]:
    """ECK's ``ResourcesAwareManagement`` (status, message): whether every node set's compute
    (a CPU request or limit, a memory limit equal to any request) and storage (``path.data`` one
    path on a claimed volume with a storage request) can be told to the desired nodes API.

    ``statefulsets`` are the StatefulSets the spec wants; the first node set (in spec order) that
    lacks something names it, with every reason found up to the first storage problem.
    """
    generation = view(es).generation or 0
    by_name = {view(sts).name: sts for sts in statefulsets}
    for node_set in (es.get("spec") or {}).get("nodeSets") or []:
        node_set_name = str(node_set.get("name", ""))
        statefulset = by_name.get(names.statefulset_name(view(es).name, node_set_name))
        container = _container(statefulset) if statefulset is not None else None
        if statefulset is None or container is None:
            continue
        resources: Mapping[str, Any] = container.get("resources") or {}
        config: Mapping[str, Any] = node_set.get("config") or {}
        path_data = config.get(
            "path.data", (config.get("path") or {}).get("data", DEFAULT_PATH_DATA)
        )
        reasons = _cpu_reasons(resources) + _memory_reasons(resources)
        reasons += _storage_reasons(statefulset, path_data)
        if reasons:
            return (
                "False",
                f"Cannot get compute and storage resources from Elasticsearch resource generation "
                f'{generation}: cannot compute resources for NodeSet "{node_set_name}": '
                + ", ".join(reasons),
            )
    return (
        "True",
        "Successfully calculated compute and storage resources from Elasticsearch resource "
        f"generation {generation}",
    )


def desired_nodes_supported(spec_version: str, lowest_running: str | None) -> bool:
    """Whether ECK would use the desired nodes API: its client's version (the lowest running
    one, else the spec's) is 8.3.0 or later."""
    try:
        version = parse_version(lowest_running or spec_version)
    except ValueError:
        return False
    return version >= DESIRED_NODES_MIN_VERSION


def unreachable_reason(*, bootstrapped: bool, resources_aware: str | None) -> str:
    """ECK's first requeue reason of a pass whose cluster does not answer.

    Before the cluster formed, the cluster UUID comes first; then the desired nodes API (when the
    version has it: ``resources_aware`` is the ``ResourcesAwareManagement`` status); then the gate
    before the changes that need the cluster.
    """
    if not bootstrapped:
        return UUID_NOT_RECONCILED_REASON
    if resources_aware == "True":
        return DESIRED_NODES_WAITING_REASON
    if resources_aware == "False":
        return DESIRED_NODES_MUST_BE_CLEARED_REASON
    return NOT_REACHABLE_REASON


def _condition(
    previous: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    status: bool | str,
    message: str,
    now: datetime,
) -> dict[str, Any]:
    """Return a condition, keeping the previous transition time while neither its status nor its
    message changed (ECK replaces a condition whose status or message changed)."""
    value = status if isinstance(status, str) else ("True" if status else "False")
    before = next((c for c in previous if c.get("type") == kind), None)
    transition = (
        str(before["lastTransitionTime"])
        if before is not None
        and before.get("status") == value
        and (before.get("message") or "") == message
        and before.get("lastTransitionTime")
        else format_time(now)
    )
    return {"type": kind, "status": value, "lastTransitionTime": transition, "message": message}


def merge_conditions(
    previous: Sequence[Mapping[str, Any]], reported: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The previous conditions with ``reported`` ones replacing those of their type in place and
    new types appended (as ECK merges; ECK's other conditions stay, any other type is dropped)."""
    merged = [
        dict(condition) for condition in previous if condition.get("type") in ECK_CONDITION_TYPES
    ]
    for condition in reported:
        index = next(
            (i for i, c in enumerate(merged) if c.get("type") == condition.get("type")), None
        )
        if index is None:
            merged.append(dict(condition))
        else:
            merged[index] = dict(condition)
    return merged


def compute_status(
    es: Mapping[str, Any],
    *,
    statefulsets: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    health: str | None,
    now: datetime,
    desired_statefulsets: Sequence[Mapping[str, Any]] | None = None,
) -> StatusDecision:
    """Return the cluster's status and requeue decision.

    ``health`` is the ``status`` of ``_cluster/health`` or ``None`` when the API was unreachable.
    ``desired_statefulsets`` are the StatefulSets the spec wants (``ResourcesAwareManagement``
    reads their resources and claims; the listed ``statefulsets`` when not given).
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
    health_value = reported_health(health)
    reachable = health_value != UNKNOWN_HEALTH
    # The internal HTTP Service selects every node: it has an endpoint once a Pod is ready.
    has_endpoints = ready > 0
    lowest = lowest_version([*cluster_pods, *by_name.values()])
    version = lowest or previous.get("version")
    resources_aware = (
        resources_aware_management(
            es, desired_statefulsets if desired_statefulsets is not None else statefulsets
        )
        if desired_nodes_supported(desired_version, lowest_version(cluster_pods))
        else None
    )
    unreachable = (
        unreachable_reason(
            bootstrapped=ES_CLUSTER_UUID_ANNOTATION in cluster.annotations,
            resources_aware=resources_aware[0] if resources_aware is not None else None,
        )
        if not reachable and expected > 0
        else None
    )
    complete = converged and ready == expected and running_desired and unreachable is None
    phase = PHASE_READY if complete else PHASE_APPLYING_CHANGES
    if complete:
        complete_message = ""
    elif unreachable is not None:
        complete_message = unreachable
    else:
        complete_message = f"{ready} of {expected} nodes ready and up to date"
    version_status, version_message = running_version_condition(desired_version, version)
    previous_conditions: Sequence[Mapping[str, Any]] = previous.get("conditions") or []
    reported = [
        _condition(
            previous_conditions,
            kind=RECONCILIATION_COMPLETE,
            status=complete,
            message=complete_message,
            now=now,
        ),
        _condition(
            previous_conditions,
            kind=RUNNING_DESIRED_VERSION,
            status=version_status,
            message=version_message,
            now=now,
        ),
        _condition(
            previous_conditions,
            kind=ELASTICSEARCH_IS_REACHABLE,
            status=reachable and has_endpoints,
            message=reachable_message(
                cluster.namespace, es_name, has_endpoints=has_endpoints, answers=reachable
            ),
            now=now,
        ),
    ]
    if resources_aware is not None:
        reported.append(
            _condition(
                previous_conditions,
                kind=RESOURCES_AWARE_MANAGEMENT,
                status=resources_aware[0],
                message=resources_aware[1],
                now=now,
            )
        )
    status: dict[str, Any] = {
        "availableNodes": ready,
        "health": health_value,
        "phase": phase,
        "conditions": merge_conditions(previous_conditions, reported),
        "observedGeneration": cluster.generation or 0,
    }
    if version:
        status["version"] = version
    settled = complete and (reachable or expected == 0)
    return StatusDecision(
        status=status,
        requeue_after_seconds=None if settled else REQUEUE_SECONDS,
        unreachable_reason=unreachable,
    )


def invalid_status(
    es: Mapping[str, Any], *, errors: Sequence[tuple[str, str]], now: datetime
) -> dict[str, Any]:
    """Return the status of a cluster whose spec failed validation (phase ``Invalid``)."""
    previous: Mapping[str, Any] = es.get("status") or {}
    message = "; ".join(f"{field}: {text}" for field, text in errors)
    status = dict(previous)
    # ECK resets the health each pass and never asks a cluster whose spec is invalid.
    status["health"] = UNKNOWN_HEALTH
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
    previous_conditions: Sequence[Mapping[str, Any]] = (),
) -> StatusDecision:
    """``decision`` with what the node specs pass reports: ``inProgressOperations``, the
    ``ReconciliationComplete`` message while it is False (what is in progress and why a node
    waits), the downscale's phase (``MigratingData``, ``Stalled``), and a cluster whose changes are
    in progress is never complete nor settled.

    ``previous_conditions`` are those of the status read at the start of the pass: the
    transition time moves when the status or the message differs from theirs."""
    status = dict(decision.status)
    status["inProgressOperations"] = dict(operations)
    conditions = [dict(condition) for condition in status.get("conditions") or []]
    complete = status.get("phase") == PHASE_READY and not in_progress
    for condition in conditions:
        if condition.get("type") != RECONCILIATION_COMPLETE:
            continue
        if not complete:
            # While the cluster does not answer, ECK's pass stops at its first reason.
            text = decision.unreachable_reason or message
            condition.update(
                _condition(
                    previous_conditions,
                    kind=RECONCILIATION_COMPLETE,
                    status=False,
                    message=text,
                    now=now,
                )
            )
    status["conditions"] = conditions
    if not complete:
        status["phase"] = phase or PHASE_APPLYING_CHANGES
    requeue = decision.requeue_after_seconds
    if in_progress:
        requeue = min(requeue or ORCHESTRATION_REQUEUE_SECONDS, ORCHESTRATION_REQUEUE_SECONDS)
    return StatusDecision(
        status=status,
        requeue_after_seconds=requeue,
        unreachable_reason=decision.unreachable_reason,
    )
