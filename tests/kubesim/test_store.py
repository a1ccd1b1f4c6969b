"""Behaviour of kubesim's object store, driven by direct Python calls (reference §3, §4, §6, §7)."""

from __future__ import annotations

import copy
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kubesim import meta
from kubesim.resources import Registry
from kubesim.selectors import LabelSelector
from kubesim.store import Store
from kubesim.watch import Watch
from tests.kubesim.store_sim import Sim, crd_body, raises


def drain(watch: Watch) -> list[tuple[str, dict[str, Any] | None]]:
    """Everything queued so far as (type, object); a sentinel appears as ("END", None)."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    while not watch.queue.empty():
        item = watch.queue.get_nowait()
        out.append(("END", None) if item is None else (item["type"], item["object"]))
    return out


# ------------------------------------------------------------ resourceVersion & basic verbs


def test_bootstrap_namespaces_and_global_resource_version() -> None:
    sim = Sim()
    items, rv = sim.store.list(sim.ns, None)
    assert [i["metadata"]["name"] for i in items] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
    assert rv == 4
    for item in items:
        assert item["metadata"]["labels"]["kubernetes.io/metadata.name"] == item["metadata"]["name"]
        assert item["spec"]["finalizers"] == ["kubernetes"]
        assert item["status"]["phase"] == "Active"
    created = sim.make_cm()
    assert created["metadata"]["resourceVersion"] == "5"
    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")
    listed, list_rv = sim.store.list(sim.cm, "default")
    assert list_rv == 5
    assert "kind" not in listed[0]


def test_create_sets_server_fields_and_returns_copies() -> None:
    sim = Sim()
    body = {
        "metadata": {"name": "c", "uid": "mine", "generation": 9, "deletionTimestamp": "x"},
        "data": {},
    }
    created = sim.store.create(sim.cm, body, namespace="default")
    m = created["metadata"]
    assert m["uid"] != "mine"
    assert len(m["uid"]) == 36
    assert m["namespace"] == "default"
    # ConfigMaps track no generation: the real server keeps what the client sent.
    assert m["generation"] == 9
    assert "deletionTimestamp" not in m
    assert m["creationTimestamp"].endswith("Z")
    assert len(m["creationTimestamp"]) == 20
    created["data"]["x"] = "mutated"
    assert sim.store.get(sim.cm, "default", "c")["data"] == {}


@pytest.mark.parametrize(
    ("body", "namespace", "code", "message"),
    [
        (
            {"metadata": {"name": "c", "resourceVersion": "3"}},
            "default",
            500,
            "resourceVersion should not be set on objects to be created",
        ),
        (
            {"metadata": {"name": "c", "namespace": "other"}},
            "default",
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            {"metadata": {}},
            "default",
            422,
            'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
        ),
        (
            {"metadata": {"name": "Bad_Name"}},
            "default",
            422,
            'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
        ),
        ({"metadata": {"name": "c"}}, "nope", 404, 'namespaces "nope" not found'),
    ],
)
def test_create_rejections(body: dict[str, Any], namespace: str, code: int, message: str) -> None:
    sim = Sim()
    err = raises(code, sim.store.create, sim.cm, body, namespace=namespace)
    assert err.message.startswith(message)
    assert sim.store.resource_version == 4


def test_duplicate_create_is_already_exists() -> None:
    sim = Sim()
    sim.make_cm("x")
    err = raises(409, sim.make_cm, "x")
    assert (err.reason, err.message) == ("AlreadyExists", 'configmaps "x" already exists')


@pytest.mark.parametrize(("name", "valid"), [("a.b", False), ("ab-1", True), ("x" * 64, False)])
def test_namespace_names_are_dns_labels(name: str, valid: bool) -> None:
    sim = Sim()
    if valid:
        assert sim.store.create(sim.ns, {"metadata": {"name": name}}, namespace=None)
    else:
        err = raises(422, sim.store.create, sim.ns, {"metadata": {"name": name}}, namespace=None)
        assert err.causes[0].field == "metadata.name"


def test_generate_name() -> None:
    sim = Sim()
    prefix = "p" * 70
    created = sim.store.create(sim.cm, {"metadata": {"generateName": prefix}}, namespace="default")
    name = created["metadata"]["name"]
    assert name[:58] == prefix[:58]
    assert len(name) == 63
    assert set(name[58:]) <= set(meta.GENERATE_NAME_ALPHABET)


def test_generate_name_gives_up_after_collisions(monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Sim()
    sim.make_cm("fixed")
    monkeypatch.setattr("kubesim.store.generate_name", lambda prefix: "fixed")
    err = raises(
        409, sim.store.create, sim.cm, {"metadata": {"generateName": "f"}}, namespace="default"
    )
    assert err.message == (
        'configmaps "fixed" already exists, the server was not able to generate a unique name for the object'
    )


def test_dry_run_persists_nothing() -> None:
    sim = Sim()
    result = sim.store.create(
        sim.cm, {"metadata": {"name": "c"}}, namespace="default", dry_run=True
    )
    assert result["metadata"]["name"] == "c"
    assert sim.store.resource_version == 4
    assert not sim.events
    raises(404, sim.store.get, sim.cm, "default", "c")


# -------------------------------------------------------------------------- update rules


def test_update_keeps_server_fields_and_bumps_rv() -> None:
    sim = Sim()
    old = sim.make_cm()
    body = {
        "metadata": {"name": "c", "resourceVersion": old["metadata"]["resourceVersion"]},
        "data": {"b": "2"},
    }
    new = sim.store.update(sim.cm, body, namespace="default", name="c")
    for kept in ("uid", "creationTimestamp"):
        assert new["metadata"][kept] == old["metadata"][kept]
    assert int(new["metadata"]["resourceVersion"]) == int(old["metadata"]["resourceVersion"]) + 1
    assert new["data"] == {"b": "2"}
    assert [e.type for e in sim.events] == ["ADDED", "MODIFIED"]


def test_noop_update_keeps_rv_and_sends_no_event() -> None:
    sim = Sim()
    old = sim.make_cm()
    same = sim.store.update(sim.cm, copy.deepcopy(old), namespace="default", name="c")
    assert same == old
    assert sim.store.resource_version == int(old["metadata"]["resourceVersion"])
    assert [e.type for e in sim.events] == ["ADDED"]


@pytest.mark.parametrize(
    ("body_meta", "code", "message"),
    [
        (
            {"name": "c", "resourceVersion": "1"},
            409,
            'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again',
        ),
        (
            {"name": "other"},
            400,
            "the name of the object (other) does not match the name on the URL (c)",
        ),
        (
            # As the real server: another uid fails the storage's uid precondition.
            {"name": "c", "uid": "changed"},
            409,
            'Operation cannot be fulfilled on configmaps "c": StorageError: invalid object, '
            "Code: 4, Key: /registry/configmaps/default/c, ResourceVersion: 0, "
            "AdditionalErrorMsg: Precondition failed: UID in precondition: changed, "
            "UID in object meta: {uid}",
        ),
        (
            {"name": "c", "deletionTimestamp": "2020-01-01T00:00:00Z"},
            422,
            'ConfigMap "c" is invalid: metadata.deletionTimestamp: Invalid value: "2020-01-01T00:00:00Z": field is immutable',
        ),
    ],
)
def test_update_rejections(body_meta: dict[str, Any], code: int, message: str) -> None:
    sim = Sim()
    created = sim.make_cm()
    err = raises(
        code, sim.store.update, sim.cm, {"metadata": body_meta}, namespace="default", name="c"
    )
    assert err.message == message.replace("{uid}", created["metadata"]["uid"])


def test_builtin_update_without_rv_is_unconditional_but_cr_needs_one() -> None:
    sim = Sim()
    sim.make_cm()
    sim.store.update(sim.cm, {"metadata": {"name": "c"}, "data": {}}, namespace="default", name="c")
    widgets = sim.widgets()
    sim.store.create(widgets, {"metadata": {"name": "w"}, "spec": {}}, namespace="default")
    err = raises(
        422,
        sim.store.update,
        widgets,
        {"metadata": {"name": "w"}, "spec": {"a": 1}},
        namespace="default",
        name="w",
    )
    assert (
        err.message
        == 'widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update'
    )
    assert err.details == {"name": "w", "group": "example.com", "kind": "widgets"}


def test_update_of_missing_object_is_not_found() -> None:
    sim = Sim()
    raises(
        404, sim.store.update, sim.cm, {"metadata": {"name": "c"}}, namespace="default", name="c"
    )


def _change(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node = out
    *parents, last = path.split(".")
    for step in parents:
        node = node.setdefault(step, {})
    node[last] = value
    return out


@pytest.mark.parametrize(
    ("kind", "path", "value", "subresource", "generation"),
    [
        ("deployments", "spec.replicas", 3, None, 2),
        ("deployments", "metadata.annotations", {"a": "b"}, None, 2),
        ("deployments", "metadata.labels", {"a": "b"}, None, 1),
        ("deployments", "status", {"replicas": 1}, "status", 1),
        ("statefulsets", "metadata.annotations", {"a": "b"}, None, 1),
        ("statefulsets", "spec.replicas", 2, None, 2),
        ("widgets", "spec.size", 2, None, 2),
        ("widgets", "metadata.labels", {"a": "b"}, None, 1),
        ("widgets", "status", {"ready": True}, None, 1),  # status kept from old: no change at all
        ("widgets", "status", {"ready": True}, "status", 1),
        ("widgets", "undeclared", {"x": 1}, None, 1),  # pruned by the structural schema
    ],
)
def test_generation_rules(
    kind: str, path: str, value: Any, subresource: str | None, generation: int
) -> None:
    sim = Sim()
    rt = sim.widgets() if kind == "widgets" else sim.rt("apps", kind)
    body = {"metadata": {"name": "o"}, "spec": {"replicas": 1}, "status": {"ignored": True}}
    created = sim.store.create(rt, body, namespace="default")
    assert created["metadata"]["generation"] == 1
    # Status subresource: create drops the client's status (built-ins get their initial one).
    assert "ignored" not in (created.get("status") or {})
    updated = sim.store.update(
        rt, _change(created, path, value), namespace="default", name="o", subresource=subresource
    )
    assert updated["metadata"]["generation"] == generation
    if subresource == "status":
        assert updated["status"] == value
        assert updated["spec"] == created["spec"]


def test_cr_without_status_subresource_versions_status_as_data() -> None:
    sim = Sim()
    sim.store.create(sim.crd, crd_body(status_subresource=False), namespace=None)
    widgets = sim.rt("example.com", "widgets")
    created = sim.store.create(
        widgets, {"metadata": {"name": "w"}, "status": {"a": 1}}, namespace="default"
    )
    assert created["status"] == {"a": 1}
    updated = sim.store.update(
        widgets, _change(created, "status", {"a": 2}), namespace="default", name="w"
    )
    assert updated["metadata"]["generation"] == 2


@pytest.mark.parametrize(
    ("refs", "ok"),
    [
        ([{"apiVersion": "v1", "kind": "K", "name": "a", "uid": "1", "controller": True}], True),
        (
            [
                {"apiVersion": "v1", "kind": "K", "name": "a", "uid": "1", "controller": True},
                {"apiVersion": "v1", "kind": "K", "name": "b", "uid": "2", "controller": True},
            ],
            False,
        ),
        ([{"apiVersion": "v1", "kind": "K", "name": "a"}], False),
    ],
)
def test_owner_references_validation(refs: list[dict[str, Any]], ok: bool) -> None:
    sim = Sim()
    if ok:
        assert sim.make_cm(ownerReferences=refs)["metadata"]["ownerReferences"] == refs
    else:
        err = raises(422, sim.make_cm, ownerReferences=refs)
        assert err.causes
        assert all(c.field.startswith("metadata.ownerReferences") for c in err.causes)


# ------------------------------------------------------------------- delete & finalizers


def test_delete_with_finalizer_marks_then_last_finalizer_removal_deletes() -> None:
    sim = Sim()
    widgets = sim.widgets()
    sim.store.create(
        widgets,
        {"metadata": {"name": "w", "finalizers": ["example.com/cleanup"]}, "spec": {}},
        namespace="default",
    )
    watch = sim.store.watch(widgets, "default", since_rv=sim.store.resource_version)
    kept = sim.store.delete(widgets, "default", "w")
    assert kept is not None
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["generation"] == 2
    again = sim.store.delete(widgets, "default", "w")  # already deleting: unchanged
    assert again == kept

    added = _change(kept, "metadata.finalizers", ["example.com/cleanup", "x"])
    err = raises(422, sim.store.update, widgets, added, namespace="default", name="w")
    assert err.message == (
        'Widget.example.com "w" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        'added if the object is being deleted, found new finalizers []string{"x"}'
    )
    final = sim.store.update(
        widgets, _change(kept, "metadata.finalizers", []), namespace="default", name="w"
    )
    raises(404, sim.store.get, widgets, "default", "w")
    events = drain(watch)
    assert [t for t, _ in events] == ["MODIFIED", "DELETED"]
    deleted = events[1][1]
    assert deleted is not None
    assert deleted["metadata"]["resourceVersion"] == str(sim.store.resource_version)
    assert final["metadata"]["resourceVersion"] == deleted["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("existing", "propagation", "finalizers"),
    [
        ([], None, None),
        ([], "Background", None),
        ([], "Foreground", ["foregroundDeletion"]),
        ([], "Orphan", ["orphan"]),
        (["orphan"], None, ["orphan"]),
        (["orphan"], "Foreground", ["foregroundDeletion"]),
        (["orphan"], "Background", None),
        (["keep", "foregroundDeletion"], None, ["keep", "foregroundDeletion"]),
    ],
)
def test_delete_propagation(
    existing: list[str], propagation: str | None, finalizers: list[str] | None
) -> None:
    sim = Sim()
    sim.make_cm(finalizers=existing)
    result = sim.store.delete(sim.cm, "default", "c", propagation=propagation)
    if finalizers is None:
        assert result is None
        raises(404, sim.store.get, sim.cm, "default", "c")
    else:
        assert result is not None
        assert result["metadata"]["finalizers"] == finalizers
        assert result["metadata"]["deletionTimestamp"]
        assert "generation" not in result["metadata"]


def test_delete_preconditions() -> None:
    sim = Sim()
    created = sim.make_cm()
    err = raises(409, sim.store.delete, sim.cm, "default", "c", preconditions={"uid": "other"})
    # The storage layer names the Kind, as the real server does.
    assert err.message == (
        'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (other) does '
        f"not match the UID in record ({created['metadata']['uid']}). The object might have been "
        "deleted and then recreated"
    )
    assert err.details == {"name": "c", "kind": "ConfigMap"}
    stale = raises(
        409, sim.store.delete, sim.cm, "default", "c", preconditions={"resourceVersion": "1"}
    )
    assert stale.message == (
        'Operation cannot be fulfilled on ConfigMap "c": the ResourceVersion in the precondition '
        f"(1) does not match the ResourceVersion in record ({created['metadata']['resourceVersion']})"
        ". The object might have been modified"
    )
    assert (
        sim.store.delete(sim.cm, "default", "c", preconditions={"uid": created["metadata"]["uid"]})
        is None
    )


def test_kinds_that_return_deleted_objects() -> None:
    sim = Sim()
    pods = sim.rt("", "pods")
    sim.store.create(pods, {"metadata": {"name": "p"}, "spec": {}}, namespace="default")
    deleted = sim.store.delete(pods, "default", "p")
    assert deleted is not None
    assert deleted["kind"] == "Pod"
    raises(404, sim.store.delete, pods, "default", "p")


def test_deleted_event_reaches_listeners_with_old_state() -> None:
    sim = Sim()
    sim.make_cm()
    sim.store.delete(sim.cm, "default", "c")
    last = sim.events[-1]
    assert last.type == "DELETED"
    assert last.rt == sim.cm
    assert last.old is not None
    assert last.obj["metadata"]["resourceVersion"] == str(sim.store.resource_version)


# ---------------------------------------------------------------------------- namespaces


def test_namespace_lifecycle() -> None:
    sim = Sim()
    sim.store.create(sim.ns, {"metadata": {"name": "t1", "labels": {"team": "a"}}}, namespace=None)
    sim.store.create(sim.cm, {"metadata": {"name": "c"}}, namespace="t1")
    marked = sim.store.delete(sim.ns, None, "t1")
    assert marked is not None
    assert marked["status"]["phase"] == "Terminating"
    assert marked["metadata"]["deletionTimestamp"]
    # A repeated delete while the namespace is emptied answers it as it is (as the real server).
    again = sim.store.delete(sim.ns, None, "t1")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]

    err = raises(403, sim.store.create, sim.cm, {"metadata": {"name": "d"}}, namespace="t1")
    assert (
        err.message
        == 'configmaps "d" is forbidden: unable to create new content in namespace t1 because it is being terminated'
    )
    assert [c.to_dict() for c in err.causes] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace t1 is being terminated",
            "field": "metadata.namespace",
        }
    ]
    # Updates and deletes inside a terminating namespace stay allowed.
    sim.store.update(
        sim.cm, {"metadata": {"name": "c"}, "data": {"a": "b"}}, namespace="t1", name="c"
    )
    sim.store.delete(sim.cm, "t1", "c")
    assert sim.store.finalize_namespace("t1") is None
    raises(404, sim.store.get, sim.ns, None, "t1")
    assert sim.events[-1].type == "DELETED"


def test_finalize_waits_for_metadata_finalizers() -> None:
    sim = Sim()
    sim.store.create(sim.ns, {"metadata": {"name": "t2", "finalizers": ["x/y"]}}, namespace=None)
    sim.store.delete(sim.ns, None, "t2")
    kept = sim.store.finalize_namespace("t2")
    assert kept is not None
    assert "finalizers" not in kept["spec"]  # an empty list is left out (omitempty)
    final = sim.store.update(
        sim.ns, _change(kept, "metadata.finalizers", []), namespace=None, name="t2"
    )
    assert final["status"]["phase"] == "Terminating"
    raises(404, sim.store.get, sim.ns, None, "t2")


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_immortal_namespaces(name: str) -> None:
    sim = Sim()
    err = raises(403, sim.store.delete, sim.ns, None, name)
    assert err.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'


def test_namespace_update_keeps_name_label_and_spec_finalizers() -> None:
    sim = Sim()
    current = sim.store.get(sim.ns, None, "default")
    body = _change(current, "metadata.labels", {"team": "x"})
    body["spec"] = {"finalizers": []}
    updated = sim.store.update(sim.ns, body, namespace=None, name="default")
    assert updated["metadata"]["labels"] == {"team": "x", "kubernetes.io/metadata.name": "default"}
    assert updated["spec"]["finalizers"] == ["kubernetes"]


# -------------------------------------------------------------------------------- watches


def test_watch_initial_snapshot_and_live_events() -> None:
    sim = Sim()
    sim.make_cm("a")
    watch = sim.store.watch(sim.cm, "default", since_rv=None)
    assert watch.start_rv == sim.store.resource_version
    sim.make_cm("b")
    sim.store.create(sim.cm, {"metadata": {"name": "other-ns"}}, namespace="kube-system")
    events = drain(watch)
    assert [(t, o["metadata"]["name"]) for t, o in events if o] == [("ADDED", "a"), ("ADDED", "b")]
    assert all(o and o["kind"] == "ConfigMap" for _, o in events)
    watch.close()
    sim.make_cm("c")
    assert drain(watch) == [("END", None)]


def test_watch_replays_history_after_rv() -> None:
    sim = Sim()
    start = sim.store.resource_version
    created = sim.make_cm()
    sim.store.update(sim.cm, _change(created, "data", {"x": "y"}), namespace="default", name="c")
    sim.store.delete(sim.cm, "default", "c")
    watch = sim.store.watch(sim.cm, None, since_rv=start)
    events = drain(watch)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in events if o]
    assert rvs == sorted(rvs)
    assert rvs[-1] == sim.store.resource_version


def test_watch_from_expired_rv_is_410() -> None:
    sim = Sim(history_window=3)
    for name in ("a", "b", "c", "d"):
        sim.make_cm(name)
    # RVs 1..8 written, the last 3 (6, 7, 8) retained: watching from 5 still works.
    sim.store.watch(sim.cm, None, since_rv=5)
    err = raises(410, sim.store.watch, sim.cm, None, since_rv=2)
    assert (err.reason, err.message) == ("Expired", "too old resource version: 2 (5)")


def test_watch_from_a_future_rv_waits_for_it() -> None:
    # As the real server: no error, the changes after the requested RV are delivered.
    sim = Sim()
    ahead = sim.store.resource_version + 2
    watch = sim.store.watch(sim.cm, None, since_rv=ahead)
    for name in ("a", "b", "c"):
        sim.make_cm(name)
    events = watch.take_ready()
    assert [e["object"]["metadata"]["name"] for e in events if e is not None] == ["c"]


def test_watch_does_not_replay_the_default_namespaces() -> None:
    # A real server's watch cache starts after its bootstrap: RV 1 is too old.
    sim = Sim()
    err = raises(410, sim.store.watch, sim.ns, None, since_rv=1)
    assert err.reason == "Expired"


def test_watch_selector_transitions() -> None:
    sim = Sim()
    created = sim.make_cm(labels={"app": "a"})
    watch = sim.store.watch(
        sim.cm, "default", since_rv=None, label_selector=LabelSelector.parse("app=a")
    )
    relabelled = sim.store.update(
        sim.cm, _change(created, "metadata.labels", {"app": "b"}), namespace="default", name="c"
    )
    back = sim.store.update(
        sim.cm, _change(relabelled, "metadata.labels", {"app": "a"}), namespace="default", name="c"
    )
    sim.store.update(sim.cm, _change(back, "data", {"z": "1"}), namespace="default", name="c")
    events = drain(watch)
    assert [t for t, _ in events] == ["ADDED", "DELETED", "ADDED", "MODIFIED"]
    gone = events[1][1]
    assert gone is not None
    assert gone["metadata"]["labels"] == {"app": "a"}  # last matching state …
    assert (
        gone["metadata"]["resourceVersion"] == relabelled["metadata"]["resourceVersion"]
    )  # … new RV


def test_bookmark() -> None:
    sim = Sim()
    event = sim.store.bookmark(sim.cm, initial_events_end=True)
    assert event == {
        "type": "BOOKMARK",
        "object": {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {
                "resourceVersion": "4",
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        },
    }


# ------------------------------------------------------------------------------------ CRDs


def test_crd_establishing_and_terminating() -> None:
    sim = Sim()
    widgets = sim.widgets()
    crd = sim.store.get(sim.crd, None, "widgets.example.com")
    conditions = {c["type"]: (c["status"], c["reason"]) for c in crd["status"]["conditions"]}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
    }
    assert crd["status"]["acceptedNames"]["singular"] == "widget"
    assert crd["status"]["storedVersions"] == ["v1"]
    sim.store.create(widgets, {"metadata": {"name": "w"}, "spec": {}}, namespace="default")
    watch = sim.store.watch(widgets, None, since_rv=None)

    marked = sim.store.delete(sim.crd, None, "widgets.example.com")
    assert marked is not None
    assert marked["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert any(
        c["type"] == "Terminating" and c["status"] == "True" for c in marked["status"]["conditions"]
    )
    err = raises(403, sim.store.create, widgets, {"metadata": {"name": "x"}}, namespace="default")
    assert err.message.endswith(
        "create not allowed while custom resource definition is terminating"
    )

    sim.store.delete(widgets, "default", "w")
    sim.store.finish_crd_deletion("widgets.example.com")
    raises(404, sim.store.get, sim.crd, None, "widgets.example.com")
    assert sim.registry.lookup("example.com", "v1", "widgets") is None
    assert [t for t, _ in drain(watch)] == ["ADDED", "DELETED", "END"]


def test_invalid_crd_is_rejected() -> None:
    sim = Sim()
    body = crd_body()
    body["metadata"]["name"] = "wrong.example.com"
    err = raises(422, sim.store.create, sim.crd, body, namespace=None)
    assert any(c.field == "metadata.name" for c in err.causes)


def test_crd_name_clash_is_not_served() -> None:
    sim = Sim()
    sim.widgets()
    clash = crd_body()
    clash["metadata"]["name"] = "gadgets.example.com"
    clash["spec"]["names"] = {"plural": "gadgets", "kind": "Widget"}
    created = sim.store.create(sim.crd, clash, namespace=None)
    # The create answers the CRD before its controllers looked at it, as the real server.
    assert created["status"] == {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": ["v1"],
    }
    stored = sim.store.get(sim.crd, None, "gadgets.example.com")
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "False", "Established": "False"}
    assert sim.registry.lookup("example.com", "v1", "gadgets") is None


# ------------------------------------------------------------------------------ state file


@pytest.mark.parametrize("existing_mode", [None, 0o644], ids=["new", "was-world-readable"])
def test_state_file_is_readable_by_its_owner_only(
    tmp_path: Path, existing_mode: int | None
) -> None:
    """The state file holds every Secret's data: 0600 whatever the umask, also when a file
    (or a leftover temporary file) was there with a wider mode."""
    sim = Sim()
    secrets = sim.rt("", "secrets")
    sim.store.create(
        secrets,
        {"metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}},
        namespace="default",
    )
    state = tmp_path / "state.json"
    if existing_mode is not None:
        for stale in (state, tmp_path / "state.json.tmp"):
            stale.write_text("{}")
            stale.chmod(existing_mode)
    previous = os.umask(0o022)
    try:
        sim.store.save(state)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert "aHVudGVyMg==" in state.read_text()


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    sim = Sim()
    widgets = sim.widgets()
    w = sim.store.create(
        widgets, {"metadata": {"name": "w"}, "spec": {"n": 1}}, namespace="default"
    )
    sim.store.set_last_applied(widgets, "default", "w", "kubectl", {"spec": {"n": 1}})
    state = tmp_path / "state.json"
    sim.store.save(state)

    registry = Registry.builtin()
    restored = Store(registry)
    restored.load(state)
    assert restored.resource_version == sim.store.resource_version
    served = registry.lookup("example.com", "v1", "widgets")
    assert served is not None
    assert restored.get(served, "default", "w") == w
    assert restored.last_applied(served, "default", "w", "kubectl") == {"spec": {"n": 1}}
    raises(410, restored.watch, served, None, since_rv=1)
    configmaps = registry.lookup("", "v1", "configmaps")
    assert configmaps is not None
    after = restored.create(configmaps, {"metadata": {"name": "n"}}, namespace="default")
    assert int(after["metadata"]["resourceVersion"]) == sim.store.resource_version + 1
