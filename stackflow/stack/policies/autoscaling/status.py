"""What the autoscaler reports: its ``status.conditions``, its ``status.policies[]`` entries (and
the first entry of a policy, imported from its StatefulSets), and the Warning events recorded
on the Elasticsearch resource.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from stackflow.models.quantity import parse_quantity, same_quantity
from stackflow.stack.policies.autoscaling.node_sets import ELASTICSEARCH_CONTAINER
from stackflow.stack.policies.autoscaling.results import (
    STATE_HORIZONTAL_LIMIT,
    STATE_MEMORY_REQUIRED,
    STATE_STORAGE_REQUIRED,
    STATE_UNEXPECTED_STORAGE,
    STATE_VERTICAL_LIMIT,
    PolicyResult,
    resource_limits,
    resource_requests,
)
from stackflow.stack.policies.autoscaling.spec import PolicyLimits, VolumeClaimError

__all__ = [
    "ACTIVE",
    "EVENT_ACTION_OFFLINE",
    "EVENT_ACTION_ONLINE",
    "EVENT_STATES",
    "HEALTHY",
    "LIMITED",
    "NOT_ONLINE_ERROR_MESSAGE",
    "OFFLINE_MESSAGE",
    "ONLINE",
    "ONLINE_MESSAGE",
    "conditions",
    "imported_status_entry",
    "inactive_conditions",
    "policy_status",
    "scaling_events",
    "unhealthy_conditions",
]

#: Condition types of ``status.conditions``, as ECK names them.
ACTIVE = "Active"


HEALTHY = "Healthy"


LIMITED = "Limited"


ONLINE = "Online"


#: Online condition messages (ECK's).
ONLINE_MESSAGE = "Elasticsearch is available"


OFFLINE_MESSAGE = "Elasticsearch is not available"


NOT_ONLINE_ERROR_MESSAGE = (
    "An error prevented resource calculation from the Elasticsearch autoscaling API"
)


_ONLINE_MESSAGE_LIMIT = 256


#: The event actions of the Warning events a reconcile records on the Elasticsearch resource.
EVENT_ACTION_ONLINE = "AutoscalingOnlineReconciliation"


EVENT_ACTION_OFFLINE = "AutoscalingOfflineReconciliation"


def _condition(type_: str, status: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "message": message}


def conditions(
    results: Sequence[PolicyResult], *, online: bool | None, online_message: str = ""
) -> list[dict[str, str]]:
    """ECK's ``status.conditions`` of a licensed reconcile (without transition times), in its
    order: ``Limited`` (a scaling limit reached), ``Healthy`` (no other state, and online),
    ``Active`` and ``Online`` (None: unknown)."""
    limited = sorted(
        {
            r.policy
            for r in results
            if set(r.states) & {STATE_VERTICAL_LIMIT, STATE_HORIZONTAL_LIMIT}
        }
    )
    issues = sorted(
        {
            r.policy
            for r in results
            if set(r.states) - {STATE_VERTICAL_LIMIT, STATE_HORIZONTAL_LIMIT}
        }
    )
    found = [
        _condition(LIMITED, "True", f"Limit reached for policies {','.join(limited)}")
        if limited
        else _condition(LIMITED, "False"),
        _condition(
            HEALTHY,
            "False",
            f"Issues reported for the following policies: [{','.join(issues)}]. Check "
            "operator logs, Kubernetes events, and policies status for more details",
        )
        if issues
        else _condition(HEALTHY, "True"),
        _condition(ACTIVE, "True"),
    ]
    if online is None:
        found.append(_condition(ONLINE, "Unknown"))
    else:
        message = online_message
        if len(message) >= _ONLINE_MESSAGE_LIMIT:
            message = message[:_ONLINE_MESSAGE_LIMIT] + "[...]"
        found.append(_condition(ONLINE, "True" if online else "False", message))
    if not online:
        previous = found[1]["message"]
        found[1] = _condition(HEALTHY, "False", f"{NOT_ONLINE_ERROR_MESSAGE}. {previous}".strip())
    return found


def unhealthy_conditions(message: str) -> list[dict[str, str]]:
    """ECK's conditions when the spec cannot be used: ``Active`` true, ``Healthy`` false with
    the reason, ``Online`` false (``Limited`` unknown when it was never set)."""
    return [
        _condition(ACTIVE, "True", "Autoscaler is unhealthy"),
        _condition(HEALTHY, "False", message),
        _condition(ONLINE, "False", "Autoscaler is unhealthy"),
        _condition(LIMITED, "Unknown"),
    ]


def inactive_conditions(message: str) -> list[dict[str, str]]:
    """ECK's conditions of an inactive autoscaler (no license, no Elasticsearch): ``Active``
    false with the reason, the others unknown or false."""
    return [
        _condition(ACTIVE, "False", message),
        _condition(HEALTHY, "Unknown", "Autoscaler is inactive"),
        _condition(ONLINE, "False", "Autoscaler is inactive"),
        _condition(LIMITED, "Unknown"),
    ]


#: The states ECK turns into Warning events on the Elasticsearch resource.
EVENT_STATES = (
    STATE_VERTICAL_LIMIT,
    STATE_HORIZONTAL_LIMIT,
    STATE_MEMORY_REQUIRED,
    STATE_STORAGE_REQUIRED,
    STATE_UNEXPECTED_STORAGE,
)


def scaling_events(results: Sequence[PolicyResult], *, online: bool) -> list[dict[str, str]]:
    """ECK's Warning events of a reconcile, recorded on the Elasticsearch resource: one per
    policy and state of :data:`EVENT_STATES`, reason the state, its messages joined by ". "."""
    action = EVENT_ACTION_ONLINE if online else EVENT_ACTION_OFFLINE
    return [
        {
            "type": "Warning",
            "reason": state,
            "action": action,
            "message": ". ".join(messages),
        }
        for result in results
        for state, messages in result.states.items()
        if state in EVENT_STATES
    ]


def policy_status(
    result: PolicyResult,
    *,
    now: datetime,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``status.policies[]`` entry as ECK writes it: node sets and counts, resources,
    states, and ``lastModificationTime``, ``now`` when the node sets or their resources differ
    from the ``previous`` entry (or there is none), the previous time otherwise."""
    entry: dict[str, Any] = {
        "name": result.policy,
        "nodeSets": [{"name": name, "nodeCount": count} for name, count in result.node_sets],
        "resources": {},
        "state": [
            {"type": state, "messages": list(messages)} for state, messages in result.states.items()
        ],
    }
    if result.resources is None:
        if previous is not None and previous.get("lastModificationTime"):
            entry["lastModificationTime"] = previous["lastModificationTime"]
        return entry
    requests, limits = resource_requests(result.resources), resource_limits(result.resources)
    if limits:
        entry["resources"]["limits"] = limits
    if requests:
        entry["resources"]["requests"] = requests
    unchanged = (
        previous is not None
        and previous.get("lastModificationTime")
        and _same_resources(previous, entry)
    )
    entry["lastModificationTime"] = (
        previous["lastModificationTime"]
        if unchanged and previous is not None
        else now.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    return entry


def _same_resources(previous: Mapping[str, Any], entry: Mapping[str, Any]) -> bool:
    """ECK's ``SameResources``: the same node counts by node set and equal quantities."""
    counts = {str(n.get("name")): n.get("nodeCount") for n in previous.get("nodeSets") or ()}
    if counts != {n["name"]: n["nodeCount"] for n in entry["nodeSets"]}:
        return False
    before, after = previous.get("resources") or {}, entry["resources"]
    for part in ("requests", "limits"):
        old, new = before.get(part) or {}, after.get(part) or {}
        if set(old) != set(new) or not all(same_quantity(old[k], new[k]) for k in new):
            return False
    return True


def _max_quantity(values: Sequence[object]) -> str | None:
    parsed = [(parse_quantity(value), value) for value in values if value is not None]
    found = [(amount, value) for amount, value in parsed if amount is not None]
    return str(max(found, key=lambda item: item[0])[1]) if found else None


def imported_status_entry(
    limits: PolicyLimits, stateful_sets: Sequence[tuple[str, Mapping[str, Any] | None]]
) -> dict[str, Any] | None:
    """ECK's import of a policy's current resources from its node sets' StatefulSets, for a
    policy the status does not know yet: their replicas, the largest data claim (when the policy
    sizes storage) and the largest cpu and memory of their ``elasticsearch`` container (requests
    and limits, when the policy sizes them). None when no StatefulSet exists; VolumeClaimError
    for a StatefulSet with several claims."""
    node_sets: list[dict[str, Any]] = []
    storage: list[object] = []
    amounts: dict[str, dict[str, list[object]]] = {"requests": {}, "limits": {}}
    for name, stateful_set in stateful_sets:
        if stateful_set is None:
            continue
        spec = stateful_set.get("spec") or {}
        node_sets.append({"name": name, "nodeCount": int(spec.get("replicas") or 0)})
        claims = spec.get("volumeClaimTemplates") or []
        if len(claims) > 1:
            raise VolumeClaimError(
                "autoscaling does not support nodeSet with more than one volume claim"
            )
        if claims and limits.storage is not None:
            storage.append(
                (((claims[0].get("spec") or {}).get("resources") or {}).get("requests") or {}).get(
                    "storage"
                )
            )
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        container = next((c for c in containers if c.get("name") == ELASTICSEARCH_CONTAINER), None)
        if container is None:
            continue
        wanted = [
            resource
            for resource, bounds in (("memory", limits.memory), ("cpu", limits.cpu))
            if bounds is not None
        ]
        for part in ("requests", "limits"):
            section = (container.get("resources") or {}).get(part) or {}
            for resource in wanted:
                amounts[part].setdefault(resource, []).append(section.get(resource))
    if not node_sets:
        return None
    resources: dict[str, dict[str, str]] = {}
    for part, by_resource in amounts.items():
        for resource, values in by_resource.items():
            value = _max_quantity(values)
            if value is not None:
                resources.setdefault(part, {})[resource] = value
    largest = _max_quantity(storage)
    if largest is not None:
        resources.setdefault("requests", {})["storage"] = largest
    return {"name": limits.name, "nodeSets": node_sets, "resources": resources}
