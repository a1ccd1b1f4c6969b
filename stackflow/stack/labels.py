"""Label and annotation keys ECK puts on child objects, and the helpers that build label sets."""

from __future__ import annotations

TYPE_LABEL = "common.k8s.elastic.co/type"
WATCHED_LABEL = "eck.k8s.elastic.co/watched"
CREDENTIALS_LABEL = "eck.k8s.elastic.co/credentials"
SOFT_OWNER_NAMESPACE_LABEL = "eck.k8s.elastic.co/owner-namespace"
SOFT_OWNER_NAME_LABEL = "eck.k8s.elastic.co/owner-name"
SOFT_OWNER_KIND_LABEL = "eck.k8s.elastic.co/owner-kind"
TEMPLATE_HASH_LABEL = "common.k8s.elastic.co/template-hash"

ES_TYPE = "elasticsearch"
ES_CLUSTER_NAME_LABEL = "elasticsearch.k8s.elastic.co/cluster-name"
ES_STATEFULSET_NAME_LABEL = "elasticsearch.k8s.elastic.co/statefulset-name"
ES_VERSION_LABEL = "elasticsearch.k8s.elastic.co/version"
ES_HTTP_SCHEME_LABEL = "elasticsearch.k8s.elastic.co/http-scheme"
ES_POD_NAME_LABEL = "elasticsearch.k8s.elastic.co/pod-name"
ES_CONFIG_HASH_LABEL = "elasticsearch.k8s.elastic.co/config-hash"
#: The same key as an annotation of the Pod template: the hash of the node's configuration,
#: scripts and keystore, whose change restarts the node (ECK's ``ConfigHashAnnotationName``).
ES_CONFIG_HASH_ANNOTATION = ES_CONFIG_HASH_LABEL
ES_CLUSTER_UUID_ANNOTATION = "elasticsearch.k8s.elastic.co/cluster-uuid"
#: The metadata by which ECK marks the Elasticsearch API keys it manages (remote clusters,
#: AutoOps): a key without it is not the operator's to keep.
METADATA_MANAGED_BY = "elasticsearch.k8s.elastic.co/managed-by"
MANAGED_BY_ECK = "eck"

ES_NODE_ROLES = (
    "master",
    "data",
    "ingest",
    "ml",
    "transform",
    "remote_cluster_client",
    "voting_only",
    "data_hot",
    "data_warm",
    "data_cold",
    "data_content",
    "data_frozen",
)
"""Roles that get an ``elasticsearch.k8s.elastic.co/node-<role>`` boolean label."""


def node_role_label(role: str) -> str:
    """Return the label key carrying whether a node has ``role``."""
    return f"elasticsearch.k8s.elastic.co/node-{role}"


def es_cluster_labels(es_name: str) -> dict[str, str]:
    """Return the labels every Elasticsearch child carries (type and cluster name)."""
    return {TYPE_LABEL: ES_TYPE, ES_CLUSTER_NAME_LABEL: es_name}


def es_statefulset_selector(es_name: str, statefulset_name: str) -> dict[str, str]:
    """Return the selector labels of one node set's StatefulSet and headless Service."""
    return {ES_CLUSTER_NAME_LABEL: es_name, ES_STATEFULSET_NAME_LABEL: statefulset_name}


def soft_owner_labels(*, namespace: str, name: str, kind: str) -> dict[str, str]:
    """Return the soft-owner labels that stand in for an ownerReference."""
    return {
        SOFT_OWNER_NAMESPACE_LABEL: namespace,
        SOFT_OWNER_NAME_LABEL: name,
        SOFT_OWNER_KIND_LABEL: kind,
    }


def role_labels(roles: frozenset[str]) -> dict[str, str]:
    """Return the ``node-<role>`` boolean labels for a node with ``roles``.

    Tier labels reflect the configured roles exactly; ``node-data`` is true for any node that can
    hold data, whether through the generic ``data`` role or a tier role (ECK's ``CanContainData``).
    """
    labels = {node_role_label(role): "true" if role in roles else "false" for role in ES_NODE_ROLES}
    if any(role == "data" or role.startswith("data_") for role in roles):
        labels[node_role_label("data")] = "true"
    return labels
