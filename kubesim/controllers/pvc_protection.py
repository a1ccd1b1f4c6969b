"""The PVC protection controller of kube-controller-manager (``pkg/controller/volume/pvcprotection``).

The API server gives every new PersistentVolumeClaim the finalizer ``kubernetes.io/pvc-protection``
(kubesim: ``schema.default_builtin``; the real server: the ``StorageObjectInUseProtection``
admission plugin). A deleted claim keeps it while a Pod uses the claim, and this controller removes
it once none does, so the claim (and a namespace that held it) can go. It also puts the finalizer
back on a live claim that lost it, as the real controller does.

A Pod uses a claim, for this decision, as ``podUsesPVCForDeletion`` of v1.37 decides: it is
scheduled (``spec.nodeName`` set; the kubelet refuses to start a pod on a claim being deleted) and
one of its volumes names the claim (``persistentVolumeClaim.claimName``), whatever the pod's phase;
or a generic ephemeral volume's claim (``<pod>-<volume>``, controlled by that pod) while the pod is
not shut down (``deletionTimestamp`` with a grace period of 0). A pod that is being deleted
gracefully therefore holds its claims until its kubelet confirms and the pod is gone.

The ``Unused`` status condition the v1.37 controller also writes on bound claims (feature gate
``PersistentVolumeClaimUnusedSinceTime``) is not simulated.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    controller_ref,
    is_deleting,
    meta,
    name_of,
    namespace_of,
    uid_of,
)
from kubesim.controllers.store_access import get_or_none, list_objects, type_for
from kubesim.resources import Registry
from kubesim.store import Store

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
CLAIMS = ("", "persistentvolumeclaims")
PODS = ("", "pods")
ClaimKey = tuple[str, str]


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = pod.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    return [v for v in volumes if isinstance(v, Mapping)] if isinstance(volumes, list) else []


def ephemeral_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """The claim of a generic ephemeral volume: ``<pod name>-<volume name>``."""
    return f"{name_of(pod)}-{volume.get('name', '')}"


def claims_of(pod: Mapping[str, Any]) -> list[str]:
    """The names of the claims a pod's volumes refer to (the pod-PVC index of the real controller)."""
    names = []
    for volume in _volumes(pod):
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, Mapping) and source.get("claimName"):
            names.append(str(source["claimName"]))
        elif volume.get("ephemeral") is not None:
            names.append(ephemeral_claim_name(pod, volume))
    return names


def pod_is_shut_down(pod: Mapping[str, Any]) -> bool:
    """Its kubelet is done with it, or it was force-deleted: marked with a grace period of 0."""
    metadata = meta(pod)
    return (
        bool(metadata.get("deletionTimestamp")) and metadata.get("deletionGracePeriodSeconds") == 0
    )


def pod_uses_claim(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether ``pod`` keeps ``claim`` from being removed (``podUsesPVCForDeletion``)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("nodeName"):
        return False
    claim_name = name_of(claim)
    for volume in _volumes(pod):
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, Mapping) and source.get("claimName") == claim_name:
            return True
        if (
            volume.get("ephemeral") is not None
            and not pod_is_shut_down(pod)
            and ephemeral_claim_name(pod, volume) == claim_name
            and (controller_ref(claim) or {}).get("uid") == uid_of(pod)
        ):
            return True
    return False


def is_deletion_candidate(claim: Mapping[str, Any]) -> bool:
    """Being deleted and still holding the finalizer."""
    return is_deleting(claim) and PVC_PROTECTION_FINALIZER in (meta(claim).get("finalizers") or [])


def needs_finalizer(claim: Mapping[str, Any]) -> bool:
    """Live and without the finalizer."""
    return not is_deleting(claim) and PVC_PROTECTION_FINALIZER not in (
        meta(claim).get("finalizers") or []
    )


class PvcProtectionController:
    """Reconciler keyed by the claim's ``(namespace, name)``."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        # Claims being deleted that still hold the finalizer: a pod event may release them.
        self._candidates: set[ClaimKey] = set()

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Claims that need the finalizer removed or added; for a pod event, the candidates among
        the claims it refers to (any change of a pod may be the one that releases them)."""
        kind = (event.rt.group, event.rt.plural)
        if kind == CLAIMS:
            key = (namespace_of(event.obj) or "", name_of(event.obj))
            if event.type != "DELETED" and is_deletion_candidate(event.obj):
                self._candidates.add(key)
                return [key]
            self._candidates.discard(key)
            if event.type != "DELETED" and needs_finalizer(event.obj):
                return [key]
            return []
        if kind == PODS:
            namespace = namespace_of(event.obj) or ""
            pods = [event.obj] + ([event.old] if event.old is not None else [])
            keys = {(namespace, claim) for pod in pods for claim in claims_of(pod)}
            return sorted(keys & self._candidates)
        return []

    def reconcile(self, key: Hashable) -> None:
        """Release a deleted claim no pod uses; give a live claim the finalizer back."""
        assert isinstance(key, tuple)
        namespace, name = key
        claims = type_for(self._registry, *CLAIMS)
        if claims is None:
            return
        claim = get_or_none(self._store, claims, namespace, name)
        if claim is None:
            return
        finalizers = list(meta(claim).get("finalizers") or [])
        if is_deletion_candidate(claim):
            pods = type_for(self._registry, *PODS)
            if pods is not None and any(
                pod_uses_claim(pod, claim) for pod in list_objects(self._store, pods, namespace)
            ):
                return
            meta(claim)["finalizers"] = [f for f in finalizers if f != PVC_PROTECTION_FINALIZER]
        elif needs_finalizer(claim):
            meta(claim)["finalizers"] = [*finalizers, PVC_PROTECTION_FINALIZER]
        else:
            return
        # The last finalizer gone from a deleted claim: this update removes it.
        self._store.update(claims, claim, namespace=namespace, name=name)
