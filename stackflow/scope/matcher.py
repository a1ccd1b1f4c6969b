"""Which namespaces the operator manages: the scope mode and the NamespaceMatcher.

Mirrors ECK's ``nsmatch.NamespaceMatcher``: ``""`` (cluster-scoped objects) and the operator
namespace are always managed and never consult the selector; any other namespace is looked up in
the Namespace cache, and a namespace that cannot be found there does not match. In static mode
(a fixed list, or all namespaces) the matcher answers through the same interface from the list
alone, so callers need not know which mode is on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from stackflow.scope.selector import LabelSelector, NamespaceName

logger = logging.getLogger("stackflow.scope")

MUTUALLY_EXCLUSIVE_MESSAGE = '"namespaces" and "namespace-selector" are mutually exclusive'


class ScopeMode(StrEnum):
    """How the managed namespaces are chosen."""

    ALL_NAMESPACES = "all-namespaces"
    STATIC_LIST = "static-list"
    DYNAMIC = "dynamic"


@dataclass(frozen=True)
class ScopeConfig:
    """The namespace scope of the operator, as configured.

    `namespace_selector` None (or an empty selector) turns dynamic mode off; `namespaces` None
    (or empty) means all namespaces. Both set is the configuration error ECK reports.
    """

    operator_namespace: str
    namespace_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        """Refuse a selector together with a static namespace list."""
        if self.has_selector() and self.namespaces:
            raise ValueError(MUTUALLY_EXCLUSIVE_MESSAGE)

    def has_selector(self) -> bool:
        """Whether a non-empty selector is configured (an empty one turns dynamic mode off)."""
        return self.namespace_selector is not None and not self.namespace_selector.is_empty()

    @property
    def mode(self) -> ScopeMode:
        """The scope mode this configuration selects."""
        if self.has_selector():
            return ScopeMode.DYNAMIC
        if self.namespaces:
            return ScopeMode.STATIC_LIST
        return ScopeMode.ALL_NAMESPACES


class NamespaceSource(Protocol):
    """Read access to the Namespaces the operator knows about (the Namespace informer cache)."""

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of Namespace `name`, or None when it is unknown (not cached, deleted)."""
        ...

    def namespace_names(self) -> Iterable[str]:
        """The names of every known Namespace."""
        ...


def _namespace_name_and_labels(namespace: Mapping[str, object]) -> tuple[str, Mapping[str, str]]:
    metadata = namespace.get("metadata")
    if not isinstance(metadata, Mapping):
        return "", {}
    name = metadata.get("name")
    labels = metadata.get("labels")
    return (
        name if isinstance(name, str) else "",
        labels if isinstance(labels, Mapping) else {},
    )


class NamespaceMatcher:
    """Answers "is this namespace managed?" for the configured scope mode.

    Holds no state apart from its configuration and the NamespaceSource it reads, so every
    answer reflects the source's current contents. In dynamic mode the selector can be replaced
    while the operator runs (``reconfigure``, a live edit of the config file); every holder of
    the matcher sees the new selector at its next question.
    """

    def __init__(self, scope: ScopeConfig, *, source: NamespaceSource) -> None:
        """Build a matcher for `scope`, reading Namespace labels from `source`."""
        self._scope = scope
        self._source = source
        self._selector = scope.namespace_selector if scope.mode is ScopeMode.DYNAMIC else None
        static_list = scope.namespaces if scope.mode is ScopeMode.STATIC_LIST else None
        self._static = frozenset(static_list) if static_list is not None else None
        self._always = frozenset({"", scope.operator_namespace})

    @property
    def scope(self) -> ScopeConfig:
        """The scope configuration this matcher applies."""
        return self._scope

    @property
    def enabled(self) -> bool:
        """Whether dynamic (selector) mode is on; off means every scoping piece calls through."""
        return self._selector is not None

    def reconfigure(self, scope: ScopeConfig) -> None:
        """Take ``scope``'s selector (dynamic mode) or list (static-list mode) instead of the
        current one; only within the same mode and operator namespace (any other change needs a
        restart: ``ValueError``)."""
        if (
            scope.mode is ScopeMode.ALL_NAMESPACES
            or scope.mode is not self._scope.mode
            or scope.operator_namespace != self._scope.operator_namespace
        ):
            raise ValueError(
                "only the selector of dynamic mode or the list of static-list mode can change"
                " while running"
            )
        self._scope = scope
        if scope.mode is ScopeMode.DYNAMIC:
            self._selector = scope.namespace_selector
        else:
            self._static = frozenset(scope.namespaces or ())

    @property
    def restricts(self) -> bool:
        """Whether some namespaces are not managed (a selector or a static list): the scoped
        client and informers filter then; only with all namespaces do they call through."""
        return self._selector is not None or self._static is not None

    @property
    def watched_namespaces(self) -> tuple[str, ...] | None:
        """The namespaces the informers watch one by one in static-list mode (the list and the
        operator namespace, sorted, as ECK's multi-namespace cache); None: watch cluster-wide."""
        if self._static is None:
            return None
        return tuple(sorted(self._static | {self._scope.operator_namespace}))

    def is_always_managed(self, name: str) -> bool:
        """Whether `name` is ``""`` or the operator namespace, which match in every mode."""
        return name in self._always

    def labels_match(self, labels: Mapping[str, str]) -> bool:
        """Whether Namespace `labels` satisfy the selector (True when dynamic mode is off)."""
        return self._selector is None or self._selector.matches(labels)

    def namespace_matches(self, namespace: Mapping[str, object]) -> bool:
        """Whether a Namespace object (a dict with ``metadata.name``/``labels``) is managed.

        Used for Namespace events, where the object itself is at hand: no lookup is made.
        """
        name, labels = _namespace_name_and_labels(namespace)
        if self.is_always_managed(name):
            return True
        if self._static is not None:
            return name in self._static
        return self.labels_match(labels)

    def name_matches(self, name: str) -> bool:
        """Whether namespace `name` is managed, looking its labels up in the source.

        In dynamic mode a namespace the source does not know, or cannot read, does not match;
        the reason is logged at debug level on the ``stackflow.scope`` logger.
        """
        if self.is_always_managed(name):
            return True
        if self._static is not None:
            return name in self._static
        if self._selector is None:
            return True
        try:
            labels = self._source.namespace_labels(name)
        except Exception:
            # A lookup failure is an out-of-scope answer, never a crash: ECK returns
            # (false, err) and every caller treats it as "not managed".
            logger.debug(
                "namespace %r could not be read; treating it as out of scope", name, exc_info=True
            )
            return False
        if labels is None:
            logger.debug("namespace %r is unknown; treating it as out of scope", name)
            return False
        return self._selector.matches(labels)

    def matching_namespaces(self) -> list[NamespaceName]:
        """Every managed namespace known now, sorted; always includes the operator namespace."""
        names: set[str] = {self._scope.operator_namespace}
        if self._static is not None:
            names.update(self._static)
        else:
            names.update(name for name in self._source.namespace_names() if self.name_matches(name))
        return [NamespaceName(name) for name in sorted(names)]
