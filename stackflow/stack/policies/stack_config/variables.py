"""A policy's variables: the ``spec.variablesFrom`` sources, the variables each holds, and their
``${VAR}`` substitution in the policy's settings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.policies.stack_config.values import list_of, mapping_of, secret_text


@dataclass(frozen=True)
class VariableSource:
    """One ``spec.variablesFrom[]`` entry: a ConfigMap or Secret whose keys are variables."""

    kind: str
    namespace: str
    name: str
    optional: bool


def variable_sources(obj: Mapping[str, Any]) -> list[VariableSource]:
    """The policy's ``spec.variablesFrom``, in order (a later source wins a variable); the
    namespace defaults to the policy's own."""
    meta = view(obj)
    sources = []
    for entry in list_of((obj.get("spec") or {}).get("variablesFrom")):
        item = mapping_of(entry)
        if not item.get("name"):
            continue
        sources.append(
            VariableSource(
                kind=str(item.get("kind") or "ConfigMap"),
                namespace=str(item.get("namespace") or meta.namespace),
                name=str(item["name"]),
                optional=bool(item.get("optional")),
            )
        )
    return sources


def variables_of(source: VariableSource, obj: Mapping[str, Any]) -> dict[str, str]:
    """The variables a ConfigMap (``data``) or Secret (decoded ``data``) holds: key → value."""
    data = mapping_of(obj.get("data"))
    if source.kind != "Secret":
        return {str(key): str(value) for key, value in data.items()}
    variables = {}
    for key in data:
        decoded = secret_text(obj, str(key))
        if decoded is not None:
            variables[str(key)] = decoded
    return variables


#: ``${VAR}`` or ``${VAR:-default}``.
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)(?::-([^}]*))?\}")


def _substitute_text(text: str, variables: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in variables:
            return variables[name]
        if default is not None:
            return default
        return match.group(0)  # unknown: left as written (it may be an env var of the Pod)

    return _VARIABLE.sub(replace, text)


def substitute_variables(value: Any, variables: Mapping[str, str]) -> Any:
    """``value`` with ``${VAR}`` replaced by the variable's value in every string (keys too, as
    ECK substitutes in the JSON text); ``${VAR:-default}`` falls back to ``default``; an unknown
    variable without default is left as it is. A value is inserted as text, never parsed."""
    if isinstance(value, str):
        return _substitute_text(value, variables)
    if isinstance(value, Mapping):
        return {
            _substitute_text(str(key), variables): substitute_variables(item, variables)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [substitute_variables(item, variables) for item in value]
    return value
