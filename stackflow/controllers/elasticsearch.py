"""The Elasticsearch controller family: the cluster controller and the per-cluster license one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.api.kinds import kind_info
from stackflow.controllers.table import ChildWatch, Controller, FlipStrategy, Gate, owners_by_labels
from stackflow.licensing.model import LICENSE_SCOPE_ELASTICSEARCH, LICENSE_SCOPE_LABEL
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import (
    CONFIGMAPS,
    PODDISRUPTIONBUDGETS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
)
from stackflow.models.objects import view
from stackflow.stack.elasticsearch.references import referenced_objects
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL

__all__ = [
    "ELASTICSEARCH",
    "ELASTICSEARCH_CONTROLLER",
    "ES_LICENSE_SECRET_SELECTOR",
    "LICENSE_CONTROLLER",
    "es_references",
    "license_secret_owners",
]

ELASTICSEARCH = kind_info("Elasticsearch").resource
#: The per-cluster license Secret (``<es>-es-license``) carries this label, not the cluster name.
ES_LICENSE_SECRET_SELECTOR = f"{LICENSE_SCOPE_LABEL}={LICENSE_SCOPE_ELASTICSEARCH}"

_CHILD_KINDS = (STATEFULSETS, SERVICES, CONFIGMAPS, SECRETS, PODS, PODDISRUPTIONBUDGETS)


def license_secret_owners(child: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """The Elasticsearch named by a child's ownerReferences (the ``<es>-es-license`` Secret)."""
    meta = view(child)
    return tuple(
        NamespacedName(meta.namespace, owner.name)
        for owner in meta.owner_references
        if owner.kind == ELASTICSEARCH.kind and owner.group == ELASTICSEARCH.group
    )[:1]


def es_references(es: Mapping[str, Any]) -> list[ObjectKey]:
    """The Secrets and ConfigMaps an Elasticsearch spec references."""
    return [
        ObjectKey(kind=item.kind, namespace=item.namespace, name=item.name)
        for item in referenced_objects(es)
    ]


_cluster_owners = owners_by_labels(namespace_label=None, name_label=ES_CLUSTER_NAME_LABEL)

ELASTICSEARCH_CONTROLLER = Controller(
    name="elasticsearch",
    primary=ELASTICSEARCH,
    gate=Gate.DYNAMIC_SCOPE,
    # The cluster-name Secret watch also covers the association controllers' user and
    # service-account-token Secrets (they carry the label), so the file realm follows them; the
    # license Secret has no cluster-name label and is mapped through its ownerReference.
    children=(
        *(
            ChildWatch(kind=kind, owners=_cluster_owners, label_selector=ES_CLUSTER_NAME_LABEL)
            for kind in _CHILD_KINDS
        ),
        ChildWatch(
            kind=SECRETS, owners=license_secret_owners, label_selector=ES_LICENSE_SECRET_SELECTOR
        ),
    ),
    references=es_references,
    reference_kinds=(SECRETS, CONFIGMAPS),
    # It asks the cluster for its health and license (10 s timeout each): not a local activity.
    local_step=False,
)

LICENSE_CONTROLLER = Controller(
    name="license",
    primary=ELASTICSEARCH,
    gate=Gate.NONE,
    children=(
        ChildWatch(
            kind=SECRETS, owners=license_secret_owners, label_selector=ES_LICENSE_SECRET_SELECTOR
        ),
    ),
    flip=FlipStrategy.CONTROLLER,
    # A cluster's license is applied through its own API, a second after its namespace flips.
    fast_flip=False,
)
