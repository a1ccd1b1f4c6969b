"""Namespace scope: label selectors, the NamespaceMatcher and the flip rule (pure, no I/O)."""

from __future__ import annotations

from stackflow.scope.flip import (
    FlipDirection,
    create_or_delete_passes,
    flip_direction,
    namespace_flip,
    update_passes,
)
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
    label_selector_from_data,
    parse_selector_string,
)

__all__ = [
    "MUTUALLY_EXCLUSIVE_MESSAGE",
    "FlipDirection",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NamespaceMatcher",
    "NamespaceName",
    "NamespaceSource",
    "ScopeConfig",
    "ScopeMode",
    "SelectorError",
    "SelectorOperator",
    "create_or_delete_passes",
    "flip_direction",
    "label_selector_from_data",
    "namespace_flip",
    "parse_selector_string",
    "update_passes",
]
