"""The registry of served resource types: the built-in kinds and the kinds served from CRDs.

A :class:`~kubesim.resource_type.ResourceType` describes one served ``group/version/plural``; the
:class:`Registry` holds all of them (``builtin_kinds.py`` plus the versions of established CRDs) and
answers lookups by URL parts or by ``apiVersion``/``kind``. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubesim.builtin_kinds import BUILTIN_RESOURCE_TYPES
from kubesim.resource_type import ALL_VERBS, SUBRESOURCE_VERBS, ResourceType, ScaleSpec

# ResourceType and ScaleSpec are defined in resource_type.py (the built-in kinds need them without
# the registry); they stay importable from here, where callers have always found them.
__all__ = [
    "ALL_VERBS",
    "SUBRESOURCE_VERBS",
    "Registry",
    "ResourceType",
    "ScaleSpec",
    "crd_resource_types",
    "version_priority_key",
]

# Order of the built-in groups in /apis, as the real API server lists them.
BUILTIN_GROUP_ORDER: tuple[str, ...] = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
)


# The order in which the apiextensions server lists a custom resource's verbs (its handler builds
# them in this order; built-in resources list theirs sorted).
CUSTOM_RESOURCE_VERBS: tuple[str, ...] = (
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
)

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes version priority: ``v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other``.

    Non-Kubernetes-like version names sort last, alphabetically.
    """
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)


def _selectable_field(json_path: str) -> str:
    return json_path.strip().removeprefix(".")


def _is_established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def crd_resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a CRD serves: one per version with ``served: true``."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind = str(names.get("kind", ""))
    plural = str(names.get("plural", ""))
    served: list[ResourceType] = []
    for version in spec.get("versions") or []:
        if not version.get("served", False):
            continue
        subresources = version.get("subresources") or {}
        scale_def = subresources.get("scale")
        scale = None
        if isinstance(scale_def, Mapping):
            scale = ScaleSpec(
                spec_replicas_path=str(scale_def.get("specReplicasPath", ".spec.replicas")),
                status_replicas_path=str(scale_def.get("statusReplicasPath", ".status.replicas")),
                label_selector_path=scale_def.get("labelSelectorPath"),
            )
        selectable = frozenset(
            _selectable_field(str(f.get("jsonPath", "")))
            for f in version.get("selectableFields") or []
        )
        served.append(
            ResourceType(
                group=str(spec.get("group", "")),
                version=str(version.get("name", "")),
                plural=plural,
                singular=str(names.get("singular") or kind.lower()),
                kind=kind,
                list_kind=str(names.get("listKind") or f"{kind}List"),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                verbs=CUSTOM_RESOURCE_VERBS,
                has_status="status" in subresources,
                scale=scale,
                generation="non_metadata",
                custom=True,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                field_selectors=selectable,
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            )
        )
    return served


class Registry:
    """All served resource types: built-ins plus the versions served from established CRDs."""

    def __init__(self, builtins: Iterable[ResourceType] = ()) -> None:
        """Start with the given built-in resource types and no CRDs."""
        self._builtins: list[ResourceType] = list(builtins)
        self._custom: dict[str, list[ResourceType]] = {}
        self._index: dict[tuple[str, str, str], ResourceType] = {}
        self._reindex()

    @classmethod
    def builtin(cls) -> Registry:
        """A registry serving kubesim's built-in kinds."""
        return cls(BUILTIN_RESOURCE_TYPES)

    def _reindex(self) -> None:
        index: dict[tuple[str, str, str], ResourceType] = {}
        for rt in self.all():
            # Built-ins come first, so a CRD can never shadow a built-in resource.
            index.setdefault((rt.group, rt.version, rt.plural), rt)
        self._index = index

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served resource type at ``group/version/plural``, or None."""
        return self._index.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The served resource type for an object's ``apiVersion`` and ``kind``, or None."""
        group, _, version = api_version.rpartition("/")
        for rt in self._index.values():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def all(self) -> list[ResourceType]:
        """Every served resource type: built-ins first, then CRD-served ones by CRD name."""
        custom = [rt for name in sorted(self._custom) for rt in self._custom[name]]
        return [*self._builtins, *custom]

    def group_versions(self) -> list[tuple[str, list[str]]]:
        """Served groups in discovery order (core first), each with its versions preferred-first."""
        versions: dict[str, set[str]] = {}
        for rt in self._index.values():
            versions.setdefault(rt.group, set()).add(rt.version)

        def group_order(group: str) -> tuple[int, int, str]:
            if group in BUILTIN_GROUP_ORDER:
                return (0, BUILTIN_GROUP_ORDER.index(group), group)
            return (1, 0, group)

        return [
            (group, sorted(versions[group], key=version_priority_key))
            for group in sorted(versions, key=group_order)
        ]

    def add_crd(self, crd: Mapping[str, Any]) -> None:
        """(Re)serve the ``served`` versions of a CRD; a CRD not Established is not served."""
        name = str((crd.get("metadata") or {}).get("name", ""))
        if _is_established(crd):
            self._custom[name] = crd_resource_types(crd)
        else:
            self._custom.pop(name, None)
        self._reindex()

    def remove_crd(self, name: str) -> None:
        """Stop serving the kinds of CRD ``name`` (no-op when unknown)."""
        self._custom.pop(name, None)
        self._reindex()

    def served_crd_names(self) -> list[str]:
        """Names of the CRDs whose kinds are currently served."""
        return sorted(self._custom)
