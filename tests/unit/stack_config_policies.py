"""Policies for the StackConfigPolicy table tests: an object as the API server holds it, and
the parsed policy the rules take."""

from __future__ import annotations

from typing import Any

from stackflow.stack.policies.stack_config.policy import Policy, parse_policy

OPERATOR = "elastic-system"


def policy_obj(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A StackConfigPolicy object with ``spec``."""
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


def policy(namespace: str, name: str, weight: int = 0, **spec: Any) -> Policy:
    """The parsed policy of ``namespace/name`` with ``weight`` and the other ``spec`` fields."""
    return parse_policy(policy_obj(namespace, name, {"weight": weight, **spec}))


def es_policy(name: str, weight: int, **elasticsearch: Any) -> Policy:
    """A policy of the operator namespace with only an ``elasticsearch`` section."""
    return policy(OPERATOR, name, weight, elasticsearch=elasticsearch)
