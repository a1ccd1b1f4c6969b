"""ECK's debugging annotations on an Elasticsearch: suspended Pods and paused orchestration (pure).

``eck.k8s.elastic.co/suspend`` names Pods (comma-separated) that must not run Elasticsearch. The
builder writes the names into the scripts ConfigMap (``suspended_pods.txt``, outside every hash,
so suspending rolls nothing), and each Pod's ``elastic-internal-suspend`` init container loops
while its own name is listed. A Pod already past its init containers when it is named has to be
deleted to come back suspended: :func:`pods_to_delete_for_suspend` picks those. Removing the name
lets the loop end and the node start, with no deletion.

``eck.k8s.elastic.co/pause-orchestration: "true"`` asks the operator to hold back the
orchestration steps (:func:`orchestration_paused`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stackflow.stack.elasticsearch.pods import ES_CONTAINER, SUSPEND_CONTAINER
from stackflow.stack.elasticsearch.scripts import SUSPEND_ANNOTATION

__all__ = [
    "PAUSE_ORCHESTRATION_ANNOTATION",
    "SUSPEND_ANNOTATION",
    "SUSPEND_CONTAINER",
    "orchestration_paused",
    "pods_to_delete_for_suspend",
    "pods_to_wake",
    "suspended_pods",
]

PAUSE_ORCHESTRATION_ANNOTATION = "eck.k8s.elastic.co/pause-orchestration"


def suspended_pods(annotations: Mapping[str, str] | None) -> frozenset[str]:
    """The Pod names the suspend annotation lists: split on commas, trimmed, empty ones dropped.

    ECK keeps an empty name from ``"a,,b"`` in its set; no Pod is named ``""``, so dropping it
    changes nothing but the rendered file, which then has no blank line.
    """
    raw = (annotations or {}).get(SUSPEND_ANNOTATION)
    if not raw:
        return frozenset()
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def orchestration_paused(annotations: Mapping[str, str] | None) -> bool:
    """Whether ``eck.k8s.elastic.co/pause-orchestration`` is exactly ``"true"`` (as ECK)."""
    return (annotations or {}).get(PAUSE_ORCHESTRATION_ANNOTATION) == "true"


def _container_state(statuses: Any, name: str) -> Mapping[str, Any] | None:
    """The ``state`` of the container ``name`` among ``statuses`` (None when not reported)."""
    for status in statuses or ():
        if isinstance(status, Mapping) and status.get("name") == name:
            state = status.get("state")
            return state if isinstance(state, Mapping) else {}
    return None


def _is_suspended(pod: Mapping[str, Any]) -> bool:
    """Whether the Pod sits in its suspend init container (ECK's ``isSuspended``)."""
    state = _container_state(
        (pod.get("status") or {}).get("initContainerStatuses"), SUSPEND_CONTAINER
    )
    return state is not None and "running" in state


def _past_suspension(pod: Mapping[str, Any]) -> bool:
    """Whether the Pod went past the point where it could have been held: its Elasticsearch
    container runs, or its suspend init container has finished (the main container may then be
    waiting, e.g. crash-looping, which ECK only catches while it happens to run)."""
    status = pod.get("status") or {}
    main = _container_state(status.get("containerStatuses"), ES_CONTAINER)
    if main is not None and "running" in main:
        return True
    suspend = _container_state(status.get("initContainerStatuses"), SUSPEND_CONTAINER)
    return suspend is not None and "terminated" in suspend


def pods_to_delete_for_suspend(
    pods: Iterable[Mapping[str, Any]], suspended: frozenset[str]
) -> tuple[str, ...]:
    """The Pods to delete so that they restart into the suspended state, by name, sorted.

    A Pod is deleted when it is named, is not already terminating, is not sitting in its suspend
    container, and is past suspension (:func:`_past_suspension`). A Pod that has not started its
    init containers yet is left alone: its suspend container will hold it, and deleting it would
    only recreate it in the same state, over and over.
    """
    chosen = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if name not in suspended or metadata.get("deletionTimestamp"):
            continue
        if _is_suspended(pod) or not _past_suspension(pod):
            continue
        chosen.append(name)
    return tuple(sorted(chosen))


def pods_to_wake(pods: Iterable[Mapping[str, Any]], suspended: frozenset[str]) -> tuple[str, ...]:
    """Pods sitting in their suspend container that are no longer named, sorted.

    ECK touches an annotation on each so that the kubelet refreshes the ConfigMap volume sooner
    (otherwise up to its sync period); an optimisation only, the Pods wake up without it.
    """
    return tuple(
        sorted(
            str((pod.get("metadata") or {}).get("name", ""))
            for pod in pods
            if _is_suspended(pod)
            and str((pod.get("metadata") or {}).get("name", "")) not in suspended
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
        )
    )
