"""The volumes of an Elasticsearch cluster, as ECK handles them (pure: values in, decisions out).

**Expansion.** A StatefulSet's ``volumeClaimTemplates`` are immutable, so the only change allowed
between the current StatefulSet and the desired one is a larger storage request, and only when
the claim's StorageClass (or the default one) has ``allowVolumeExpansion: true``
(:func:`claim_templates_refusal`, for the webhook and the reconcile alike, with ECK's messages).
A valid increase is carried out in passes, as ECK's ``HandleVolumeExpansion`` and
``RecreateStatefulSets``:

1. every existing PVC of the StatefulSet asking for less is given the new request
   (:func:`pvc_resizes`), and the current StatefulSet with the new claims is stored as JSON in the
   Elasticsearch annotation ``elasticsearch.k8s.elastic.co/recreate-<sset>``
   (:func:`recreate_annotation`);
2. then, each pass (:func:`recreate_steps`): the StatefulSet still has the stored UID, so it is
   deleted with ``propagationPolicy: Orphan`` and a UID precondition (its Pods keep running;
   they are owned by the Elasticsearch meanwhile, so deleting the cluster still removes them); it
   is missing, so it is created from the stored object (fresh metadata); it exists with another
   UID, so the recreation is over and the annotation goes.

**Claims of removed nodes** (:func:`pvcs_to_delete`): the PVCs carrying the cluster's label that
no StatefulSet, current or desired, would mount (``<claim>-<sset>-<ordinal>`` below its replicas)
are deleted; ``spec.volumeClaimDeletePolicy`` decides whether each PVC also has a (non-controller)
ownerReference to the Elasticsearch, so that deleting the cluster deletes its data
(:func:`pvc_owner_changes`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.models.quantity import parse_quantity
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.pods import volume_claim_templates

__all__ = [
    "CLAIMS_IMMUTABLE_MESSAGE",
    "DEFAULT_STORAGE_CLASS_ANNOTATIONS",
    "DELETE_ON_SCALEDOWN_AND_CLUSTER_DELETION",
    "DELETE_ON_SCALEDOWN_ONLY",
    "NO_DEFAULT_STORAGE_CLASS_MESSAGE",
    "RECREATE_ANNOTATION_PREFIX",
    "FieldError",
    "RecreateAction",
    "RecreateStep",
    "StorageChange",
    "claim_templates_refusal",
    "compare_storage",
    "default_storage_class",
    "elasticsearch_owner_reference",
    "expansion_refusal",
    "needs_recreate",
    "node_set_claims_field",
    "pvc_names_to_keep",
    "pvc_owner_changes",
    "pvc_resizes",
    "pvcs_to_delete",
    "recreate_annotation",
    "recreate_annotation_key",
    "recreate_steps",
    "recreated_statefulset",
    "storage_request",
    "volume_claim_delete_policy",
    "volume_claim_problems",
    "with_owner_reference",
    "without_owner_reference",
]

FieldError = tuple[str, str]

#: ECK's ``PvcImmutableErrMsg``: any change but a storage increase.
CLAIMS_IMMUTABLE_MESSAGE = (
    "volume claim templates can only have their storage requests increased, if the storage class "
    "allows volume expansion. Any other change is forbidden"
)
NO_DEFAULT_STORAGE_CLASS_MESSAGE = "no default storage class found"
#: The annotations marking the cluster's default StorageClass (the beta one is still honoured).
DEFAULT_STORAGE_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
#: ECK's prefix (``<lowercased owner kind>.k8s.elastic.co/recreate-``) of the StatefulSets to recreate.
RECREATE_ANNOTATION_PREFIX = "elasticsearch.k8s.elastic.co/recreate-"
DELETE_ON_SCALEDOWN_AND_CLUSTER_DELETION = "DeleteOnScaledownAndClusterDeletion"
DELETE_ON_SCALEDOWN_ONLY = "DeleteOnScaledownOnly"
_ES_API_VERSION = "elasticsearch.k8s.elastic.co/v1"
_ES_KIND = "Elasticsearch"


# --- storage requests -----------------------------------------------------------------------


class StorageChange(StrEnum):
    """How a storage request moves from one claim to another."""

    SAME = "same"
    INCREASE = "increase"
    DECREASE = "decrease"


def _storage_text(claim: Mapping[str, Any] | None) -> object:
    spec = (claim or {}).get("spec") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    return requests.get("storage")


def storage_request(claim: Mapping[str, Any] | None) -> Decimal | None:
    """The ``spec.resources.requests.storage`` of a claim (or PVC) in bytes; None when unset."""
    return parse_quantity(_storage_text(claim))


def compare_storage(
    initial: Mapping[str, Any] | None, updated: Mapping[str, Any] | None
) -> StorageChange:
    """ECK's ``CompareStorageRequests``: a missing or zero request on either side is no change."""
    before, after = storage_request(initial), storage_request(updated)
    if not before or not after:
        return StorageChange.SAME
    if after > before:
        return StorageChange.INCREASE
    if after < before:
        return StorageChange.DECREASE
    return StorageChange.SAME


