"""The AutoOpsAgentPolicy controller (ECK's ``autoops.k8s.elastic.co/v1alpha1``).

Not enterprise-gated: only the agent version a license allows differs. A policy selects
Elasticsearch clusters cluster-wide, so every namespace flip concerns every policy (the flip
mapper returns them all). A policy is woken by its own changes, by the Deployments, ConfigMaps
and Secrets it wrote for its clusters (they name the policy in ECK's ``policy-name`` /
``policy-namespace`` labels, the API-key Secret without an ownerReference), and by the
clusters its selectors pick (``autoops_policy_selects``: any change to one, whether it is
served, skipped or only now matching).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.api.kinds import kind_info
from stackflow.controllers.table import (
    ChildWatch,
    Controller,
    FlipStrategy,
    Gate,
    SelectionContext,
    SelectionWatch,
    owners_by_labels,
)
from stackflow.models.engine import ObjectKey
from stackflow.models.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS
from stackflow.models.objects import view
from stackflow.stack.policies.autoops import (
    POLICY_KIND,
    POLICY_NAME_LABEL,
    POLICY_NAMESPACE_LABEL,
    parse_policy,
)

__all__ = [
    "AUTOOPS_CHILD_SELECTOR",
    "AUTOOPS_POLICY",
    "AUTOOPS_POLICY_CONTROLLER",
    "ELASTICSEARCH",
    "RELEASE_CLUSTER_ACTIVITY",
    "autoops_policy_owners",
    "autoops_policy_references",
    "autoops_policy_selects",
]

AUTOOPS_POLICY = kind_info(POLICY_KIND).resource
ELASTICSEARCH = kind_info("Elasticsearch").resource
#: Only the objects some AutoOps policy wrote.
AUTOOPS_CHILD_SELECTOR = POLICY_NAME_LABEL

autoops_policy_owners = owners_by_labels(
    namespace_label=POLICY_NAMESPACE_LABEL, name_label=POLICY_NAME_LABEL
)
"""A per-cluster object → the policy its labels name (an agent wakes its policy)."""


def autoops_policy_references(policy: Mapping[str, Any]) -> list[ObjectKey]:
    """The clusters the policy's ``status.details`` names (skipped or failed): a change to one
    (a new version, a fixed error) wakes the policy; and, as ECK's dynamic watches, the
    ``autoOpsRef`` Secret and the ``configRef`` source (a rotated token rolls the agents)."""
    spec = policy.get("spec") or {}
    namespace = str((policy.get("metadata") or {}).get("namespace") or "")
    keys: list[ObjectKey] = []
    connection = (spec.get("autoOpsRef") or {}).get("secretName")
    if connection:
        keys.append(ObjectKey.of(SECRETS, namespace=namespace, name=str(connection)))
    config_ref = spec.get("configRef") or {}
    if config_ref.get("secretName"):
        keys.append(ObjectKey.of(SECRETS, namespace=namespace, name=str(config_ref["secretName"])))
    if config_ref.get("configMapName"):
        keys.append(
            ObjectKey.of(CONFIGMAPS, namespace=namespace, name=str(config_ref["configMapName"]))
        )
    details = (policy.get("status") or {}).get("details") or {}
    for key in sorted(details) if isinstance(details, Mapping) else ():
        namespace, _, name = str(key).partition("/")
        if namespace and name:
            keys.append(ObjectKey.of(ELASTICSEARCH, namespace=namespace, name=name))
    return keys


def autoops_policy_selects(
    policy: Mapping[str, Any], cluster: Mapping[str, Any], context: SelectionContext
) -> bool:
    """Whether a policy's selectors pick a cluster (its ``resourceSelector`` over the cluster's
    labels, its ``namespaceSelector`` over its Namespace's): any change to such a cluster — it
    appears, is relabelled, becomes Ready, changes version — wakes the policy."""
    try:
        parsed = parse_policy(policy)
    except (ValueError, TypeError):  # an unusable selector or weight: the policy's own error
        return False
    if not parsed.resource_selector.matches(dict(view(cluster).labels)):
        return False
    return parsed.namespace_selector is None or parsed.namespace_selector.matches(
        context.namespace_labels
    )


#: The compensation that releases what a policy holds for one cluster: the agent's Deployment,
#: ConfigMap and Secrets, and the cluster's API key (invalidated). Recorded per served cluster.
RELEASE_CLUSTER_ACTIVITY = "autoopsagentpolicy.release_cluster"

AUTOOPS_POLICY_CONTROLLER = Controller(
    name="autoopsagentpolicy",
    primary=AUTOOPS_POLICY,
    gate=Gate.NONE,
    children=tuple(
        ChildWatch(kind=kind, owners=autoops_policy_owners, label_selector=AUTOOPS_CHILD_SELECTOR)
        for kind in (DEPLOYMENTS, CONFIGMAPS, SECRETS)
    ),
    references=autoops_policy_references,
    reference_kinds=(ELASTICSEARCH, SECRETS, CONFIGMAPS),
    selections=(SelectionWatch(kind=ELASTICSEARCH, selects=autoops_policy_selects),),
    flip=FlipStrategy.CONTROLLER,
    # It creates and invalidates API keys in the served clusters: not a local activity.
    local_step=False,
    compensations=(RELEASE_CLUSTER_ACTIVITY,),
)
