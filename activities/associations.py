"""One association reconcile for every pair of ``stackflow.stack.associations.table.ASSOCIATIONS``.

Reconcile reads the associated object through the scoped client, parses its refs (``InvalidSpec``
for a malformed one: name and secretName, a secretName where none is allowed…), resolves each ref
(``activities.association_targets``), then writes only what changed: the conf annotations on the
associated object (merge patch of ``metadata.annotations``, nothing else), the per-ref statuses
through ``/status`` with an ``AssociationStatusChange`` event, and deletes the Secrets of refs that
are gone (unbind clean-up). Finalize does the clean-up for a deleted object. The flip mapper
finds the associated objects a flip concerns, in any namespace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from activities.association_targets import RefOutcome, resolve_ref
from activities.binding import Family, FamilyActivities, Primary
from activities.context import ControllerContext
from activities.errors import InvalidSpecError
from activities.kinds import involved_reference
from stackflow.api.kinds import kind_resource
from stackflow.controllers import Controller
from stackflow.kube import errors
from stackflow.kube.events import (
    EVENT_ACTION_ACCESS_CHECK,
    EVENT_ASSOCIATION_ERROR,
    EVENT_STATUS_CHANGE,
    InvolvedObject,
)
from stackflow.models.engine import (
    FinalizeInput,
    FinalizeResult,
    FlipDirectionName,
    Phase,
    ReconcileInput,
    ReconcileResult,
)
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view
from stackflow.scope import equality_selector_string
from stackflow.stack.access import RBAC_RECHECK_SECONDS
from stackflow.stack.associations import flip
from stackflow.stack.associations.conf import conf_annotation_name, stale_conf_annotations
from stackflow.stack.associations.refs import AssociationRef, parse_refs
from stackflow.stack.associations.secrets import (
    association_secrets_selector,
    orphaned_secrets,
)
from stackflow.stack.associations.status import (
    ESTABLISHED,
    FAILED,
    apply_status,
    current_statuses,
    describe,
    status_fields,
    status_map,
)
from stackflow.stack.associations.table import (
    ASSOCIATIONS,
    TRANSITIVE_ES_ASSOCIATION,
    Association,
    association_named,
)

__all__ = [
    "FAMILIES",
    "PENDING_REQUEUE_SECONDS",
    "AssociationActivities",
    "annotations_patch",
    "confs_before_status",
]

#: A Pending ref is looked at again this soon even without a trigger (ECK's default requeue).
PENDING_REQUEUE_SECONDS = 30.0

# --- reconcile --------------------------------------------------------------------------------


def annotations_patch(
    association: Association,
    *,
    annotations: Mapping[str, str],
    outcomes: Sequence[RefOutcome],
    refs: Sequence[AssociationRef],
) -> dict[str, str | None]:
    """The annotation changes: established confs set, others and stale ones removed (pure)."""
    patch: dict[str, str | None] = {}
    for outcome in outcomes:
        name = conf_annotation_name(association, outcome.ref)
        value = outcome.conf.to_json() if outcome.conf is not None else None
        if annotations.get(name) != value:
            patch[name] = value
    for stale in stale_conf_annotations(association, annotations=annotations, refs=refs):
        patch[stale] = None
    return {key: value for key, value in patch.items() if value is not None or key in annotations}


def confs_before_status(patch: Mapping[str, str | None]) -> bool:
    """Whether the conf annotations must be written before the statuses (pure): when a conf is
    set, so that a ref reads ``Established`` only once its conf is there. A patch that only
    removes confs goes out with the statuses: a ``Pending`` status claims nothing it needs."""
    return any(value is not None for value in patch.values())


async def _delete_orphans(
    context: ControllerContext,
    association: Association,
    *,
    namespace: str,
    name: str,
    refs: Sequence[AssociationRef],
) -> list[str]:
    """Delete the association Secrets no current ref needs (scoped: in-scope namespaces only)."""
    listed = await _association_secrets(context, association, namespace=namespace, name=name)
    return await _delete_orphans_of(context, association, listed=listed, refs=refs)


async def _association_secrets(
    context: ControllerContext, association: Association, *, namespace: str, name: str
) -> dict[str, Any]:
    """The association's Secrets of one associated object (scoped: in-scope namespaces only).

    Read only to delete those no ref needs any more, so from the API server's watch cache
    (``ResourceClient.list``'s ``from_watch_cache``: no wait for it to catch up with etcd): a
    stale listing misses a Secret until the next reconcile, or names one already gone.
    """
    selector = association_secrets_selector(
        association, associated_namespace=namespace, associated_name=name
    )
    return await context.scoped.list(
        SECRETS, label_selector=equality_selector_string(selector), from_watch_cache=True
    )


async def _delete_orphans_of(
    context: ControllerContext,
    association: Association,
    *,
    listed: Mapping[str, Any],
    refs: Sequence[AssociationRef],
) -> list[str]:
    """Delete those of the ``listed`` Secrets no current ref needs."""
    deleted: list[str] = []
    for secret in orphaned_secrets(association, secrets=listed["items"], refs=refs):
        metadata = secret["metadata"]
        try:
            await context.scoped.delete(
                SECRETS, namespace=str(metadata["namespace"]), name=str(metadata["name"])
            )
        except errors.NotFound:
            continue
        deleted.append(f"Secret {metadata['namespace']}/{metadata['name']}")
    return deleted


async def _record_status(
    context: ControllerContext,
    association: Association,
    *,
    request: ReconcileInput,
    obj: Mapping[str, Any],
    outcomes: Sequence[RefOutcome],
) -> None:
    """Write the per-ref statuses when they changed, with the events ECK records.

    The status goes first: ECK's recorder sends its events in the background, so no event delays
    the status a user (or a Kibana waiting on its Elasticsearch) reads.
    """
    ref = request.ref
    involved = InvolvedObject.of(involved_reference(ref, dict(obj)))
    statuses = status_map((outcome.ref, outcome.status) for outcome in outcomes)
    current = obj.get("status") or {}
    changed = apply_status(current, association, statuses) != current
    if changed:
        await context.scoped.patch_status(
            ref.resource,
            {"status": status_fields(association, statuses)},
            namespace=ref.namespace,
            name=ref.name,
        )
    for outcome in outcomes:
        if outcome.status == FAILED or outcome.backend_missing:
            await context.events.warning(
                involved, reason=EVENT_ASSOCIATION_ERROR, message=outcome.message
            )
        elif outcome.denied:
            await context.events.warning(
                involved,
                reason=EVENT_ASSOCIATION_ERROR,
                message=outcome.message,
                action=EVENT_ACTION_ACCESS_CHECK,
            )
    if not changed:
        return
    before = describe(
        {key: value for key, value in current_statuses(current, association).items() if value}
    )
    after = describe(statuses)
    await context.events.normal(
        involved,
        reason=EVENT_STATUS_CHANGE,
        message=f"Association status changed from [{before}] to [{after}]",
    )


def _requeue(context: ControllerContext, *, established: bool) -> float | None:
    """A Pending ref is looked at again soon; with enforce-rbac-on-refs an established one is
    checked again every ``RBAC_RECHECK_SECONDS``, as no watch sees a Role or RoleBinding change."""
    if not established:
        return PENDING_REQUEUE_SECONDS
    return RBAC_RECHECK_SECONDS if context.access.enforced else None


async def _resolve_all(
    context: ControllerContext,
    association: Association,
    obj: Mapping[str, Any],
    refs: Sequence[AssociationRef],
) -> list[RefOutcome]:
    """Every ref resolved, in order."""
    return [await resolve_ref(context, association, associated=obj, ref=item) for item in refs]


async def _reconcile(
    context: ControllerContext,
    request: ReconcileInput,
    obj: Primary,
    *,
    association: Association,
) -> ReconcileResult:
    ref = request.ref
    parsed = parse_refs(obj, association)
    if parsed.errors:
        raise InvalidSpecError("; ".join(parsed.errors))
    # The listing of its Secrets does not depend on the refs' outcomes: made beside them.
    listed, outcomes = await asyncio.gather(
        _association_secrets(context, association, namespace=ref.namespace, name=ref.name),
        _resolve_all(context, association, obj, parsed.refs),
    )
    annotations = view(obj).annotations
    patch = annotations_patch(
        association, annotations=annotations, outcomes=outcomes, refs=parsed.refs
    )

    async def write_confs() -> None:
        if patch:
            # Only metadata.annotations: the user's spec is never written.
            await context.scoped.merge_patch(
                ref.resource,
                {"metadata": {"annotations": patch}},
                namespace=ref.namespace,
                name=ref.name,
            )

    async def clean_up_and_record() -> list[str]:
        deleted = await _delete_orphans_of(context, association, listed=listed, refs=parsed.refs)
        await _record_status(context, association, request=request, obj=obj, outcomes=outcomes)
        return deleted

    if confs_before_status(patch):
        await write_confs()
        deleted = await clean_up_and_record()
    else:
        _, deleted = await asyncio.gather(write_confs(), clean_up_and_record())
    watched = tuple(dict.fromkeys(item for outcome in outcomes for item in outcome.watched))
    established = all(outcome.status == ESTABLISHED for outcome in outcomes)
    problems = [outcome.message for outcome in outcomes if outcome.status != ESTABLISHED]
    summary = describe(status_map((o.ref, o.status) for o in outcomes)) or "no references"
    return ReconcileResult(
        phase=Phase.READY if established else Phase.RECONCILING,
        message="; ".join([summary, *problems, *(f"deleted {item}" for item in deleted)]),
        requeue_after_seconds=_requeue(context, established=established),
        observed_generation=view(obj).generation,
        referenced=watched,
    )


class AssociationActivities(FamilyActivities):
    """One association controller's activities (its row of ``ASSOCIATIONS``, by controller name),
    bound to the process's ``ControllerContext``."""

    def __init__(self, context: ControllerContext, controller: Controller) -> None:
        super().__init__(context, controller)
        self.association = association_named(controller.name)

    async def reconcile(self, request: ReconcileInput, primary: Primary) -> ReconcileResult:
        """Reconcile the association of one associated object."""
        return await _reconcile(self.context, request, primary, association=self.association)

    async def finalize(self, request: FinalizeInput) -> FinalizeResult:
        """The unbind clean-up of a deleted associated object."""
        ref = request.ref
        deleted = await _delete_orphans(
            self.context, self.association, namespace=ref.namespace, name=ref.name, refs=()
        )
        return FinalizeResult(deleted=tuple(deleted))

    async def flip_targets(
        self, namespace: str, direction: FlipDirectionName
    ) -> list[Mapping[str, Any]]:
        """The flip mapper (reference §11, plus transitive refs), over **unscoped** cluster-wide
        lists."""
        association, unscoped = self.association, self.context.unscoped
        associated = (await unscoped.list(kind_resource(association.associated_kind)))["items"]
        transitive = TRANSITIVE_ES_ASSOCIATION.get(association.name)
        targets: list[dict[str, Any]] | None = None
        if transitive is not None and association.target.kind != association.associated_kind:
            # The targets' own Elasticsearch refs decide the transitive triggers.
            resource = kind_resource(association_named(transitive).associated_kind)
            targets = (await unscoped.list(resource))["items"]
        return [
            dict(obj)
            for obj in flip.flip_targets(
                association,
                namespace=namespace,
                associated_objects=associated,
                target_objects=targets,
            )
        ]


FAMILIES: Mapping[str, Family] = dict.fromkeys(
    (association.name for association in ASSOCIATIONS), AssociationActivities
)
