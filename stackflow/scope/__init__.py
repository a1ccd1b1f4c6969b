"""Namespace scope: label selectors, the NamespaceMatcher and the flip rule (pure, no I/O)."""

from __future__ import annotations

from stackflow.scope.flip import SelectorFlip, namespace_flip_direction, selector_change_flips
from stackflow.scope.matcher import (
    MUTUALLY_EXCLUSIVE_MESSAGE,
    NamespaceMatcher,
    NamespaceSource,
    ScopeConfig,
    ScopeMode,
)
from stackflow.scope.selector import (
    LabelSelector,
    LabelSelectorRequirement,
    NamespaceName,
    SelectorError,
    SelectorOperator,
    equality_selector_string,
    label_selector_from_data,
    parse_selector_string,
)

__all__ = [
    "MUTUALLY_EXCLUSIVE_MESSAGE",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NamespaceMatcher",
    "NamespaceName",
    "NamespaceSource",
    "ScopeConfig",
    "ScopeMode",
    "SelectorError",
    "SelectorFlip",
    "SelectorOperator",
    "equality_selector_string",
    "label_selector_from_data",
    "namespace_flip_direction",
    "parse_selector_string",
    "selector_change_flips",
]
