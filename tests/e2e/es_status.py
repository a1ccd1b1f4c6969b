"""What a user sees of an Elasticsearch whose Pods run no Elasticsearch (kubesim, the simulated
``make dev``): the operator reports only what it measured, as ECK does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def nodes_up_health_unknown(es: Mapping[str, Any] | None) -> bool:
    """Whether the cluster is as far as it goes without an Elasticsearch to answer: every node
    its spec asks for available, its current generation observed, and its health ``unknown``
    (nobody could ask the cluster), its phase ``ApplyingChanges``."""
    if not es:
        return False
    status: Mapping[str, Any] = es.get("status") or {}
    spec: Mapping[str, Any] = es.get("spec") or {}
    wanted = sum(int(node_set.get("count", 0)) for node_set in spec.get("nodeSets") or [])
    return bool(
        status.get("availableNodes") == wanted
        and status.get("observedGeneration") == (es.get("metadata") or {}).get("generation")
        and status.get("health") == "unknown"
        and status.get("phase") == "ApplyingChanges"
    )
