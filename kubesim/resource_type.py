"""What one served resource is: :class:`ResourceType` (``group/version/plural`` and how it is served)
and the :class:`ScaleSpec` of its ``/scale`` subresource.

Pure data with no imports from the rest of kubesim, so that the built-in kinds
(``builtin_kinds.py``), the registry (``resources.py``) and every layer above can share it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
SUBRESOURCE_VERBS: tuple[str, ...] = ("get", "patch", "update")


@dataclass(frozen=True)
class ScaleSpec:
    """Where a kind keeps the numbers of its ``/scale`` subresource (JSONPaths like ``.spec.replicas``).

    For built-in workloads ``label_selector_path`` points at a ``metav1.LabelSelector`` object
    (``.spec.selector``) that must be rendered to text; for custom resources it points at a string.
    """

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None


@dataclass(frozen=True)
class ResourceType:
    """One served resource: ``group/version/plural`` and everything the server needs to serve it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    list_kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    has_status: bool = False
    scale: ScaleSpec | None = None
    generation: str = "none"  # "none" | "spec" | "spec_or_annotations" | "non_metadata"
    custom: bool = False
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)
    field_selectors: frozenset[str] = frozenset()
    returns_deleted_object: bool = False
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), hash=False, compare=False)
    # Storage shared across group versions: core and events.k8s.io Events are one collection.
    shared_storage: tuple[str, str] | None = None

    @property
    def api_version(self) -> str:
        """``v1`` for core, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``configmaps`` for core, ``widgets.example.com`` for a group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_key(self) -> tuple[str, str]:
        """The ``(group, plural)`` under which the store keeps these objects (version-independent)."""
        return self.shared_storage or (self.group, self.plural)

    @property
    def subresources(self) -> tuple[str, ...]:
        """The subresources served for this kind (``status``, ``scale``)."""
        names: list[str] = []
        if self.has_status:
            names.append("status")
        if self.scale is not None:
            names.append("scale")
        return tuple(names)

    @property
    def scope(self) -> str:
        """``Namespaced`` or ``Cluster``, as discovery and CRDs spell it."""
        return "Namespaced" if self.namespaced else "Cluster"

    def supports_field(self, field_name: str) -> bool:
        """Whether a field selector may use ``field_name`` on this kind."""
        if field_name in ("metadata.name", "metadata.namespace"):
            return True
        return field_name in self.field_selectors
