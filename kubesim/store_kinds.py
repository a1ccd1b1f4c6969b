"""Kind-specific store rules: namespaces (reference §6), CustomResourceDefinitions (§7), the
API server's own allocations and stamps for Services and DaemonSets, and the graceful deletion of
Pods run by an external kubelet.

Pure functions over plain dicts; the store calls them while preparing a write.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubesim.meta import now_rfc3339

NAMESPACES_KEY = ("", "namespaces")
CRDS_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_FINALIZER = "kubernetes"
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SERVICES_KEY = ("", "services")
PODS_KEY = ("", "pods")
EVENTS_KEY = ("", "events")
DEPLOYMENTS_KEY = ("apps", "deployments")
DAEMONSETS_KEY = ("apps", "daemonsets")
NODES_KEY = ("", "nodes")
SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
DAEMONSET_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
#: A Node annotated ``EXTERNAL_KUBELET_ANNOTATION: EXTERNAL_KUBELET`` is run by another kubelet
#: (the Elasticsearch Pod runner): kubesim's kubelet neither runs nor reports its pods, and the
#: store deletes them gracefully (see :func:`graceful_pod_deletion`).
EXTERNAL_KUBELET_ANNOTATION = "stackflow.dev/kubelet"
EXTERNAL_KUBELET = "external"
#: Pods in these phases have terminated: the API server deletes them at once.
TERMINATED_POD_PHASES = frozenset({"Succeeded", "Failed"})


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


def initial_crd_status(crd: Mapping[str, Any]) -> dict[str, Any]:
    """A new CRD's status before any controller saw it: no accepted names, no conditions, the
    storage version as the only stored version."""
    storage = [
        version.get("name")
        for version in (crd.get("spec") or {}).get("versions") or []
        if isinstance(version, Mapping) and version.get("storage")
    ]
    return {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage,
    }


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


def allocate_service_addresses(
    service: dict[str, Any], others: Iterable[Mapping[str, Any]]
) -> None:
    """What the real API server allocates when it stores a new Service: ``clusterIP`` (unless
    ``None`` or ExternalName), ``clusterIPs``, the single IPv4 family and free node ports."""
    spec = service.setdefault("spec", {})
    if spec.get("type") == "ExternalName":
        return
    used_ips: set[str] = set()
    used_ports: set[int] = set()
    for other in others:
        other_spec = other.get("spec") or {}
        used_ips.update(str(ip) for ip in other_spec.get("clusterIPs") or [])
        used_ports.update(
            int(port["nodePort"])
            for port in other_spec.get("ports") or []
            if isinstance(port, Mapping) and port.get("nodePort")
        )
    if not spec.get("clusterIP"):
        # .1 belongs to the `kubernetes` Service by convention.
        for offset in range(10, SERVICE_RANGE.num_addresses - 1):
            candidate = str(SERVICE_RANGE.network_address + offset)
            if candidate not in used_ips:
                spec["clusterIP"] = candidate
                break
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        free = (port for port in NODE_PORTS if port not in used_ports)
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = next(free)


def stamp_daemonset_generation(daemonset: dict[str, Any], old: Mapping[str, Any] | None) -> None:
    """The ``deprecated.daemonset.template.generation`` annotation: the generation at the last
    change of the pod template (what ``kubectl rollout`` of DaemonSets reads)."""
    meta = daemonset.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {})
    old_template = ((old or {}).get("spec") or {}).get("template")
    new_template = (daemonset.get("spec") or {}).get("template")
    kept = (
        ((old or {}).get("metadata") or {})
        .get("annotations", {})
        .get(DAEMONSET_GENERATION_ANNOTATION)
    )
    if old is None or old_template != new_template or kept is None:
        annotations[DAEMONSET_GENERATION_ANNOTATION] = str(meta.get("generation") or 1)
    else:
        annotations[DAEMONSET_GENERATION_ANNOTATION] = kept


def bind_pod(pod: dict[str, Any], node: Any) -> None:
    """The pod Binding: ``spec.nodeName`` set and condition ``PodScheduled=True`` (its transition
    time kept when it was True already; reason and message cleared), as ``BindingREST`` does."""
    pod.setdefault("spec", {})["nodeName"] = node
    status = pod.get("status")
    if not isinstance(status, dict):
        status = pod["status"] = {}
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    index = next(
        (
            i
            for i, c in enumerate(conditions)
            if isinstance(c, dict) and c.get("type") == "PodScheduled"
        ),
        None,
    )
    previous = conditions[index] if index is not None else None
    stamp = (
        previous.get("lastTransitionTime")
        if previous and previous.get("status") == "True"
        else None
    )
    scheduled = {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": stamp or now_rfc3339(),
    }
    if index is None:
        conditions.append(scheduled)
    else:
        conditions[index] = scheduled


def has_external_kubelet(node: Mapping[str, Any]) -> bool:
    """Whether another kubelet runs the pods of ``node`` (annotation ``stackflow.dev/kubelet``)."""
    annotations = _mapping(_mapping(node.get("metadata")).get("annotations"))
    return annotations.get(EXTERNAL_KUBELET_ANNOTATION) == EXTERNAL_KUBELET


@dataclass(frozen=True)
class GracefulDeletion:
    """What a DELETE does to a pod, as ``rest.BeforeDelete`` decides with the pod strategy.

    ``pending``: a graceful deletion is under way and the request does not shorten it (nothing is
    written; the pod is answered as it is). ``graceful``: the pod gets ``deletion_timestamp`` and
    ``grace_seconds``; it stays while the grace period is positive (its kubelet confirms with a
    DELETE of grace period 0), or goes right after that write when it is 0. Neither: an ordinary
    deletion (the pod was marked already with no grace period left).
    """

    graceful: bool
    pending: bool = False
    deletion_timestamp: str | None = None
    grace_seconds: int | None = None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_rfc3339(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def graceful_pod_deletion(
    pod: Mapping[str, Any], requested: int | None, *, now: datetime
) -> GracefulDeletion:
    """A DELETE of ``pod`` with DeleteOptions ``gracePeriodSeconds`` ``requested`` (None: not sent).

    As the real server decides (``rest.BeforeDelete`` and ``podStrategy.CheckGracefulDelete``): a
    negative period counts as 1. A pod not yet being deleted gets the requested period, else its
    ``spec.terminationGracePeriodSeconds`` (0 when unset), and 0 when it is unscheduled or has
    terminated (``Succeeded`` / ``Failed``); its ``deletionTimestamp`` is now plus that period. A pod
    being deleted with a positive period may only have it shortened: the timestamp moves back by
    the difference (never into the past; a positive period that would has 1 s left), while an
    equal or longer period, or none, leaves the deletion pending.
    """
    metadata = _mapping(pod.get("metadata"))
    if requested is not None and requested < 0:
        requested = 1
    stamp = metadata.get("deletionTimestamp")
    if stamp:
        current = metadata.get("deletionGracePeriodSeconds")
        if not isinstance(current, int) or current == 0:
            return GracefulDeletion(graceful=False)
        current = max(current, 1)
        if requested is None or requested >= current:
            return GracefulDeletion(graceful=False, pending=True)
        marked = _parse_rfc3339(str(stamp)) or now
        moved = marked - timedelta(seconds=current) + timedelta(seconds=requested)
        period = requested
        if moved < now:
            moved = now
            if period != 0:
                period = 1
        return GracefulDeletion(
            graceful=True, deletion_timestamp=_rfc3339(moved), grace_seconds=period
        )
    spec, status = _mapping(pod.get("spec")), _mapping(pod.get("status"))
    if requested is not None:
        period = requested
    else:
        own = spec.get("terminationGracePeriodSeconds")
        period = own if isinstance(own, int) else 0
    if not spec.get("nodeName") or status.get("phase") in TERMINATED_POD_PHASES:
        period = 0
    if period < 0:
        period = 1
    return GracefulDeletion(
        graceful=True,
        deletion_timestamp=_rfc3339(now + timedelta(seconds=period)),
        grace_seconds=period,
    )
