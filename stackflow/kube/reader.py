"""Read-through cache reads: what an informer cache can answer instead of the API server.

``ObjectReader`` is the small read interface activities use before falling back to an API call
(ECK's controller-runtime client reads Gets and Lists from its informer cache). Its answers are
the unscoped cache contents — callers apply the namespace scope themselves — or ``UNKNOWN`` when
no synced informer covers the request, in which case the caller asks the API server.

Answers are whole objects (without ``metadata.managedFields``) or nothing: a cache that keeps
projections (metadata and a digest, ``stackflow.kube.cache.Projection.METADATA``) answers
``UNKNOWN``, never its projections.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from stackflow.models.kinds import Kind
from stackflow.models.objects import view
from stackflow.scope.selector import SelectorError, parse_selector_string

__all__ = [
    "UNKNOWN",
    "ObjectReader",
    "Unknown",
    "equality_selector",
    "matches_labels",
]


class Unknown(enum.Enum):
    """The answer of a reader that has no synced cache for the request."""

    UNKNOWN = "unknown"


UNKNOWN: Literal[Unknown.UNKNOWN] = Unknown.UNKNOWN


class ObjectReader(Protocol):
    """Gets and Lists answered from informer caches of whole objects (unscoped), or ``UNKNOWN``."""

    def get(
        self, resource: Kind, *, namespace: str | None, name: str
    ) -> dict[str, Any] | Unknown | None:
        """The cached object, None when a synced cache of every object lacks it, else UNKNOWN."""
        ...

    def list(
        self, resource: Kind, *, namespace: str | None, label_selector: str | None
    ) -> list[dict[str, Any]] | Unknown:
        """The cached objects (of one namespace or all) matching the selector, or UNKNOWN."""
        ...

    def resource_version(self, resource: Kind, *, namespace: str | None, name: str) -> str | None:
        """The resourceVersion a synced cache holds for the object, whole or projected; None
        when no cache holds it (which says nothing about whether it exists)."""
        ...


def equality_selector(selector: str | None) -> dict[str, str] | None:
    """``a=b,c==d`` as a dict (empty for no selector); None when any term is not an equality
    (``!=``, ``in``, existence), which a cache read does not evaluate, or is malformed (pure)."""
    if not selector:
        return {}
    try:
        parsed = parse_selector_string(selector)
    except SelectorError:
        return None
    return None if parsed.match_expressions else dict(parsed.match_labels)


def matches_labels(obj: Mapping[str, Any], required: Mapping[str, str]) -> bool:
    """Whether ``obj`` carries every ``required`` label with its value (pure)."""
    labels = view(obj).labels
    return all(key in labels and str(labels[key]) == value for key, value in required.items())
