"""Kind-specific store rules: namespaces (reference §6) and CustomResourceDefinitions (§7).

Pure functions over plain dicts; the store calls them while preparing a write.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kubesim.meta import now_rfc3339

NAMESPACES_KEY = ("", "namespaces")
CRDS_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_FINALIZER = "kubernetes"
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
NAMESPACE_DELETE_CONFLICT = (
    "The system is ensuring all content is removed from this namespace. Upon completion, "
    "this namespace will automatically be purged by the system."
)


@dataclass(frozen=True)
class FallbackKind:
    """A minimal resource type for the store's own writes when the registry lacks the kind."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = False
    has_status: bool = True
    generation: str = "none"
    custom: bool = False
    returns_deleted_object: bool = False
    # Namespaces and CRDs are built-in kinds: no structural schema.
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    @property
    def api_version(self) -> str:
        """``v1`` for core, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version


NAMESPACE_KIND = FallbackKind("", "v1", "namespaces", "Namespace", returns_deleted_object=True)
CRD_KIND = FallbackKind(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    generation="spec",
)


def prepare_namespace(ns: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Server-owned namespace fields: the name label, ``spec.finalizers`` and ``status``."""
    meta = ns.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    labels[NAMESPACE_NAME_LABEL] = meta.get("name", "")
    meta["labels"] = labels
    spec = ns.get("spec") if isinstance(ns.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if old is None:
        finalizers = list(spec.get("finalizers") or [])
        if NAMESPACE_FINALIZER not in finalizers:
            finalizers.append(NAMESPACE_FINALIZER)
        spec["finalizers"] = finalizers
        ns["status"] = {"phase": "Active"}
    else:
        # Only PUT …/finalize changes spec.finalizers (the store's "finalize" subresource).
        spec["finalizers"] = list((old.get("spec") or {}).get("finalizers") or [])
    ns["spec"] = spec


def namespace_is_finalized(ns: dict[str, Any]) -> bool:
    """Whether neither ``spec.finalizers`` nor ``metadata.finalizers`` hold the namespace."""
    return not (ns.get("spec") or {}).get("finalizers") and not (ns.get("metadata") or {}).get(
        "finalizers"
    )


def crd_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``spec.names`` with the defaults the API server fills in (singular, listKind)."""
    names = dict((crd.get("spec") or {}).get("names") or {})
    kind = str(names.get("kind") or "")
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", f"{kind}List")
    return names


def crd_storage_key(crd: dict[str, Any]) -> tuple[str, str]:
    """The storage key (group, plural) of the custom resources a CRD serves."""
    spec = crd.get("spec") or {}
    return (str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or ""))


def _condition(
    old_conditions: list[dict[str, Any]], *, kind: str, status: str, reason: str, message: str
) -> dict[str, Any]:
    previous = next((c for c in old_conditions if c.get("type") == kind), None)
    transition = now_rfc3339()
    if previous is not None and previous.get("status") == status:
        transition = previous.get("lastTransitionTime", transition)
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }


def _name_conflict(crd: dict[str, Any], others: list[dict[str, Any]]) -> tuple[str, str] | None:
    group, plural = crd_storage_key(crd)
    kind = crd_names(crd).get("kind")
    for other in others:
        if crd_storage_key(other)[0] != group:
            continue
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        if accepted.get("plural") == plural:
            return "PluralConflict", f'"{plural}" is already in use'
        if accepted.get("kind") == kind:
            return "KindConflict", f'"{kind}" is already in use'
    return None


def prepare_crd(crd: dict[str, Any], *, others: list[dict[str, Any]]) -> bool:
    """Fill name defaults and the establishing status; True when the CRD is to be served.

    ``crd`` may carry the stored status (an update); ``others`` are the other stored CRDs.
    """
    spec = crd.setdefault("spec", {})
    spec["names"] = crd_names(crd)
    status = crd.get("status") if isinstance(crd.get("status"), dict) else {}
    assert isinstance(status, dict)
    old_conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    stored = list(status.get("storedVersions") or [])
    for version in spec.get("versions") or []:
        if (
            isinstance(version, dict)
            and version.get("storage")
            and version.get("name") not in stored
        ):
            stored.append(version.get("name"))
    conflict = _name_conflict(crd, others)
    conditions: list[dict[str, Any]]
    if conflict is None:
        status["acceptedNames"] = copy.deepcopy(spec["names"])
        conditions = [
            _condition(
                old_conditions,
                kind="NamesAccepted",
                status="True",
                reason="NoConflicts",
                message="no conflicts found",
            ),
            _condition(
                old_conditions,
                kind="Established",
                status="True",
                reason="InitialNamesAccepted",
                message="the initial names have been accepted",
            ),
        ]
    else:
        status.setdefault("acceptedNames", {"plural": "", "kind": ""})
        conditions = [
            _condition(
                old_conditions,
                kind="NamesAccepted",
                status="False",
                reason=conflict[0],
                message=conflict[1],
            ),
            _condition(
                old_conditions,
                kind="Established",
                status="False",
                reason="NotAccepted",
                message="not all names are accepted",
            ),
        ]
    conditions += [c for c in old_conditions if c.get("type") == "Terminating"]
    status["conditions"] = conditions
    status["storedVersions"] = stored
    crd["status"] = status
    return conflict is None


def mark_crd_terminating(crd: dict[str, Any]) -> None:
    """Add the cleanup finalizer and the ``Terminating`` condition of a CRD being deleted."""
    meta = crd.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if CRD_CLEANUP_FINALIZER not in finalizers:
        finalizers.append(CRD_CLEANUP_FINALIZER)
    meta["finalizers"] = finalizers
    status = crd.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
    conditions.append(
        {
            "type": "Terminating",
            "status": "True",
            "lastTransitionTime": now_rfc3339(),
            "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress",
        }
    )
    status["conditions"] = conditions


def crd_is_established(crd: dict[str, Any]) -> bool:
    """Whether the CRD's ``Established`` condition is True (it is served)."""
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )
