"""The status of a stack application, from the object, its workload and its pods (pure).

Fields this module does not compute (association statuses written by the association controllers)
are kept from the current status.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.apps.associations import confs_from_annotations, ref_annotation
from stackflow.stack.apps.context import DAEMON_SET, AppKind
from stackflow.stack.apps.kinds import app_kind
from stackflow.stack.naming import Namer
from stackflow.stack.version import Version, parse_version

GREEN = "green"
YELLOW = "yellow"
RED = "red"
_SINGLE_REFS = {"elasticsearchRef": "es", "kibanaRef": "kb", "fleetServerRef": "fs"}


def health(*, available: int, expected: int, associations_configured: bool = True) -> str:
    """Return ECK's health: red with an unconfigured association or no available pod, green when all
    expected pods are available, yellow otherwise."""
    if not associations_configured or available <= 0:
        return RED
    if available >= expected:
        return GREEN
    return YELLOW


def replica_counts(workload: Mapping[str, Any] | None) -> tuple[int, int, int]:
    """Return (expected, available, current) pod counts of a Deployment, StatefulSet or DaemonSet."""
    if not workload:
        return 0, 0, 0
    status: Mapping[str, Any] = workload.get("status") or {}
    if workload.get("kind") == DAEMON_SET:
        expected = int(status.get("desiredNumberScheduled") or 0)
        return (
            expected,
            int(status.get("numberAvailable") or 0),
            int(status.get("currentNumberScheduled") or 0),
        )
    replicas = (workload.get("spec") or {}).get("replicas")
    expected = 1 if replicas is None else int(replicas)
    available = status.get("availableReplicas")
    if available is None:
        available = status.get("readyReplicas")
    return expected, int(available or 0), int(status.get("replicas") or 0)


def lowest_version(kind: AppKind, pods: Sequence[Mapping[str, Any]]) -> str | None:
    """Return the lowest stack version among the pods' version labels (None when none parses)."""
    versions: list[Version] = []
    for pod in pods:
        label = view(pod).labels.get(kind.version_label)
        try:
            versions.append(parse_version(str(label)))
        except ValueError:
            continue
    return str(min(versions)) if versions else None


#: ECK's association types (``AssociationType()``), by the conf annotation's target.
_ASSOCIATION_TYPES = {"es": "elasticsearch", "kb": "kibana", "fs": "fleetserver"}


def unconfigured_association(obj: Mapping[str, Any]) -> str | None:
    """ECK's type of the first association the spec sets whose conf annotation the association
    controller has not written (yet, or any more); None when every one is configured."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    namespace = view(obj).namespace or "default"
    confs = confs_from_annotations(obj)
    for field, target in _SINGLE_REFS.items():
        ref = spec.get(field)
        wanted = isinstance(ref, Mapping) and bool(ref.get("name") or ref.get("secretName"))
        if wanted and f"association.k8s.elastic.co/{target}-conf" not in confs:
            return _ASSOCIATION_TYPES[target]
    for ref in spec.get("elasticsearchRefs") or []:
        if ref_annotation(target="es", ref=ref, default_namespace=namespace) not in confs:
            return _ASSOCIATION_TYPES["es"]
    return None


def associations_configured(obj: Mapping[str, Any]) -> bool:
    """Return whether every reference in the spec has its association conf annotation."""
    return unconfigured_association(obj) is None


def selector_string(kind: AppKind, name: str) -> str:
    """Return the pods' label selector as a string (the ``scale`` subresource reads it)."""
    return f"common.k8s.elastic.co/type={kind.type_label},{kind.name_label}={name}"


def merge_conditions(
    current: Sequence[Mapping[str, Any]], desired: Sequence[Mapping[str, Any]], *, now: datetime
) -> list[dict[str, Any]]:
    """Return ``desired`` conditions, keeping each one's lastTransitionTime while its status holds."""
    by_type = {str(c.get("type")): c for c in current}
    merged = []
    for condition in desired:
        previous = by_type.get(str(condition["type"]))
        unchanged = previous is not None and previous.get("status") == condition["status"]
        transition = (
            previous.get("lastTransitionTime")
            if previous is not None and unchanged
            else now.strftime("%Y-%m-%dT%H:%M:%SZ")
        )
        merged.append({**condition, "lastTransitionTime": transition})
    return merged


def application_status(
    kind: str,
    obj: Mapping[str, Any],
    *,
    workload: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    now: datetime,
    conditions: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Return the status of ``obj`` given its workload (None when not created yet) and its pods.

    ``conditions`` (``{type, status, message}``) replace the current ones when given.
    """
    app = app_kind(kind)
    name = str(obj["metadata"]["name"])
    status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
    expected, available, current = replica_counts(workload)
    configured = app.deployment_status or associations_configured(obj)
    status["availableNodes"] = available
    status["health"] = health(
        available=available, expected=expected, associations_configured=configured
    )
    if app.deployment_status:
        status["count"] = current
    else:
        status["expectedNodes"] = expected
    if app.deployment_status or app.kind == "Logstash":
        status["selector"] = selector_string(app, name)
    version = lowest_version(app, pods)
    if version is not None:
        status["version"] = version
    generation = view(obj).generation
    if generation is not None:
        status["observedGeneration"] = generation
    namer = Namer(app.short)
    if app.kind in ("ApmServer", "EnterpriseSearch"):
        status["service"] = namer.suffix(name, *app.http_service_parts)
    if app.kind == "ApmServer":
        status["secretTokenSecret"] = namer.suffix(name, "token")
    if conditions is not None:
        status["conditions"] = merge_conditions(status.get("conditions") or [], conditions, now=now)
    return status
