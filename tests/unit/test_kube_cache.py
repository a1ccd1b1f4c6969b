"""The informer cache: indexes stay consistent; a relist diff loses and duplicates nothing."""

from __future__ import annotations

from typing import Any

import pytest

from stackflow.kube.cache import NamespaceView, ObjectCache, relist_events
from stackflow.scope import NamespaceMatcher, ScopeConfig, label_selector_from_data


def _obj(
    namespace: str,
    name: str,
    *,
    rv: str = "1",
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    owners: tuple[str, ...] = (),
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "resourceVersion": rv,
        "uid": uid or f"uid-{namespace}-{name}",
        "labels": labels or {},
        "ownerReferences": [{"uid": owner, "kind": "X", "name": owner} for owner in owners],
    }
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


def _names(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) for obj in objects]


def test_indexes_follow_upserts_and_removals() -> None:
    cache = ObjectCache()
    cache.upsert(_obj("a", "one", labels={"app": "es"}, owners=("owner-1",)))
    cache.upsert(_obj("b", "two", labels={"app": "es"}, owners=("owner-1", "owner-2")))
    cache.upsert(_obj("a", "three", labels={"app": "kb"}))

    assert _names(cache.list()) == [("a", "one"), ("a", "three"), ("b", "two")]
    assert _names(cache.list(namespace="a")) == [("a", "one"), ("a", "three")]
    assert _names(cache.by_label("app", "es")) == [("a", "one"), ("b", "two")]
    assert _names(cache.by_label("app", "es", namespace="b")) == [("b", "two")]
    assert _names(cache.by_owner("owner-1")) == [("a", "one"), ("b", "two")]
    assert _names(cache.by_owner("owner-2")) == [("b", "two")]
    assert cache.namespaces() == {"a", "b"}

    # Relabel and re-own "one": the old index entries must go.
    cache.upsert(_obj("a", "one", rv="2", labels={"app": "kb"}))
    assert _names(cache.by_label("app", "es")) == [("b", "two")]
    assert _names(cache.by_label("app", "kb")) == [("a", "one"), ("a", "three")]
    assert _names(cache.by_owner("owner-1")) == [("b", "two")]

    removed = cache.remove(namespace="b", name="two")
    assert removed is not None
    assert cache.by_label("app", "es") == []
    assert cache.by_owner("owner-2") == []
    assert cache.namespaces() == {"a"}
    assert cache.remove(namespace="b", name="two") is None
    assert len(cache) == 2


def test_upsert_returns_the_replaced_object() -> None:
    cache = ObjectCache()
    first = _obj("", "cluster-thing", rv="1")

    assert cache.upsert(first) is None
    assert cache.upsert(_obj("", "cluster-thing", rv="2")) is first
    assert cache.get(namespace=None, name="cluster-thing") is not None
    assert ("", "cluster-thing") in cache


@pytest.mark.parametrize(
    ("cached", "listed", "expected"),
    [
        pytest.param([], [], [], id="empty"),
        pytest.param([], [_obj("a", "x")], [("ADDED", None, "1")], id="new-object"),
        pytest.param([_obj("a", "x")], [_obj("a", "x")], [], id="unchanged"),
        pytest.param(
            [_obj("a", "x", rv="1")],
            [_obj("a", "x", rv="5")],
            [("MODIFIED", "1", "5")],
            id="modified",
        ),
        pytest.param([_obj("a", "x")], [], [("DELETED", "1", None)], id="deleted"),
        pytest.param(
            [_obj("a", "x", rv="1", uid="u1")],
            [_obj("a", "x", rv="7", uid="u2")],
            [("DELETED", "1", None), ("ADDED", None, "7")],
            id="recreated-same-name",
        ),
    ],
)
def test_relist_events(
    cached: list[dict[str, Any]],
    listed: list[dict[str, Any]],
    expected: list[tuple[str, str | None, str | None]],
) -> None:
    cache = ObjectCache()
    for obj in cached:
        cache.upsert(obj)

    events = relist_events(cache.snapshot(), listed)

    def rv(obj: dict[str, Any] | None) -> str | None:
        return None if obj is None else str(obj["metadata"]["resourceVersion"])

    assert [(kind, rv(old), rv(new)) for kind, old, new in events] == expected


def test_applying_relist_events_reaches_the_listed_state() -> None:
    cache = ObjectCache()
    for obj in [_obj("a", "keep"), _obj("a", "change"), _obj("b", "drop")]:
        cache.upsert(obj)
    listed = [_obj("a", "keep"), _obj("a", "change", rv="9"), _obj("c", "new")]

    for _kind, old, new in relist_events(cache.snapshot(), listed):
        if new is not None:
            cache.upsert(new)
        elif old is not None:
            cache.remove(namespace=old["metadata"].get("namespace"), name=old["metadata"]["name"])

    assert cache.list() == sorted(
        listed, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])
    )


def test_namespace_view_is_a_namespace_source_for_the_matcher() -> None:
    cache = ObjectCache()
    cache.upsert(_obj("", "team-a", labels={"eck": "on"}))
    cache.upsert(_obj("", "team-b"))
    view = NamespaceView(cache)
    matcher = NamespaceMatcher(
        ScopeConfig(
            operator_namespace="elastic-system",
            namespace_selector=label_selector_from_data({"matchLabels": {"eck": "on"}}),
        ),
        source=view,
    )

    assert view.namespace_labels("team-a") == {"eck": "on"}
    assert view.namespace_labels("missing") is None
    assert list(view.namespace_names()) == ["team-a", "team-b"]
    assert matcher.name_matches("team-a")
    assert not matcher.name_matches("team-b")

    cache.upsert(_obj("", "team-b", rv="2", labels={"eck": "on"}))
    assert matcher.name_matches("team-b")
