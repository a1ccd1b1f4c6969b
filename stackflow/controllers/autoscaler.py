"""The ElasticsearchAutoscaler controller (ECK's ``autoscaling.k8s.elastic.co/v1alpha1``).

An enterprise feature in every mode. An autoscaler is woken by its own changes, by changes of the
Elasticsearch its ``elasticsearchRef`` names (same namespace: a node set added or its roles
changed), by its polling period and by flips of its namespace (ECK's default: the autoscalers of
the flipped namespace). Unlicensed it records ECK's own notice: a Warning ``InvalidLicense`` on the
autoscaler and its ``Active`` condition false.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.api.kinds import kind_info
from stackflow.controllers.table import Controller, FlipStrategy, Gate, UnlicensedNotice
from stackflow.models.engine import ObjectKey
from stackflow.models.objects import view
from stackflow.stack.policies.autoscaling.unlicensed import (
    INVALID_LICENSE_EVENT_REASON,
    UNLICENSED_MESSAGE,
    unlicensed_conditions,
)

__all__ = [
    "AUTOSCALER_CONTROLLER",
    "ELASTICSEARCH_AUTOSCALER",
    "autoscaled_cluster",
]

ELASTICSEARCH_AUTOSCALER = kind_info("ElasticsearchAutoscaler").resource
_ELASTICSEARCH = kind_info("Elasticsearch").resource


def autoscaled_cluster(autoscaler: Mapping[str, Any]) -> list[ObjectKey]:
    """The Elasticsearch the autoscaler scales (its namespace), as a reference: a change to it
    wakes the autoscaler."""
    ref = (autoscaler.get("spec") or {}).get("elasticsearchRef") or {}
    name = ref.get("name") if isinstance(ref, Mapping) else None
    if not name:
        return []
    return [ObjectKey.of(_ELASTICSEARCH, namespace=view(autoscaler).namespace, name=str(name))]


AUTOSCALER_CONTROLLER = Controller(
    name="elasticsearchautoscaler",
    primary=ELASTICSEARCH_AUTOSCALER,
    gate=Gate.ENTERPRISE,
    references=autoscaled_cluster,
    reference_kinds=(_ELASTICSEARCH,),
    flip=FlipStrategy.NAMESPACE_OBJECTS,
    # It calls the cluster's autoscaling API, which may be slow: not a local activity.
    local_step=False,
    unlicensed=UnlicensedNotice(
        reason=INVALID_LICENSE_EVENT_REASON,
        message=UNLICENSED_MESSAGE,
        conditions=unlicensed_conditions,
    ),
)
