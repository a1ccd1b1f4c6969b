"""ECK's AutoOpsAgentPolicy rules as pure functions: which Elasticsearch clusters a policy serves,
which it skips, the names and labels of the objects written for each served cluster, the hash
that decides when a cluster's API key is recreated, the start-up clean-up of orphaned API-key
Secrets and the policy's status.

Nothing here does I/O: a controller would read the policy, the clusters and their namespaces'
labels and the current Secrets, call these functions and write what they return.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stackflow.api.autoops import PHASE_PRIORITY
from stackflow.models.objects import view
from stackflow.scope.selector import LabelSelector, label_selector_from_data
from stackflow.stack.access import DEFAULT_SERVICE_ACCOUNT
from stackflow.stack.labels import (
    ES_CONFIG_HASH_LABEL,
    MANAGED_BY_ECK,
    METADATA_MANAGED_BY,
    TYPE_LABEL,
    WATCHED_LABEL,
)
from stackflow.stack.naming import Namer, hash_object
from stackflow.stack.pods import content_hash
from stackflow.stack.policies.autoops_agent import API_KEY_SECRET_KEY
from stackflow.stack.version import parse_version

__all__ = [
    "AGENT_TYPE",
    "API_KEY_ROLE_NAME",
    "API_KEY_SECRET_TYPE",
    "CA_SECRET_TYPE",
    "CLIENT_CERT_SECRET_TYPE",
    "CONFIG_HASH_ANNOTATION",
    "DEPRECATED_MAJOR",
    "ES_NAMESPACE_LABEL",
    "ES_NAME_LABEL",
    "MAX_LABEL_VALUE_LENGTH",
    "POLICY_KIND",
    "POLICY_NAMESPACE_LABEL",
    "POLICY_NAME_LABEL",
    "ROLE_DESCRIPTORS",
    "SECRET_TYPE_LABEL",
    "ApiKeyPlan",
    "AutoOpsPolicy",
    "Cluster",
    "ClusterObjectNames",
    "Selection",
    "access_denied_reason",
    "api_key_hash",
    "api_key_metadata",
    "api_key_name",
    "api_key_plan",
    "api_key_secret_labels",
    "cluster_hash",
    "cluster_object_labels",
    "cluster_object_names",
    "matched_cluster_keys",
    "orphaned_api_key_secrets",
    "parse_policy",
    "policy_status",
    "secret_labels",
    "select_clusters",
    "watched_object_labels",
]

POLICY_KIND = "AutoOpsAgentPolicy"

DEPRECATED_MAJOR = 7
"""ECK gives no agent to a cluster of a deprecated version (its range 7.0.0 to 7.99.99): such a
matched cluster is ``Skipped`` and not counted in ``status.resources``."""

MAX_LABEL_VALUE_LENGTH = 63
"""Kubernetes label values (and DNS-1123 labels) are at most 63 characters."""

POLICY_NAME_LABEL = "autoops.k8s.elastic.co/policy-name"
POLICY_NAMESPACE_LABEL = "autoops.k8s.elastic.co/policy-namespace"
#: Which of the per-cluster Secrets an object is (``api-key``, ``ca``, ``client-cert``).
SECRET_TYPE_LABEL = "autoops.k8s.elastic.co/secret-type"
ES_NAME_LABEL = "elasticsearch.k8s.elastic.co/name"
ES_NAMESPACE_LABEL = "elasticsearch.k8s.elastic.co/namespace"
#: ``common.k8s.elastic.co/type`` of every object written for a policy.
AGENT_TYPE = "autoops-agent"
#: ``autoops.k8s.elastic.co/secret-type`` values; the API-key one is what the start-up
#: clean-up lists by.
API_KEY_SECRET_TYPE = "api-key"
CA_SECRET_TYPE = "ca"
CLIENT_CERT_SECRET_TYPE = "client-cert"
#: The hash that rolls the agent's pods (on the Deployment and its pod template).
CONFIG_HASH_ANNOTATION = "autoops.k8s.elastic.co/config-hash"

#: ECK's Namer short name for AutoOps objects: ``<policy>-autoops-<suffix>-<hash>``.
NAMER = Namer("autoops")
_HASH_LENGTH = 8
_DEPLOYMENT_SUFFIX = "deploy"
_CONFIG_MAP_SUFFIX = "config"
_API_KEY_SUFFIX = "apikey"
_CA_SUFFIX = "ca"
_CLIENT_CERT_SUFFIX = "cc"


@dataclass(frozen=True)
class AutoOpsPolicy:
    """The parts of an AutoOpsAgentPolicy that selection and naming read."""

    namespace: str
    name: str
    resource_selector: LabelSelector
    #: None: every namespace (the field is optional).
    namespace_selector: LabelSelector | None = None
    #: ``spec.serviceAccountName`` as written: whose access enforce-rbac-on-refs checks.
    service_account_name: str = ""

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"


def parse_policy(obj: Mapping[str, Any]) -> AutoOpsPolicy:
    """The policy of an AutoOpsAgentPolicy object; SelectorError for an unusable selector."""
    meta = view(obj)
    spec = obj.get("spec") or {}
    namespace_selector_data = spec.get("namespaceSelector")
    return AutoOpsPolicy(
        namespace=meta.namespace,
        name=meta.name,
        resource_selector=label_selector_from_data(
            spec.get("resourceSelector") or {}, field="spec.resourceSelector"
        ),
        namespace_selector=(
            None
            if namespace_selector_data is None
            else label_selector_from_data(namespace_selector_data, field="spec.namespaceSelector")
        ),
        service_account_name=str(spec.get("serviceAccountName") or ""),
    )


@dataclass(frozen=True)
class Cluster:
    """An Elasticsearch cluster as selection reads it."""

    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``status.phase``; only Ready clusters are served.
    phase: str | None = None
    #: ``spec.version``.
    version: str = ""

    @property
    def key(self) -> str:
        """``namespace/name``, the key of ``status.details``."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Cluster:
        """The cluster of an Elasticsearch object."""
        meta = view(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return cls(
            namespace=meta.namespace,
            name=meta.name,
            labels=dict(meta.labels),
            phase=status.get("phase"),
            version=str(spec.get("version") or ""),
        )


@dataclass(frozen=True)
class Selection:
    """How a policy sees the clusters: all are sorted ``namespace/name`` keys."""

    #: Selected by both selectors: the policy's ``status.resources``.
    matched: tuple[str, ...] = ()
    #: Matched, Ready and of a supported version: these get an agent.
    served: tuple[str, ...] = ()
    #: Matched but not (yet) Ready.
    not_ready: tuple[str, ...] = ()
    #: Matched but skipped, with the reason (the ``Skipped`` detail's message).
    skipped: Mapping[str, str] = field(default_factory=dict)
    #: Matched but unusable (a version that does not parse), with the ``Error`` detail's error.
    errors: Mapping[str, str] = field(default_factory=dict)


def _version_verdict(version_text: str) -> tuple[str | None, str | None]:
    """``(skip reason, error)`` of a cluster's version: ECK skips the deprecated 7.x clusters and
    reports a version it cannot parse as the cluster's error."""
    try:
        version = parse_version(version_text)
    except ValueError as error:
        return None, f"Failed trying to parse cluster version: {error}"
    if version.major == DEPRECATED_MAJOR:
        return f"ES cluster is in deprecated version {version_text}", None
    return None, None


def access_denied_reason(policy: AutoOpsPolicy) -> str:
    """ECK's ``Skipped`` message for a cluster the policy's ServiceAccount may not get (naming
    ``default`` when the policy names none, where ECK leaves the name empty)."""
    account = policy.service_account_name or DEFAULT_SERVICE_ACCOUNT
    return f"RBAC access denied for service account {account}"


def select_clusters(
    policy: AutoOpsPolicy,
    clusters: Iterable[Cluster],
    namespace_labels: Mapping[str, Mapping[str, str]],
    *,
    access_denied: Mapping[str, str] | None = None,
) -> Selection:
    """Which clusters the policy matches, serves, waits for and skips.

    A policy selects cluster-wide: ``resourceSelector`` must match the cluster's labels and
    ``namespaceSelector`` (when set) its namespace's labels (a namespace absent from
    ``namespace_labels`` has none). A matched cluster in ``access_denied`` (by key, with the
    reason: enforce-rbac-on-refs) is skipped first, as ECK orders it; then one of a deprecated
    version (7.x) is skipped and one whose version does not parse is in error, whatever its
    phase; any other is served once its phase is Ready.
    """
    denied = access_denied or {}
    matched: list[str] = []
    served: list[str] = []
    not_ready: list[str] = []
    skipped: dict[str, str] = {}
    invalid: dict[str, str] = {}
    for cluster in sorted(clusters, key=lambda c: (c.namespace, c.name)):
        if not policy.resource_selector.matches(cluster.labels):
            continue
        if policy.namespace_selector is not None and not policy.namespace_selector.matches(
            namespace_labels.get(cluster.namespace, {})
        ):
            continue
        matched.append(cluster.key)
        denied_reason = denied.get(cluster.key)
        reason, error = (
            (denied_reason, None) if denied_reason else _version_verdict(cluster.version)
        )
        if reason is not None:
            skipped[cluster.key] = reason
        elif error is not None:
            invalid[cluster.key] = error
        elif cluster.phase == "Ready":
            served.append(cluster.key)
        else:
            not_ready.append(cluster.key)
    return Selection(tuple(matched), tuple(served), tuple(not_ready), skipped, invalid)


def matched_cluster_keys(
    policy: AutoOpsPolicy,
    clusters: Iterable[Cluster],
    namespace_labels: Mapping[str, Mapping[str, str]],
) -> tuple[str, ...]:
    """The ``namespace/name`` keys of the clusters the policy serves (matched, Ready, supported)."""
    return select_clusters(policy, clusters, namespace_labels).served


@dataclass(frozen=True)
class ClusterObjectNames:
    """The names of the objects written for one served cluster, in the policy's namespace."""

    deployment: str
    config_map: str
    api_key_secret: str
    ca_secret: str
    client_certificate_secret: str


def cluster_hash(es_namespace: str, es_name: str) -> str:
    """ECK's ``hash.HashObject(esNamespace + esName)``: the two strings joined as they are,
    hashed as one Go string (so ``a``/``bc`` and ``ab``/``c`` share it, as in ECK)."""
    return hash_object(es_namespace + es_name)


def cluster_object_names(policy_name: str, es_namespace: str, es_name: str) -> ClusterObjectNames:
    """ECK's names ``<policy>-autoops-<suffix>-<h>`` of one cluster's objects, ``h`` being
    :func:`cluster_hash`. The Namer truncates an overlong policy name (ECK's webhook keeps
    names within 36 characters, so it never does for a validated policy)."""
    h = cluster_hash(es_namespace, es_name)
    return ClusterObjectNames(
        deployment=NAMER.suffix(policy_name, _DEPLOYMENT_SUFFIX, h),
        config_map=NAMER.suffix(policy_name, _CONFIG_MAP_SUFFIX, h),
        api_key_secret=NAMER.suffix(policy_name, _API_KEY_SUFFIX, h),
        ca_secret=NAMER.suffix(policy_name, _CA_SUFFIX, h),
        client_certificate_secret=NAMER.suffix(policy_name, _CLIENT_CERT_SUFFIX, h),
    )


def api_key_name(
    *, policy_namespace: str, policy_name: str, es_namespace: str, es_name: str
) -> str:
    """The Elasticsearch API key's name: ``autoops-<policyNs>-<policy>-<esNs>-<es>``."""
    return f"autoops-{policy_namespace}-{policy_name}-{es_namespace}-{es_name}"


def cluster_object_labels(
    *, policy_namespace: str, policy_name: str, es_namespace: str, es_name: str
) -> dict[str, str]:
    """The labels of every object written for one cluster: the type, the policy and the cluster.

    ECK's webhook keeps policy and cluster names within 36 characters; a longer value (an
    object created without the webhook) is replaced by a prefix and its hash so that the
    object can still be written and found.
    """
    return {
        TYPE_LABEL: AGENT_TYPE,
        POLICY_NAMESPACE_LABEL: _label_value(policy_namespace),
        POLICY_NAME_LABEL: _label_value(policy_name),
        ES_NAMESPACE_LABEL: _label_value(es_namespace),
        ES_NAME_LABEL: _label_value(es_name),
    }


def secret_labels(
    secret_type: str,
    *,
    policy_namespace: str,
    policy_name: str,
    es_namespace: str,
    es_name: str,
) -> dict[str, str]:
    """A per-cluster Secret's labels: the ConfigMap's (:func:`watched_object_labels`) and its
    ``secret-type``."""
    labels = watched_object_labels(
        policy_namespace=policy_namespace,
        policy_name=policy_name,
        es_namespace=es_namespace,
        es_name=es_name,
    )
    labels[SECRET_TYPE_LABEL] = secret_type
    return labels


def watched_object_labels(
    *, policy_namespace: str, policy_name: str, es_namespace: str, es_name: str
) -> dict[str, str]:
    """The labels of the ConfigMap and Secrets written for one cluster: the object labels and
    ECK's ``eck.k8s.elastic.co/watched: "true"`` (the Deployment has only the object labels)."""
    labels = cluster_object_labels(
        policy_namespace=policy_namespace,
        policy_name=policy_name,
        es_namespace=es_namespace,
        es_name=es_name,
    )
    labels[WATCHED_LABEL] = "true"
    return labels


def api_key_secret_labels(
    *,
    policy_namespace: str,
    policy_name: str,
    es_namespace: str,
    es_name: str,
    key_hash: str | None = None,
) -> dict[str, str]:
    """The API-key Secret's labels. It has no ownerReference (the API key lives in
    Elasticsearch, and the key must be invalidated before the Secret goes), so these labels are
    how the finalizer and the start-up clean-up find it. With ``key_hash``, ECK's
    ``elasticsearch.k8s.elastic.co/config-hash`` label: the hash the key was made for."""
    labels = secret_labels(
        API_KEY_SECRET_TYPE,
        policy_namespace=policy_namespace,
        policy_name=policy_name,
        es_namespace=es_namespace,
        es_name=es_name,
    )
    if key_hash is not None:
        labels[ES_CONFIG_HASH_LABEL] = key_hash
    return labels


def _label_value(value: str) -> str:
    if len(value) <= MAX_LABEL_VALUE_LENGTH:
        return value
    # A long value keeps a readable prefix and a hash of the whole, so it stays unique.
    digest = hashlib.sha256(value.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{value[: MAX_LABEL_VALUE_LENGTH - _HASH_LENGTH - 1].rstrip('-._')}-{digest}"


API_KEY_ROLE_NAME = "eck_autoops_role"
#: What the agent's key may do: ECK's AutoOps role (read the cluster's monitoring APIs), plus
#: ``manage_own_api_key`` so that the key can invalidate itself once its cluster is out of scope.
ROLE_DESCRIPTORS: Mapping[str, Any] = {
    API_KEY_ROLE_NAME: {
        "cluster": ["monitor", "read_ilm", "read_slm", "manage_own_api_key"],
        "indices": [
            {
                "names": ["*"],
                "privileges": ["monitor", "view_index_metadata"],
                "allow_restricted_indices": True,
            }
        ],
    }
}


def api_key_hash(role_descriptors: Mapping[str, Any] = ROLE_DESCRIPTORS) -> str:
    """The hash of what a key grants (FNV-32a of the canonical role descriptors), kept in the
    key's metadata and on its Secret: a key made for other role descriptors is replaced."""
    return content_hash(dict(role_descriptors))


def api_key_metadata(
    *, policy_namespace: str, policy_name: str, es_namespace: str, es_name: str, key_hash: str
) -> dict[str, str]:
    """ECK's metadata of the cluster's API key: the type, the hash, the cluster, the policy
    and ``managed-by: eck``."""
    return {
        TYPE_LABEL: AGENT_TYPE,
        ES_CONFIG_HASH_LABEL: key_hash,
        ES_NAME_LABEL: es_name,
        ES_NAMESPACE_LABEL: es_namespace,
        METADATA_MANAGED_BY: MANAGED_BY_ECK,
        POLICY_NAME_LABEL: policy_name,
        POLICY_NAMESPACE_LABEL: policy_namespace,
    }


@dataclass(frozen=True)
class ApiKeyPlan:
    """What to do with a cluster's API key: invalidate ``invalidate`` (ids), then ``create``."""

    create: bool
    invalidate: tuple[str, ...] = ()


def api_key_plan(
    active_keys: Iterable[Mapping[str, Any]],
    *,
    name: str,
    key_hash: str,
    secret: Mapping[str, Any] | None,
) -> ApiKeyPlan:
    """ECK's rule for the cluster's API key, from the active keys of its name in Elasticsearch.

    No key of that name: create one. A key not managed by ECK (``managed-by`` metadata), made
    for another hash, or whose Secret is missing or holds no key: invalidate it and create
    another. Otherwise keep it (its Secret is written again, which restores its labels).
    """
    active = next((key for key in active_keys if key.get("name") == name), None)
    if active is None:
        return ApiKeyPlan(create=True)
    metadata = active.get("metadata") or {}
    stale = (
        metadata.get(METADATA_MANAGED_BY) != MANAGED_BY_ECK
        or metadata.get(ES_CONFIG_HASH_LABEL) != key_hash
    )
    stored = (secret or {}).get("data") or {}
    if stale or secret is None or not stored.get(API_KEY_SECRET_KEY):
        return ApiKeyPlan(create=True, invalidate=(str(active.get("id")),))
    return ApiKeyPlan(create=False)


def orphaned_api_key_secrets(
    secrets: Iterable[Mapping[str, Any]], policies: Iterable[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The ``(namespace, name)`` of the API-key Secrets to delete at start-up.

    A Secret is an API-key Secret by its ``secret-type`` label; it is orphaned when the policy its labels
    name (``(namespace, name)`` in ``policies``, compared after the same label shortening) no
    longer exists. A Secret without both policy labels is left alone: it is not known to be
    ours. The result is sorted.
    """
    existing = {(_label_value(namespace), _label_value(name)) for namespace, name in policies}
    orphaned: list[tuple[str, str]] = []
    for secret in secrets:
        meta = view(secret)
        labels = meta.labels
        if labels.get(SECRET_TYPE_LABEL) != API_KEY_SECRET_TYPE:
            continue
        policy_namespace = labels.get(POLICY_NAMESPACE_LABEL)
        policy_name = labels.get(POLICY_NAME_LABEL)
        if not policy_namespace or not policy_name:
            continue
        if (policy_namespace, policy_name) not in existing:
            orphaned.append((meta.namespace, meta.name))
    return sorted(orphaned)


def policy_status(
    selection: Selection,
    *,
    agents_ready: Mapping[str, bool],
    errors: Mapping[str, str] | None = None,
    observed_generation: int | None = None,
) -> dict[str, Any]:
    """The policy's ``status``, as ECK counts it.

    ``resources`` counts the matched clusters that are neither skipped nor in error for their
    version (ECK's accessible clusters), ``ready`` those served whose agent is ready
    (``agents_ready`` by cluster key), ``errors`` the clusters in error (``errors`` and the
    selection's). Skipped and failed clusters get a ``details`` entry. The phase is the
    highest-priority one of: ``NoMonitoredResources`` (no resources), ``Error`` (some cluster
    failed), ``MonitoredResourcesNotReady`` (a matched cluster is not Ready),
    ``AutoOpsAgentsNotReady`` (a served cluster's agent is not ready), else ``Ready``.
    """
    failures = {**dict(selection.errors), **dict(errors or {})}
    resources = len(selection.matched) - len(selection.skipped) - len(selection.errors)
    ready = sum(
        1 for key in selection.served if agents_ready.get(key, False) and key not in failures
    )
    details: dict[str, dict[str, str]] = {}
    for key, reason in sorted(selection.skipped.items()):
        details[key] = {"phase": "Skipped", "message": reason}
    for key, error in sorted(failures.items()):
        details[key] = {"phase": "Error", "error": error}
    candidates: list[str] = ["Ready"]
    if resources == 0:
        candidates.append("NoMonitoredResources")
    if failures:
        candidates.append("Error")
    if selection.not_ready:
        candidates.append("MonitoredResourcesNotReady")
    if any(not agents_ready.get(key, False) for key in selection.served if key not in failures):
        candidates.append("AutoOpsAgentsNotReady")
    # max keeps the first of equal priorities: a not-Ready cluster is reported before its agent
    # (ECK: the not-Ready cluster leaves its reconcile incomplete, which keeps that phase).
    phase = max(candidates, key=lambda candidate: PHASE_PRIORITY[candidate])
    status: dict[str, Any] = {
        "resources": resources,
        "ready": ready,
        "errors": len(failures),
        "skipped": len(selection.skipped),
        "readyCount": f"{ready}/{resources}",
        "phase": phase,
    }
    if details:
        status["details"] = details
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    return status
