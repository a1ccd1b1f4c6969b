"""Which Kubernetes events ask which workflow to look again (watchers.triggers, pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stackflow.controllers import SelectionContext
from stackflow.controllers.associations import ASSOCIATION_CONTROLLERS
from stackflow.models.engine import ObjectKey, TriggerReason
from stackflow.models.keys import NamespacedName
from watchers.references import ReferenceIndex
from watchers.triggers import (
    child_owners,
    child_trigger,
    is_operator_license,
    license_trigger,
    primary_trigger,
    reference_trigger,
    selecting,
)

ASSOCIATION_CONTROLLERS_BY_NAME = {row.name: row for row in ASSOCIATION_CONTROLLERS}


def es(
    *,
    generation: int = 1,
    rv: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "quickstart",
        "namespace": "team-a",
        "generation": generation,
        "resourceVersion": rv,
    }
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    obj: dict[str, Any] = {"kind": "Elasticsearch", "metadata": metadata, "spec": {"version": "9"}}
    if status is not None:
        obj["status"] = status
    return obj


@pytest.mark.parametrize(
    ("event_type", "old", "new", "expected"),
    [
        ("ADDED", None, es(), TriggerReason.CREATED),
        ("DELETED", es(), None, TriggerReason.DELETED),
        ("MODIFIED", es(generation=1), es(generation=2, rv="2"), TriggerReason.SPEC_CHANGED),
        ("MODIFIED", es(), es(rv="2", labels={"a": "b"}), TriggerReason.METADATA_CHANGED),
        ("MODIFIED", es(), es(rv="2", annotations={"x": "y"}), TriggerReason.METADATA_CHANGED),
        ("MODIFIED", es(), es(rv="2", deleting=True), TriggerReason.METADATA_CHANGED),
        # The operator's own status write must not wake the workflow up again.
        ("MODIFIED", es(), es(rv="2", status={"health": "green"}), None),
        ("MODIFIED", es(), es(rv="2"), None),
    ],
    ids=[
        "create",
        "delete",
        "generation",
        "labels",
        "annotations",
        "deletion-requested",
        "status-only",
        "rv-only",
    ],
)
def test_primary_trigger(
    event_type: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    expected: TriggerReason | None,
) -> None:
    trigger = primary_trigger(event_type, old, new, source="watch Elasticsearch")
    assert (trigger.reason if trigger else None) == expected
    if trigger is not None:
        assert trigger.source == "watch Elasticsearch"
        assert "team-a/quickstart" in trigger.detail


def test_generation_change_detail_names_both_generations() -> None:
    trigger = primary_trigger("MODIFIED", es(generation=3), es(generation=4), source="s")
    assert trigger is not None
    assert "3 → 4" in trigger.detail


ES_CONF = "association.k8s.elastic.co/es-conf"
ENT_CONF = "association.k8s.elastic.co/ent-conf"


@pytest.mark.parametrize(
    ("controller", "old", "new", "wakes"),
    [
        # kb-es writes its conf on the Kibana: the Enterprise Search association has no business.
        ("kb-ent", es(), es(rv="2", annotations={ES_CONF: "{}"}), False),
        ("kb-ent", es(annotations={ES_CONF: "a"}), es(rv="2"), False),
        ("kb-es", es(), es(rv="2", annotations={ES_CONF: "{}"}), True),
        ("kb-ent", es(), es(rv="2", annotations={ENT_CONF: "{}"}), True),
        # A multi-ref association's conf annotations carry a hash: still its own.
        ("agent-es", es(), es(rv="2", annotations={f"{ES_CONF}-1a2b": "{}"}), True),
        ("agent-kibana", es(), es(rv="2", annotations={f"{ES_CONF}-1a2b": "{}"}), False),
        # Anything else beside it is a change for every association.
        ("kb-ent", es(), es(rv="2", annotations={ES_CONF: "{}", "x": "y"}), True),
        ("kb-ent", es(), es(rv="2", annotations={ES_CONF: "{}"}, labels={"a": "b"}), True),
        ("kb-ent", es(), es(generation=2, rv="2", annotations={ES_CONF: "{}"}), True),
    ],
    ids=[
        "other-conf-added",
        "other-conf-removed",
        "own-conf",
        "own-conf-of-the-other",
        "own-hashed-conf",
        "other-hashed-conf",
        "other-conf-and-an-annotation",
        "other-conf-and-a-label",
        "other-conf-and-the-spec",
    ],
)
def test_an_association_sleeps_through_another_associations_conf(
    controller: str, old: dict[str, Any], new: dict[str, Any], wakes: bool
) -> None:
    row = ASSOCIATION_CONTROLLERS_BY_NAME[controller]
    trigger = primary_trigger(
        "MODIFIED", old, new, source="watch Kibana", ignored_annotation=row.ignored_annotation
    )
    assert (trigger is not None) is wakes


def sts(*, owner: str | None, rv: str = "1", replicas: int = 3) -> dict[str, Any]:
    labels = {"elasticsearch.k8s.elastic.co/cluster-name": owner} if owner else {}
    return {
        "kind": "StatefulSet",
        "metadata": {
            "name": "quickstart-es-default",
            "namespace": "team-a",
            "resourceVersion": rv,
            "labels": labels,
        },
        "status": {"readyReplicas": replicas},
    }


def owner_by_label(obj: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    labels = obj["metadata"].get("labels") or {}
    name = labels.get("elasticsearch.k8s.elastic.co/cluster-name")
    return (NamespacedName(obj["metadata"]["namespace"], name),) if name else ()


def two_owners(obj: Mapping[str, Any]) -> tuple[NamespacedName, ...]:
    """A child shared by several owners (a policy's file-settings Secret, say)."""
    owners = obj["metadata"].get("annotations", {}).get("owners", "")
    return tuple(NamespacedName("team-a", name) for name in owners.split(",") if name)


@pytest.mark.parametrize(
    ("event_type", "old", "new", "expected"),
    [
        ("ADDED", None, sts(owner="quickstart"), [("team-a", "quickstart")]),
        ("DELETED", sts(owner="quickstart"), None, [("team-a", "quickstart")]),
        (
            "MODIFIED",
            sts(owner="quickstart"),
            sts(owner="quickstart", rv="2", replicas=2),
            [("team-a", "quickstart")],
        ),
        ("MODIFIED", sts(owner="quickstart"), sts(owner="quickstart", rv="2"), []),
        (
            "MODIFIED",
            sts(owner="old"),
            sts(owner="new", rv="2"),
            [("team-a", "new"), ("team-a", "old")],
        ),
        ("ADDED", None, sts(owner=None), []),
    ],
    ids=["create", "delete", "status-change", "rv-only", "owner-moved", "no-owner"],
)
def test_child_owners(
    event_type: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    expected: list[tuple[str, str]],
) -> None:
    assert child_owners(event_type, old, new, owner_by_label) == expected


def shared(owners: str, rv: str = "1") -> dict[str, Any]:
    return {
        "kind": "Secret",
        "metadata": {
            "name": "shared",
            "namespace": "team-a",
            "resourceVersion": rv,
            "annotations": {"owners": owners},
        },
    }


@pytest.mark.parametrize(
    ("event_type", "old", "new", "expected"),
    [
        ("ADDED", None, shared("a,b"), [("team-a", "a"), ("team-a", "b")]),
        (
            "MODIFIED",
            shared("a,b"),
            shared("b,c", rv="2"),
            [("team-a", "b"), ("team-a", "c"), ("team-a", "a")],
        ),
        ("DELETED", shared("a,b"), None, [("team-a", "a"), ("team-a", "b")]),
    ],
    ids=["created-for-two", "one-owner-replaced", "deleted"],
)
def test_a_child_of_several_owners_wakes_each_once(
    event_type: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    expected: list[tuple[str, str]],
) -> None:
    assert child_owners(event_type, old, new, two_owners) == expected


def test_child_trigger_names_the_child() -> None:
    trigger = child_trigger("DELETED", sts(owner="quickstart"), None, source="watch StatefulSet")
    assert trigger.reason is TriggerReason.CHILD_CHANGED
    assert trigger.detail == "StatefulSet team-a/quickstart-es-default deleted"


def secret(
    *, data: dict[str, str] | None = None, rv: str = "1", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "Secret",
        "metadata": {
            "name": "creds",
            "namespace": "team-a",
            "resourceVersion": rv,
            "labels": labels or {},
        },
        "data": data or {"password": "czNjcjN0"},
    }


@pytest.mark.parametrize(
    ("event_type", "old", "new", "expected"),
    [
        ("ADDED", None, secret(), TriggerReason.REFERENCE_CHANGED),
        ("DELETED", secret(), None, TriggerReason.REFERENCE_CHANGED),
        (
            "MODIFIED",
            secret(),
            secret(data={"password": "bmV3"}, rv="2"),
            TriggerReason.REFERENCE_CHANGED,
        ),
        ("MODIFIED", secret(), secret(rv="2"), None),
    ],
    ids=["create", "delete", "data-change", "rv-only"],
)
def test_reference_trigger(
    event_type: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    expected: TriggerReason | None,
) -> None:
    trigger = reference_trigger(event_type, old, new, source="watch Secret")
    assert (trigger.reason if trigger else None) == expected


def _labelled(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"namespace": "a", "name": name, "labels": labels}}


