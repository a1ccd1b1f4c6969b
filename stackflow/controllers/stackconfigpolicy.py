"""The StackConfigPolicy controller (ECK's ``stackconfigpolicy.k8s.elastic.co/v1alpha1``).

An enterprise feature in every mode. A policy is woken by its own changes, by the Secrets it
soft-owns (the ``<es>-es-file-settings``, ``<es>-es-policy-config`` and ``<kb>-kb-policy-config``
Secrets name their owning policies in labels, or in ECK's owner-refs annotation when several
policies own one), by the Elasticsearch clusters and Kibana instances it targets (its status
lists them, and the reference index wakes it on their changes), by its own secure settings
Secrets (references too: it re-stamps the targets' file-settings Secret), by the ConfigMaps and
Secrets its ``spec.variablesFrom`` names, by its ``secretMounts`` Secrets (it copies them into the
targets' namespaces as ``<es>-es-scp-<hash>``), and by namespace flips: a flip
concerns the policies of the flipped namespace and those of the operator namespace, which may
target any managed namespace.
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
)
from stackflow.models.engine import ObjectKey
from stackflow.models.keys import NamespacedName
from stackflow.models.kinds import CONFIGMAPS, SECRETS
from stackflow.stack.labels import SOFT_OWNER_KIND_LABEL
from stackflow.stack.policies.stack_config.owners import secret_owners
from stackflow.stack.policies.stack_config.policy import POLICY_KIND, parse_policy
from stackflow.stack.policies.stack_config.targeting import ELASTICSEARCH, KIBANA, Target, targets
from stackflow.stack.policies.stack_config.variables import variable_sources

__all__ = [
    "POLICY_SECRET_SELECTOR",
    "STACK_CONFIG_POLICY",
    "STACK_CONFIG_POLICY_CONTROLLER",
    "policy_references",
    "policy_secret_owners",
    "policy_selects",
    "policy_targets",
]

STACK_CONFIG_POLICY = kind_info(POLICY_KIND).resource
_TARGET_KINDS = {
    ELASTICSEARCH: kind_info("Elasticsearch").resource,
    KIBANA: kind_info("Kibana").resource,
}
#: Only the Secrets some policy soft-owns.
POLICY_SECRET_SELECTOR = f"{SOFT_OWNER_KIND_LABEL}={POLICY_KIND}"


def policy_secret_owners(child: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """The policies a policy-made Secret names as its owners (labels or owner-refs annotation)."""
    return tuple(NamespacedName(namespace, name) for namespace, name in secret_owners(child))


def policy_targets(policy: Mapping[str, Any]) -> list[ObjectKey]:
    """The clusters and Kibana instances a policy's status lists (``details``), as references:
    a change to one of them (its labels may no longer match) wakes the policy.

    A resource not targeted yet cannot be named here: ``policy_selects`` wakes the policy for it.
    """
    details = (policy.get("status") or {}).get("details") or {}
    keys: list[ObjectKey] = []
    for type_, kind in _TARGET_KINDS.items():
        entries = details.get(type_) if isinstance(details, Mapping) else None
        for key in sorted(entries or {}) if isinstance(entries, Mapping) else ():
            namespace, _, name = str(key).partition("/")
            if namespace and name:
                keys.append(ObjectKey.of(kind, namespace=namespace, name=name))
    # The ConfigMaps and Secrets of spec.variablesFrom: a changed variable re-renders the policy.
    for source in variable_sources(policy):
        kind = SECRETS if source.kind == "Secret" else CONFIGMAPS
        keys.append(ObjectKey.of(kind, namespace=source.namespace, name=source.name))
    return keys


def policy_references(policy: Mapping[str, Any]) -> list[ObjectKey]:
    """The policy's targets (``policy_targets``) and its own secure settings and ``secretMounts``
    Secrets (in its namespace): an edit of one wakes the policy, which re-stamps the targets'
    file-settings Secret so that the clusters rebuild their keystore (ECK's clusters watch those
    Secrets themselves), or copies the mounted Secret again into the clusters' namespaces."""
    namespace = str((policy.get("metadata") or {}).get("namespace") or "")
    spec = policy.get("spec") or {}
    lists = (
        spec.get("secureSettings"),
        (spec.get("elasticsearch") or {}).get("secureSettings"),
        (spec.get("kibana") or {}).get("secureSettings"),
        (spec.get("elasticsearch") or {}).get("secretMounts"),
    )
    secret_names = sorted(
        {
            str(item["secretName"])
            for listed in lists
            if isinstance(listed, list)
            for item in listed
            if isinstance(item, Mapping) and item.get("secretName")
        }
    )
    return [
        *policy_targets(policy),
        *(ObjectKey.of(SECRETS, namespace=namespace, name=name) for name in secret_names),
    ]


def policy_selects(
    policy: Mapping[str, Any], target: Mapping[str, Any], context: SelectionContext
) -> bool:
    """Whether a policy targets an Elasticsearch or Kibana (its namespace rule and its
    ``resourceSelector``): a cluster created or relabelled into a policy wakes that policy."""
    try:
        parsed = parse_policy(policy)
    except (ValueError, TypeError):  # an unusable selector or weight: the policy's own error
        return False
    return targets(
        parsed,
        Target.of(str(target.get("kind") or ""), target),
        operator_namespace=context.operator_namespace,
    )


STACK_CONFIG_POLICY_CONTROLLER = Controller(
    name="stackconfigpolicy",
    primary=STACK_CONFIG_POLICY,
    gate=Gate.ENTERPRISE,
    children=(
        ChildWatch(
            kind=SECRETS, owners=policy_secret_owners, label_selector=POLICY_SECRET_SELECTOR
        ),
    ),
    references=policy_references,
    reference_kinds=(*_TARGET_KINDS.values(), SECRETS, CONFIGMAPS),
    selections=tuple(
        SelectionWatch(kind=kind, selects=policy_selects) for kind in _TARGET_KINDS.values()
    ),
    flip=FlipStrategy.CONTROLLER,
    # It asks each targeted cluster which file-settings version it applied: not a local activity.
    local_step=False,
)
