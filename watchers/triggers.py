"""Pure decisions: which Kubernetes event asks which workflow to look again, and why.

Every function here takes an informer event ``(event type, old, new)`` — ADDED has no old,
DELETED has no new — and answers a ``Trigger`` (or the workflows to trigger), or None when the
event changes nothing a reconcile depends on (a status write by the operator itself, a
resourceVersion bump). No I/O: ``watchers.wiring`` does the wiring.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stackflow.controllers import OwnersOf, SelectionContext, Selects
from stackflow.licensing.model import LICENSE_SCOPE_LABEL, LICENSE_SCOPE_OPERATOR
from stackflow.models.engine import Trigger, TriggerReason
from stackflow.models.keys import NamespacedName
from stackflow.models.objects import view

__all__ = [
    "child_owners",
    "child_trigger",
    "is_operator_license",
    "license_trigger",
    "primary_trigger",
    "reference_trigger",
    "selecting",
]

Obj = Mapping[str, Any]
# Metadata the API server or controllers change without the object's meaning changing.
_VOLATILE_METADATA = frozenset({"resourceVersion", "managedFields"})


def _metadata(obj: Obj | None) -> Mapping[str, Any]:
    return view(obj).metadata


def _name(obj: Obj) -> str:
    return view(obj).key


def _kind_and_name(obj: Obj) -> str:
    return f"{obj.get('kind') or 'object'} {_name(obj)}"


def _changed_keys(old: Obj, new: Obj, keys: tuple[str, ...]) -> list[str]:
    return [key for key in keys if _metadata(old).get(key) != _metadata(new).get(key)]


def _changed_annotations(old: Obj, new: Obj) -> set[str]:
    before = _metadata(old).get("annotations") or {}
    after = _metadata(new).get("annotations") or {}
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def primary_trigger(
    event_type: str,
    old: Obj | None,
    new: Obj | None,
    *,
    source: str,
    ignored_annotation: Callable[[str], bool] | None = None,
) -> Trigger | None:
    """The trigger for an event of a controller's primary object, or None.

    Create → ``Created``; delete → ``Deleted``; a generation change → ``SpecChanged``; a
    label, annotation or deletion-timestamp change → ``MetadataChanged``. A status-only update
    (the operator's own write) or a bare resourceVersion bump triggers nothing, so the
    operator never wakes itself up in a loop; nor does a change of only annotations the
    controller ignores (``ignored_annotation``: another controller's bookkeeping).
    """
    if event_type == "ADDED" and new is not None:
        return Trigger(reason=TriggerReason.CREATED, source=source, detail=_kind_and_name(new))
    if event_type == "DELETED" and old is not None:
        return Trigger(reason=TriggerReason.DELETED, source=source, detail=_kind_and_name(old))
    if event_type != "MODIFIED" or old is None or new is None:
        return None
    old_generation = _metadata(old).get("generation")
    new_generation = _metadata(new).get("generation")
    if old_generation != new_generation:
        return Trigger(
            reason=TriggerReason.SPEC_CHANGED,
            source=source,
            detail=f"{_kind_and_name(new)} generation {old_generation} → {new_generation}",
        )
    changed = _changed_keys(old, new, ("labels", "annotations", "deletionTimestamp"))
    if (
        changed == ["annotations"]
        and ignored_annotation is not None
        and all(ignored_annotation(key) for key in _changed_annotations(old, new))
    ):
        return None
    if changed:
        return Trigger(
            reason=TriggerReason.METADATA_CHANGED,
            source=source,
            detail=f"{_kind_and_name(new)} {', '.join(changed)} changed",
        )
    return None


def _meaningfully_changed(old: Obj, new: Obj) -> bool:
    """Whether anything but volatile metadata differs between two states of an object."""
    if {k: v for k, v in old.items() if k != "metadata"} != {
        k: v for k, v in new.items() if k != "metadata"
    }:
        return True
    old_meta = {k: v for k, v in _metadata(old).items() if k not in _VOLATILE_METADATA}
    new_meta = {k: v for k, v in _metadata(new).items() if k not in _VOLATILE_METADATA}
    return old_meta != new_meta


def _only_volatile_change(event_type: str, old: Obj | None, new: Obj | None) -> bool:
    """An update that changed nothing but the resourceVersion or managed fields."""
    if event_type != "MODIFIED" or old is None or new is None:
        return False
    return not _meaningfully_changed(old, new)


def child_owners(
    event_type: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    owners_of: OwnersOf,
) -> list[NamespacedName]:
    """The owners a child event concerns: those of its new state and, where they changed, of its
    old state too, each once. Empty when the event changes nothing meaningful."""
    if _only_volatile_change(event_type, old, new):
        return []
    owners: dict[NamespacedName, None] = {}
    for state in (new, old):
        if state is not None:
            owners.update(dict.fromkeys(owners_of(state)))
    return list(owners)


def child_trigger(event_type: str, old: Obj | None, new: Obj | None, *, source: str) -> Trigger:
    """The ``ChildChanged`` trigger sent to a child's owner."""
    obj = new if new is not None else old
    verb = {"ADDED": "created", "MODIFIED": "changed", "DELETED": "deleted"}.get(
        event_type, event_type.lower()
    )
    return Trigger(
        reason=TriggerReason.CHILD_CHANGED,
        source=source,
        detail=f"{_kind_and_name(obj or {})} {verb}",
    )


def reference_trigger(
    event_type: str, old: Obj | None, new: Obj | None, *, source: str
) -> Trigger | None:
    """The ``ReferenceChanged`` trigger for a referenced Secret/ConfigMap event, or None when
    only volatile metadata changed."""
    if _only_volatile_change(event_type, old, new):
        return None
    obj = new if new is not None else old
    if obj is None:
        return None
    verb = {"ADDED": "created", "MODIFIED": "changed", "DELETED": "deleted"}.get(
        event_type, event_type.lower()
    )
    return Trigger(
        reason=TriggerReason.REFERENCE_CHANGED,
        source=source,
        detail=f"{_kind_and_name(obj)} {verb}",
    )


def selecting(
    old: Obj | None,
    new: Obj | None,
    primaries: Iterable[Obj],
    selects: Selects,
    context: SelectionContext,
) -> list[Obj]:
    """The primaries whose selector picks an object before or after an event: one it starts
    matching must look (to take it on), one it stops matching too (to let it go)."""
    states = [state for state in (old, new) if state is not None]
    return [
        primary
        for primary in primaries
        if any(selects(primary, state, context) for state in states)
    ]


def is_operator_license(obj: Obj | None) -> bool:
    """Whether a Secret is an operator (enterprise) license: label scope=operator."""
    return view(obj).labels.get(LICENSE_SCOPE_LABEL) == LICENSE_SCOPE_OPERATOR


def license_trigger(
    event_type: str, old: Obj | None, new: Obj | None, *, source: str
) -> Trigger | None:
    """The ``LicenseChanged`` trigger for a Secret event, or None.

    A Secret that is (or was, before this event) an operator license and whose content,
    labels or existence changed: a license appeared, was replaced, or went away.
    """
    if not (is_operator_license(old) or is_operator_license(new)):
        return None
    if _only_volatile_change(event_type, old, new):
        return None
    obj = new if new is not None else old
    if obj is None:
        return None
    verb = {"ADDED": "added", "MODIFIED": "changed", "DELETED": "removed"}.get(
        event_type, event_type.lower()
    )
    return Trigger(
        reason=TriggerReason.LICENSE_CHANGED,
        source=source,
        detail=f"operator license Secret {_name(obj)} {verb}",
    )
