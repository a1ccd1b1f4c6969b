"""A StackConfigPolicy object read as the rules use it: its key, weight, resourceSelector and spec
(variables substituted), and why its resourceSelector cannot be used."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.api.stackconfigpolicy import StackConfigPolicy
from stackflow.models.objects import view
from stackflow.scope.selector import LabelSelector, SelectorError, label_selector_from_data
from stackflow.stack.policies.stack_config.variables import substitute_variables

#: The kind, as the soft-owner marks and the controller name it.
POLICY_KIND = StackConfigPolicy.KIND


@dataclass(frozen=True)
class Policy:
    """The parts of a StackConfigPolicy that targeting and merging read."""

    namespace: str
    name: str
    weight: int
    selector: LabelSelector
    spec: Mapping[str, Any]

    @property
    def key(self) -> str:
        """``namespace/name``, the way ECK names a policy in messages and annotations."""
        return f"{self.namespace}/{self.name}"


def parse_policy(obj: Mapping[str, Any], variables: Mapping[str, str] | None = None) -> Policy:
    """The policy of a StackConfigPolicy object; SelectorError for an unusable resourceSelector.

    ``variables`` (read from ``spec.variablesFrom``) are substituted in its Elasticsearch and
    Kibana settings (``substitute_variables``).
    """
    meta = view(obj)
    spec = dict(obj.get("spec") or {})
    if variables:
        for section in ("elasticsearch", "kibana"):
            if isinstance(spec.get(section), Mapping):
                spec[section] = substitute_variables(spec[section], variables)
    selector = label_selector_from_data(
        spec.get("resourceSelector") or {}, field="spec.resourceSelector"
    )
    return Policy(
        namespace=meta.namespace,
        name=meta.name,
        weight=int(spec.get("weight") or 0),
        selector=selector,
        spec=spec,
    )


def selector_problem(obj: Mapping[str, Any]) -> str | None:
    """Why a policy's resourceSelector cannot be used, or None."""
    try:
        parse_policy(obj)
    except SelectorError as error:
        return str(error)
    return None
