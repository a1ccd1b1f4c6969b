"""The volumes of one cluster: claim expansion by StatefulSet recreation, and the PVCs of removed
nodes, as ECK does them (the decisions are :mod:`stackflow.stack.elasticsearch.volumes`).

The reconcile calls :func:`reconcile_volumes` before it writes the StatefulSets, with the ones
the builder wants and the ones that exist, and :func:`collect_claims` after them. In ECK's order:

1. a recreation in progress (an ``elasticsearch.k8s.elastic.co/recreate-<sset>`` annotation)
   moves one step; while any is in progress nothing else is done and the pass asks to look again;
2. each existing StatefulSet whose claims change is validated; a refusal is reported, and a valid
   increase resizes the PVCs and stores the StatefulSet for recreation;
3. once the StatefulSets are written, when nothing was refused or scheduled
   (``VolumesOutcome.collects``), the PVCs' ownerReferences follow
   ``spec.volumeClaimDeletePolicy`` and the PVCs no StatefulSet would mount are deleted. The
   StatefulSets' write does not wait for the claims' listing.

Every namespaced read goes through the scoped client; StorageClasses are cluster-scoped and are
listed only when a claim grows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from activities.context import ControllerContext
from stackflow.kube import errors
from stackflow.models.kinds import (
    PERSISTENTVOLUMECLAIMS,
    PODS,
    STATEFULSETS,
    STORAGECLASSES,
    Kind,
)
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.elasticsearch.volumes import (
    FieldError,
    RecreateAction,
    RecreateStep,
    claim_templates_refusal,
    needs_recreate,
    node_set_claims_field,
    pvc_owner_changes,
    pvc_resizes,
    pvcs_to_delete,
    recreate_annotation,
    recreate_steps,
    with_owner_reference,
    without_owner_reference,
)
from stackflow.stack.labels import ES_CLUSTER_NAME_LABEL, ES_STATEFULSET_NAME_LABEL

__all__ = ["VolumesOutcome", "collect_claims", "reconcile_volumes"]

logger = logging.getLogger("activities.elasticsearch_volumes")


@dataclass(frozen=True)
class VolumesOutcome:
    """What the volumes pass did and what it asks of the caller."""

    #: Objects written (PVCs, StatefulSets, Pods' owners, the Elasticsearch's annotations).
    written: int = 0
    #: Look again soon: a recreation is in progress or was scheduled, or a write conflicted.
    requeue: bool = False
    #: StatefulSets the caller must not write this pass: those being recreated (or just scheduled
    #: for it) and those whose claim change was refused (their claims cannot be applied).
    skip_statefulsets: frozenset[str] = frozenset()
    #: ``(field, message)`` refusals, in ECK's words (ECK fails the reconcile on them).
    problems: tuple[FieldError, ...] = ()

    @property
    def collects(self) -> bool:
        """Whether the claims are collected after the StatefulSets are written: nothing is
        being recreated, scheduled or refused (ECK collects none meanwhile)."""
        return not (self.requeue or self.skip_statefulsets or self.problems)


def _name(obj: Mapping[str, Any]) -> str:
    return view(obj).name


async def _set_owner_references(
    context: ControllerContext,
    resource: Kind,
    obj: Mapping[str, Any],
    refs: list[dict[str, Any]],
) -> bool:
    """Write ``obj``'s ownerReferences, conditioned on the version read; False when it changed
    or went meanwhile (the next pass decides again)."""
    meta = view(obj)
    patch = {"metadata": {"ownerReferences": refs, "resourceVersion": meta.resource_version}}
    try:
        await context.scoped.merge_patch(resource, patch, namespace=meta.namespace, name=meta.name)
    except (errors.Conflict, errors.NotFound):
        return False
    return True


async def _statefulset_pods(
    context: ControllerContext, namespace: str, statefulset: str
) -> list[dict[str, Any]]:
    selector = equality_selector_string({ES_STATEFULSET_NAME_LABEL: statefulset})
    listed = await context.scoped.list(PODS, namespace=namespace, label_selector=selector)
    return list(listed["items"])


async def _pods_owned_by_cluster(
    context: ControllerContext, es: Mapping[str, Any], statefulset: str, *, owned: bool
) -> tuple[int, bool]:
    """Give the StatefulSet's Pods an ownerReference to the cluster (``owned``) or take it away:
    while their StatefulSet is deleted they are nobody's, and deleting the cluster must still
    delete them (ECK's ``updatePodOwners`` / ``removePodOwner``). (writes, all written)"""
    written, complete = 0, True
    for pod in await _statefulset_pods(context, view(es).namespace, statefulset):
        refs = with_owner_reference(pod, es) if owned else without_owner_reference(pod, es)
        if refs is None:
            continue
        if await _set_owner_references(context, PODS, pod, refs):
            written += 1
        else:
            complete = False
    return written, complete


async def _annotate(
    context: ControllerContext, es: Mapping[str, Any], resource: Kind, key: str, value: str | None
) -> None:
    """Set (or, with None, remove) one annotation of the Elasticsearch."""
    meta = view(es)
    await context.scoped.merge_patch(
        resource,
        {"metadata": {"annotations": {key: value}}},
        namespace=meta.namespace,
        name=meta.name,
    )


async def _recreate_step(
    context: ControllerContext, es: Mapping[str, Any], resource: Kind, step: RecreateStep
) -> tuple[int, bool]:
    """Run one recreation step; (writes, whether the recreation is still in progress)."""
    namespace = view(es).namespace
    if step.action is RecreateAction.AWAIT_DELETION:
        return 0, True
    if step.action is RecreateAction.DELETE:
        logger.info(
            "deleting StatefulSet %s/%s to account for resized PVCs, it will be recreated",
            namespace,
            step.statefulset,
        )
        written, complete = await _pods_owned_by_cluster(context, es, step.statefulset, owned=True)
        if not complete:
            # A Pod changed under us: deleting now could leave it owned by nobody.
            return written, True
        try:
            await context.scoped.delete(
                STATEFULSETS,
                namespace=namespace,
                name=step.statefulset,
                propagation_policy="Orphan",
                preconditions={"uid": step.uid},
            )
        except (errors.NotFound, errors.Conflict):
            # Gone already, or replaced (another UID): the next pass sees which.
            return written, True
        return written + 1, True
    if step.action is RecreateAction.CREATE:
        logger.info(
            "re-creating StatefulSet %s/%s to account for resized PVCs",
            namespace,
            step.statefulset,
        )
        assert step.manifest is not None
        try:
            await context.scoped.create(STATEFULSETS, step.manifest, namespace=namespace)
        except errors.AlreadyExists:
            return 0, True
        return 1, True
    written, complete = await _pods_owned_by_cluster(context, es, step.statefulset, owned=False)
    if not complete:
        return written, True
    await _annotate(context, es, resource, step.annotation, None)
    return written + 1, False


async def _list_pvcs(context: ControllerContext, es: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cluster's PVCs: a StatefulSet gives its PVCs its selector's labels, the cluster's
    name among them."""
    selector = equality_selector_string({ES_CLUSTER_NAME_LABEL: view(es).name})
    listed = await context.scoped.list(
        PERSISTENTVOLUMECLAIMS, namespace=view(es).namespace, label_selector=selector
    )
    return list(listed["items"])


async def _resize_pvcs(
    context: ControllerContext,
    namespace: str,
    resizes: Sequence[tuple[str, str]],
) -> int:
    """Give each PVC its new storage request (the volume grows as its driver allows; some need
    the Pod restarted for the filesystem to follow, which is left to the user, as in ECK)."""
    written = 0
    for pvc_name, size in resizes:
        logger.info("resizing PVC %s/%s storage request to %s", namespace, pvc_name, size)
        await context.scoped.merge_patch(
            PERSISTENTVOLUMECLAIMS,
            {"spec": {"resources": {"requests": {"storage": size}}}},
            namespace=namespace,
            name=pvc_name,
        )
        written += 1
    return written


async def _expand(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    resource: Kind,
    desired_statefulsets: Sequence[Mapping[str, Any]],
    current: Mapping[str, Mapping[str, Any]],
) -> tuple[int, frozenset[str], frozenset[str], tuple[FieldError, ...]]:
    """Validate each existing StatefulSet's claim change, resize and schedule the valid increases
    (the PVCs are listed only then).

    (writes, StatefulSets scheduled for recreation, StatefulSets refused, problems)
    """
    namespace = view(es).namespace
    changed = [
        (desired, current[_name(desired)])
        for desired in desired_statefulsets
        if _name(desired) in current
    ]
    storage_classes: list[dict[str, Any]] = []
    pvcs: list[dict[str, Any]] = []
    if any(needs_recreate(actual, desired) for desired, actual in changed):
        listed = await context.scoped.list(STORAGECLASSES)
        storage_classes = list(listed["items"])
        pvcs = await _list_pvcs(context, es)
    written = 0
    scheduled: set[str] = set()
    refused: set[str] = set()
    problems: list[FieldError] = []
    for desired, actual in changed:
        name = _name(desired)
        refusal = claim_templates_refusal(
            (actual.get("spec") or {}).get("volumeClaimTemplates") or [],
            (desired.get("spec") or {}).get("volumeClaimTemplates") or [],
            storage_classes,
        )
        if refusal is not None:
            refused.add(name)
            problems.append((node_set_claims_field(es, name), refusal))
            continue
        if not needs_recreate(actual, desired):
            continue
        written += await _resize_pvcs(context, namespace, pvc_resizes(actual, desired, pvcs))
        key, value = recreate_annotation(actual, desired)
        logger.info(
            "preparing StatefulSet %s/%s re-creation to account for PVC resize", namespace, name
        )
        await _annotate(context, es, resource, key, value)
        written += 1
        scheduled.add(name)
    return written, frozenset(scheduled), frozenset(refused), tuple(problems)


async def _collect_pvcs(
    context: ControllerContext,
    es: Mapping[str, Any],
    pvcs: Sequence[Mapping[str, Any]],
    *,
    statefulsets: Sequence[Mapping[str, Any]],
    desired_statefulsets: Sequence[Mapping[str, Any]],
) -> tuple[int, bool]:
    """Owner references by the delete policy, then the PVCs of removed nodes. (writes, conflicted)"""
    namespace = view(es).namespace
    doomed = pvcs_to_delete(pvcs, actual=statefulsets, expected=desired_statefulsets)
    doomed_names = {_name(pvc) for pvc in doomed}
    by_name = {_name(pvc): pvc for pvc in pvcs}
    written, conflicted = 0, False
    for pvc_name, refs in pvc_owner_changes(
        [pvc for pvc in pvcs if _name(pvc) not in doomed_names], es
    ):
        if await _set_owner_references(context, PERSISTENTVOLUMECLAIMS, by_name[pvc_name], refs):
            written += 1
        else:
            conflicted = True
    for pvc in doomed:
        logger.info("deleting PVC %s/%s: no node mounts it any more", namespace, _name(pvc))
        try:
            await context.scoped.delete(
                PERSISTENTVOLUMECLAIMS,
                namespace=namespace,
                name=_name(pvc),
                preconditions={"uid": view(pvc).uid},
            )
        except errors.NotFound:
            continue
        except errors.Conflict:
            # Another PVC of that name now: the next pass judges it.
            conflicted = True
            continue
        written += 1
    return written, conflicted


async def reconcile_volumes(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    resource: Kind,
    desired_statefulsets: Sequence[Mapping[str, Any]],
    statefulsets: Sequence[Mapping[str, Any]],
) -> VolumesOutcome:
    """One volumes pass over ``es`` (see the module doc).

    ``resource`` is the Elasticsearch's kind (its annotations are patched);
    ``desired_statefulsets`` the builder's; ``statefulsets`` the current ones, listed by the
    cluster's label. The caller writes no StatefulSet of ``skip_statefulsets`` this pass,
    reports ``problems``, and collects the claims after its writes when the outcome ``collects``.
    """
    current = {_name(statefulset): statefulset for statefulset in statefulsets}
    steps, annotation_problems = recreate_steps(view(es).annotations, current)
    written = 0
    in_progress: set[str] = set()
    for step in steps:
        step_written, pending = await _recreate_step(context, es, resource, step)
        written += step_written
        if pending:
            in_progress.add(step.statefulset)
    if in_progress:
        # ECK stops the node specs here: a StatefulSet just deleted still has running Pods, and
        # any decision on it would be made on a view that lacks it.
        return VolumesOutcome(
            written=written,
            requeue=True,
            skip_statefulsets=frozenset(in_progress),
            problems=annotation_problems,
        )
    expanded, scheduled, refused, claim_problems = await _expand(
        context,
        es,
        resource=resource,
        desired_statefulsets=desired_statefulsets,
        current=current,
    )
    written += expanded
    problems = (*annotation_problems, *claim_problems)
    return VolumesOutcome(
        written=written,
        requeue=bool(scheduled),
        skip_statefulsets=scheduled | refused,
        problems=problems,
    )


async def collect_claims(
    context: ControllerContext,
    es: Mapping[str, Any],
    *,
    desired_statefulsets: Sequence[Mapping[str, Any]],
    statefulsets: Sequence[Mapping[str, Any]],
) -> VolumesOutcome:
    """The claims' pass after the StatefulSets are written, when ``reconcile_volumes`` said it
    ``collects``: owner references by the delete policy, then the PVCs no current nor desired
    StatefulSet mounts are deleted. It asks to look again when a write conflicted."""
    pvcs = await _list_pvcs(context, es)
    collected, conflicted = await _collect_pvcs(
        context,
        es,
        pvcs,
        statefulsets=statefulsets,
        desired_statefulsets=desired_statefulsets,
    )
    return VolumesOutcome(written=collected, requeue=conflicted)