def _wants(primary: Mapping[str, Any], obj: Mapping[str, Any], context: SelectionContext) -> bool:
    """A toy selector: the primary's ``want`` label value must be among the object's labels."""
    return view_labels(primary).get("want") in view_labels(obj)


def view_labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


POLICIES = [_labelled("wants-x", {"want": "x"}), _labelled("wants-y", {"want": "y"})]
NO_CONTEXT = SelectionContext(operator_namespace="elastic-system", namespace_labels={})


@pytest.mark.parametrize(
    ("old", "new", "woken"),
    [
        # Created matching one policy: that one takes it on.
        (None, _labelled("es", {"x": "1"}), ["wants-x"]),
        # Relabelled from one selector to another: the old one lets go, the new one takes on.
        (_labelled("es", {"x": "1"}), _labelled("es", {"y": "1"}), ["wants-x", "wants-y"]),
        # Deleted: whoever selected it.
        (_labelled("es", {"y": "1"}), None, ["wants-y"]),
        # Matching nobody, before or after: nobody.
        (_labelled("es", {"z": "1"}), _labelled("es", {"z": "2"}), []),
    ],
    ids=["created", "relabelled", "deleted", "unselected"],
)
def test_a_selected_object_wakes_the_primaries_selecting_it_before_or_after(
    old: dict[str, Any] | None, new: dict[str, Any] | None, woken: list[str]
) -> None:
    chosen = selecting(old, new, POLICIES, _wants, NO_CONTEXT)
    assert [primary["metadata"]["name"] for primary in chosen] == woken