def _claims(statefulset: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return list(((statefulset or {}).get("spec") or {}).get("volumeClaimTemplates") or [])


def _claim_name(claim: Mapping[str, Any]) -> str:
    return str((claim.get("metadata") or {}).get("name") or "")


def _claim_named(claims: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((claim for claim in claims if _claim_name(claim) == name), None)


# --- validation -----------------------------------------------------------------------------


def default_storage_class(storage_classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first StorageClass annotated as the default one (``"true"``), or None."""
    for storage_class in storage_classes:
        annotations = view(storage_class).annotations
        if any(annotations.get(key) == "true" for key in DEFAULT_STORAGE_CLASS_ANNOTATIONS):
            return storage_class
    return None


def expansion_refusal(
    claim: Mapping[str, Any], storage_classes: Sequence[Mapping[str, Any]]
) -> str | None:
    """ECK's ``EnsureClaimSupportsExpansion``: why ``claim`` may not grow, or None when it may.

    The claim's ``storageClassName`` names its class; without one, the default class applies
    (a claim made without a class is given the default one when its PVC is created).
    """
    wanted = str((claim.get("spec") or {}).get("storageClassName") or "")
    if wanted:
        storage_class = next((sc for sc in storage_classes if view(sc).name == wanted), None)
        if storage_class is None:
            return (
                f'cannot retrieve storage class: storageclasses.storage.k8s.io "{wanted}" not found'
            )
    else:
        storage_class = default_storage_class(storage_classes)
        if storage_class is None:
            return NO_DEFAULT_STORAGE_CLASS_MESSAGE
    if storage_class.get("allowVolumeExpansion") is not True:
        return (
            f"claim {_claim_name(claim)} (storage class {view(storage_class).name}) "
            "does not support volume expansion"
        )
    return None


def _stored_form(value: Any, *, quantities: bool = False) -> Any:
    """``value`` as the API server would store it, for comparing: empty values dropped (Go's
    ``omitempty``) and quantities as numbers (``1Gi`` and ``1024Mi`` are one amount)."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            stored = _stored_form(item, quantities=quantities or key in ("requests", "limits"))
            if stored is not None:
                result[key] = stored
        return result or None
    if isinstance(value, list):
        items = [_stored_form(item) for item in value]
        return items or None
    if value is None or value == "" or value is False:
        return None
    if quantities:
        amount = parse_quantity(value)
        if amount is not None:
            return str(amount.normalize())
    return value


def _without_storage(claim: Mapping[str, Any]) -> Any:
    """A claim as compared for "anything but storage changed": the storage request, what the
    server adds (``apiVersion``, ``kind``, ``status``, the default ``volumeMode``, server
    metadata) and legacy ownerReferences left out."""
    metadata = claim.get("metadata") or {}
    spec = copy.deepcopy(dict(claim.get("spec") or {}))
    requests = (spec.get("resources") or {}).get("requests")
    if isinstance(requests, dict):
        requests.pop("storage", None)
    spec.setdefault("volumeMode", "Filesystem")
    return _stored_form(
        {
            "metadata": {key: metadata.get(key) for key in ("name", "labels", "annotations")},
            "spec": spec,
        }
    )


def claim_templates_refusal(
    current: Sequence[Mapping[str, Any]],
    desired: Sequence[Mapping[str, Any]],
    storage_classes: Sequence[Mapping[str, Any]],
) -> str | None:
    """Why the claim templates may not go from ``current`` (the StatefulSet's) to ``desired``, or
    None when they may: ECK's first refusal, in ECK's words.

    Anything but the storage requests changed (a claim added, removed, renamed, reordered or
    otherwise edited) is :data:`CLAIMS_IMMUTABLE_MESSAGE`; a smaller request is refused; a larger
    one needs its StorageClass to allow expansion (:func:`expansion_refusal`).
    """
    if [_without_storage(c) for c in current] != [_without_storage(c) for c in desired]:
        return CLAIMS_IMMUTABLE_MESSAGE
    # Equal but for storage: the same claims in the same order.
    for initial, claim in zip(current, desired, strict=True):
        change = compare_storage(initial, claim)
        if change is StorageChange.DECREASE:
            return (
                "decreasing storage size is not supported: an attempt was made to decrease "
                f"storage size for claim {_claim_name(claim)}"
            )
        if change is StorageChange.INCREASE:
            refusal = expansion_refusal(claim, storage_classes)
            if refusal is not None:
                return refusal
    return None


def node_set_claims_field(es: Mapping[str, Any], statefulset: str) -> str:
    """The field a StatefulSet's claim refusal is reported on: its node set's
    ``volumeClaimTemplates`` (``spec.nodeSets`` when no node set is named after it)."""
    es_name = view(es).name
    for index, node_set in enumerate((es.get("spec") or {}).get("nodeSets") or []):
        if names.statefulset_name(es_name, str(node_set.get("name", ""))) == statefulset:
            return f"spec.nodeSets[{index}].volumeClaimTemplates"
    return "spec.nodeSets"


def volume_claim_problems(
    es: Mapping[str, Any],
    statefulsets: Iterable[Mapping[str, Any]],
    storage_classes: Sequence[Mapping[str, Any]],
) -> list[FieldError]:
    """The webhook's view of ECK's ``validPVCModification``: each node set whose StatefulSet
    exists must be able to reach the claims the builder would write (:func:`claim_templates_refusal`).

    Comparing with the StatefulSet, not the stored spec, lets a user take back a refused size:
    the StatefulSet still has the old one. A node set without a StatefulSet is new: anything goes.
    """
    es_name = view(es).name
    current = {view(statefulset).name: statefulset for statefulset in statefulsets}
    problems: list[FieldError] = []
    for index, node_set in enumerate((es.get("spec") or {}).get("nodeSets") or []):
        statefulset = current.get(names.statefulset_name(es_name, str(node_set.get("name", ""))))
        if statefulset is None:
            continue
        refusal = claim_templates_refusal(
            _claims(statefulset), volume_claim_templates(node_set), storage_classes
        )
        if refusal is not None:
            problems.append((f"spec.nodeSets[{index}].volumeClaimTemplates", refusal))
    return problems


# --- expansion ------------------------------------------------------------------------------


def needs_recreate(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """ECK's ``needsRecreate``: some claim of ``desired`` asks for more than the same claim of
    the current StatefulSet (a claim the current one lacks is validation's business)."""
    current = _claims(actual)
    for claim in _claims(desired):
        initial = _claim_named(current, _claim_name(claim))
        if initial is not None and compare_storage(initial, claim) is StorageChange.INCREASE:
            return True
    return False


def _replicas(statefulset: Mapping[str, Any]) -> int:
    replicas = (statefulset.get("spec") or {}).get("replicas")
    return int(replicas) if isinstance(replicas, int) and not isinstance(replicas, bool) else 0


def pvc_resizes(
    actual: Mapping[str, Any],
    desired: Mapping[str, Any],
    pvcs: Iterable[Mapping[str, Any]],
) -> tuple[tuple[str, str], ...]:
    """ECK's ``resizePVCs``: ``(pvc name, new storage request)`` for each existing PVC of the
    current StatefulSet's Pods (``<claim>-<sset>-<ordinal>`` below its replicas) whose request is
    smaller than its claim's in ``desired``, by name."""
    by_name = {view(pvc).name: pvc for pvc in pvcs}
    statefulset = view(actual).name
    desired_claims = _claims(desired)
    resizes: list[tuple[str, str]] = []
    for template in _claims(actual):
        claim_name = _claim_name(template)
        wanted = _claim_named(desired_claims, claim_name)
        if not claim_name or wanted is None:
            continue
        size = _storage_text(wanted)
        for ordinal in range(_replicas(actual)):
            pvc = by_name.get(f"{claim_name}-{statefulset}-{ordinal}")
            if pvc is not None and compare_storage(pvc, wanted) is StorageChange.INCREASE:
                resizes.append((view(pvc).name, str(size)))
    return tuple(sorted(resizes))


def recreate_annotation_key(statefulset: str) -> str:
    """``elasticsearch.k8s.elastic.co/recreate-<sset>``."""
    return f"{RECREATE_ANNOTATION_PREFIX}{statefulset}"


def recreate_annotation(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> tuple[str, str]:
    """ECK's ``annotateForRecreation``: the annotation key and its value, the current StatefulSet
    (its UID included: the later passes compare it) with the desired claim templates, as JSON.

    The status and managed fields are left out: never written back, they would only weigh on
    the Elasticsearch's annotations (256 KiB in all).
    """
    stored = copy.deepcopy(dict(actual))
    stored.pop("status", None)
    stored.setdefault("apiVersion", "apps/v1")
    stored.setdefault("kind", "StatefulSet")
    metadata = dict(stored.get("metadata") or {})
    metadata.pop("managedFields", None)
    stored["metadata"] = metadata
    stored["spec"] = {**dict(stored.get("spec") or {}), "volumeClaimTemplates": _claims(desired)}
    value = json.dumps(stored, sort_keys=True, separators=(",", ":"))
    return recreate_annotation_key(view(actual).name), value


def recreated_statefulset(stored: Mapping[str, Any]) -> dict[str, Any]:
    """ECK's ``createStatefulSet``: the stored StatefulSet with fresh metadata (name, namespace,
    labels, annotations, owners and finalizers kept; no uid, resourceVersion or status)."""
    metadata = stored.get("metadata") or {}
    fresh = {
        key: copy.deepcopy(metadata[key])
        for key in ("name", "namespace", "labels", "annotations", "ownerReferences", "finalizers")
        if metadata.get(key)
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": fresh,
        "spec": copy.deepcopy(dict(stored.get("spec") or {})),
    }


class RecreateAction(StrEnum):
    """One pass of a StatefulSet's recreation."""

    #: It still has the stored UID: delete it, orphaning its Pods (and own them meanwhile).
    DELETE = "delete"
    #: It still has the stored UID but is already being deleted: wait.
    AWAIT_DELETION = "await-deletion"
    #: It is gone: create it from the stored object.
    CREATE = "create"
    #: It exists with another UID: take the Pods back from the Elasticsearch, drop the annotation.
    DONE = "done"


@dataclass(frozen=True)
class RecreateStep:
    """What to do this pass for one ``recreate-<sset>`` annotation."""

    annotation: str
    statefulset: str
    action: RecreateAction
    #: DELETE: the UID the deletion is conditioned on.
    uid: str = ""
    #: CREATE: the StatefulSet to create.
    manifest: Mapping[str, Any] | None = None


def _stored_statefulset(value: str) -> tuple[Mapping[str, Any] | None, str]:
    """The StatefulSet an annotation holds, or None and why not."""
    try:
        stored = load_bounded_json(value)
    except ValueError as error:
        return None, f"not JSON ({error})"
    if not isinstance(stored, Mapping):
        return None, "not a JSON object"
    return stored, "the stored StatefulSet has no name or uid"


def recreate_steps(
    annotations: Mapping[str, str], statefulsets: Mapping[str, Mapping[str, Any]]
) -> tuple[tuple[RecreateStep, ...], tuple[FieldError, ...]]:
    """ECK's ``RecreateStatefulSets`` state machine, one step per annotation, by annotation.

    ``statefulsets`` maps the current StatefulSets by name. An annotation that does not hold a
    StatefulSet is refused as a problem and left alone (ECK fails the reconcile on it).
    """
    steps: list[RecreateStep] = []
    problems: list[FieldError] = []
    for key in sorted(annotations):
        if not key.startswith(RECREATE_ANNOTATION_PREFIX):
            continue
        stored, reason = _stored_statefulset(annotations[key])
        stored_meta = view(stored)
        if stored is None or not stored_meta.name or not stored_meta.uid:
            problems.append((f"metadata.annotations[{key}]", f"cannot recreate: {reason}"))
            continue
        name, stored_uid = stored_meta.name, stored_meta.uid
        existing = statefulsets.get(name)
        if existing is None:
            manifest = recreated_statefulset(stored)
            steps.append(RecreateStep(key, name, RecreateAction.CREATE, manifest=manifest))
        elif view(existing).uid == stored_uid:
            action = (
                RecreateAction.AWAIT_DELETION
                if view(existing).deletion_timestamp
                else RecreateAction.DELETE
            )
            steps.append(RecreateStep(key, name, action, uid=stored_uid))
        else:
            steps.append(RecreateStep(key, name, RecreateAction.DONE))
    return tuple(steps), tuple(problems)


# --- owner references -----------------------------------------------------------------------


def elasticsearch_owner_reference(es: Mapping[str, Any]) -> dict[str, Any]:
    """A non-controller ownerReference to ``es`` (controller-runtime's ``SetOwnerReference``):
    the garbage collector deletes the object with the cluster, and nothing is adopted."""
    meta = view(es)
    return {
        "apiVersion": str(es.get("apiVersion") or _ES_API_VERSION),
        "kind": str(es.get("kind") or _ES_KIND),
        "name": meta.name,
        "uid": meta.uid,
    }


def _refs(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(ref) for ref in (obj.get("metadata") or {}).get("ownerReferences") or []]


def _group(api_version: object) -> str:
    text = str(api_version or "")
    return text.split("/", 1)[0] if "/" in text else ""


def with_owner_reference(
    obj: Mapping[str, Any], es: Mapping[str, Any]
) -> list[dict[str, Any]] | None:
    """``obj``'s ownerReferences with one to ``es``, or None when it has one (same name and uid).

    A reference to an older object of the same group, kind and name is replaced, as
    controller-runtime does: an Elasticsearch deleted and created again owns the object anew.
    """
    wanted = elasticsearch_owner_reference(es)
    refs = _refs(obj)
    if any(ref.get("name") == wanted["name"] and ref.get("uid") == wanted["uid"] for ref in refs):
        return None
    for index, ref in enumerate(refs):
        if (
            _group(ref.get("apiVersion")) == _group(wanted["apiVersion"])
            and ref.get("kind") == wanted["kind"]
            and ref.get("name") == wanted["name"]
        ):
            refs[index] = wanted
            return refs
    return [*refs, wanted]


def without_owner_reference(
    obj: Mapping[str, Any], es: Mapping[str, Any]
) -> list[dict[str, Any]] | None:
    """``obj``'s ownerReferences without the one to ``es`` (same name and uid), or None when it
    has none."""
    meta = view(es)
    refs = _refs(obj)
    kept = [
        ref for ref in refs if not (ref.get("name") == meta.name and ref.get("uid") == meta.uid)
    ]
    return kept if len(kept) != len(refs) else None


def volume_claim_delete_policy(es: Mapping[str, Any]) -> str:
    """``spec.volumeClaimDeletePolicy``, ECK's default when unset."""
    policy = (es.get("spec") or {}).get("volumeClaimDeletePolicy")
    return str(policy) if policy else DELETE_ON_SCALEDOWN_AND_CLUSTER_DELETION


def pvc_owner_changes(
    pvcs: Iterable[Mapping[str, Any]], es: Mapping[str, Any]
) -> tuple[tuple[str, list[dict[str, Any]]], ...]:
    """ECK's ``reconcilePVCOwnerRefs``: ``(pvc name, its new ownerReferences)`` for each PVC to
    change, by name: given a reference to the cluster under ``DeleteOnScaledownAndClusterDeletion``
    (its data goes with the cluster), stripped of it under ``DeleteOnScaledownOnly`` (kept)."""
    policy = volume_claim_delete_policy(es)
    changes: list[tuple[str, list[dict[str, Any]]]] = []
    for pvc in pvcs:
        if view(pvc).deletion_timestamp:
            continue
        if policy == DELETE_ON_SCALEDOWN_AND_CLUSTER_DELETION:
            refs = with_owner_reference(pvc, es)
        elif policy == DELETE_ON_SCALEDOWN_ONLY:
            refs = without_owner_reference(pvc, es)
        else:  # a value the CRD's enum refuses: touch nothing
            refs = None
        if refs is not None:
            changes.append((view(pvc).name, refs))
    return tuple(sorted(changes, key=lambda change: change[0]))


# --- claims of removed nodes ----------------------------------------------------------------


def pvc_names_to_keep(statefulsets: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """ECK's ``PVCNames``: ``<claim>-<sset>-<ordinal>`` for every claim template and every
    ordinal below the StatefulSet's replicas (Pods not created yet included)."""
    keep: set[str] = set()
    for statefulset in statefulsets:
        name = view(statefulset).name
        for template in _claims(statefulset):
            claim = _claim_name(template)
            keep.update(f"{claim}-{name}-{ordinal}" for ordinal in range(_replicas(statefulset)))
    return frozenset(keep)


def pvcs_to_delete(
    pvcs: Iterable[Mapping[str, Any]],
    *,
    actual: Iterable[Mapping[str, Any]],
    expected: Iterable[Mapping[str, Any]],
) -> tuple[Mapping[str, Any], ...]:
    """ECK's ``pvcsToRemove``: the cluster's PVCs (listed by its label) that neither a current
    nor a desired StatefulSet would mount, by name; those already being deleted are left.

    An ordinal at or above the replicas of both (a node removed) and any PVC of a StatefulSet that
    no longer exists and is no longer wanted (a node set removed or renamed) go. As ECK, a PVC
    carrying the cluster's label under any other name goes too: the label is the operator's.
    """
    keep = pvc_names_to_keep([*actual, *expected])
    doomed = [
        pvc for pvc in pvcs if view(pvc).name not in keep and not view(pvc).deletion_timestamp
    ]
    return tuple(sorted(doomed, key=lambda pvc: view(pvc).name))
