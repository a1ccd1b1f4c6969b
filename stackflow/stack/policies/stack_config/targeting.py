"""Which policies target an Elasticsearch cluster or a Kibana instance, in merge order (ECK's
``DoesPolicyMatchObject`` and the weight ordering)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.policies.stack_config.merge import MergeConflictError
from stackflow.stack.policies.stack_config.policy import Policy

#: The resource types of a policy's ``status.details``.
ELASTICSEARCH = "elasticsearch"
KIBANA = "kibana"


@dataclass(frozen=True)
class Target:
    """An Elasticsearch cluster or Kibana instance a policy may target."""

    type: str
    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``, the key of ``status.details.<type>``."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, type_: str, obj: Mapping[str, Any]) -> Target:
        """The target of an Elasticsearch or Kibana object."""
        meta = view(obj)
        return cls(type_, meta.namespace, meta.name, dict(meta.labels))


def targets(policy: Policy, target: Target, *, operator_namespace: str) -> bool:
    """ECK's ``DoesPolicyMatchObject``: a policy in the operator namespace may target any
    namespace, one elsewhere only its own; its resourceSelector must match the labels."""
    if policy.namespace not in (operator_namespace, target.namespace):
        return False
    return policy.selector.matches(target.labels)


def policies_for(
    target: Target, policies: Iterable[Policy], *, operator_namespace: str
) -> list[Policy]:
    """The policies targeting ``target``, lowest weight first (the last one wins a key).

    MergeConflictError when two of them have the same weight: which one wins would be arbitrary.
    """
    by_weight: dict[int, Policy] = {}
    for policy in sorted(policies, key=lambda p: (p.namespace, p.name)):
        if not targets(policy, target, operator_namespace=operator_namespace):
            continue
        existing = by_weight.get(policy.weight)
        if existing is not None:
            raise MergeConflictError(
                f'merge conflict: policies "{policy.key}" and "{existing.key}" '
                f"have the same weight {policy.weight}"
            )
        by_weight[policy.weight] = policy
    return [by_weight[weight] for weight in sorted(by_weight)]