OPERATOR = {"license.k8s.elastic.co/scope": "operator"}


@pytest.mark.parametrize(
    ("event_type", "old", "new", "expected"),
    [
        ("ADDED", None, secret(labels=OPERATOR), TriggerReason.LICENSE_CHANGED),
        ("DELETED", secret(labels=OPERATOR), None, TriggerReason.LICENSE_CHANGED),
        (
            "MODIFIED",
            secret(labels=OPERATOR),
            secret(labels=OPERATOR, data={"license": "e30="}, rv="2"),
            TriggerReason.LICENSE_CHANGED,
        ),
        # Losing the label is the license going away.
        ("MODIFIED", secret(labels=OPERATOR), secret(rv="2"), TriggerReason.LICENSE_CHANGED),
        ("MODIFIED", secret(labels=OPERATOR), secret(labels=OPERATOR, rv="2"), None),
        ("ADDED", None, secret(), None),
        ("ADDED", None, secret(labels={"license.k8s.elastic.co/scope": "elasticsearch"}), None),
    ],
    ids=[
        "added",
        "removed",
        "replaced",
        "label-dropped",
        "rv-only",
        "plain-secret",
        "cluster-license",
    ],
)
def test_license_trigger(
    event_type: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    expected: TriggerReason | None,
) -> None:
    trigger = license_trigger(event_type, old, new, source="watch license Secret")
    assert (trigger.reason if trigger else None) == expected


def test_is_operator_license() -> None:
    assert is_operator_license(secret(labels=OPERATOR))
    assert not is_operator_license(secret())
    assert not is_operator_license(None)


def secret_key(name: str, namespace: str = "team-a") -> ObjectKey:
    return ObjectKey(kind="Secret", namespace=namespace, name=name)


def test_reference_index_follows_the_latest_spec() -> None:
    index = ReferenceIndex()
    index.set_references(
        controller="elasticsearch",
        namespace="team-a",
        name="one",
        references=[secret_key("s1"), secret_key("s2")],
    )
    index.set_references(
        controller="elasticsearch", namespace="team-a", name="two", references=[secret_key("s1")]
    )
    assert index.referrers(group="", kind="Secret", namespace="team-a", name="s1") == [
        ("elasticsearch", "team-a", "one"),
        ("elasticsearch", "team-a", "two"),
    ]
    # "one" stops referencing s1: only s2 is left for it.
    index.set_references(
        controller="elasticsearch", namespace="team-a", name="one", references=[secret_key("s2")]
    )
    assert index.referrers(group="", kind="Secret", namespace="team-a", name="s1") == [
        ("elasticsearch", "team-a", "two")
    ]
    index.remove(controller="elasticsearch", namespace="team-a", name="two")
    assert index.referrers(group="", kind="Secret", namespace="team-a", name="s1") == []
    assert index.references_of(controller="elasticsearch", namespace="team-a", name="one") == [
        ("", "Secret", "team-a", "s2")
    ]
    assert len(index) == 1
