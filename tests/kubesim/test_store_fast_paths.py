"""The store's fast paths keep their behaviour: sorted-key index, JSON copies, shared watch events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesim.meta import json_copy
from kubesim.resources import Registry
from kubesim.store import Store
from kubesim.store_index import SortedKeys
from kubesim.watch import event_line

NAMESPACES = ("a", "a-b", "ab", "b", "default")


def store_with_configmaps() -> tuple[Store, Any]:
    """A store holding ConfigMaps x and y in each of NAMESPACES."""
    registry = Registry.builtin()
    store = Store(registry)
    namespaces = registry.lookup("", "v1", "namespaces")
    configmaps = registry.lookup("", "v1", "configmaps")
    for ns in NAMESPACES:
        if ns != "default":
            store.create(namespaces, {"metadata": {"name": ns}}, namespace=None)
        for name in ("y", "x"):
            store.create(configmaps, {"metadata": {"name": name}}, namespace=ns)
    return store, configmaps


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("a", [("a", "x"), ("a", "y")]),
        ("a-b", [("a-b", "x"), ("a-b", "y")]),
        ("ab", [("ab", "x"), ("ab", "y")]),
        ("missing", []),
        (None, [(ns, n) for ns in sorted(NAMESPACES) for n in ("x", "y")]),
    ],
)
def test_list_returns_exactly_the_namespace_in_order(
    namespace: str | None, expected: list[tuple[str, str]]
) -> None:
    store, configmaps = store_with_configmaps()
    items, _ = store.list(configmaps, namespace)
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items] == expected


def test_list_sees_creates_and_deletes_after_a_cached_order() -> None:
    store, configmaps = store_with_configmaps()
    store.list(configmaps, "a")
    store.create(configmaps, {"metadata": {"name": "m"}}, namespace="a")
    store.delete(configmaps, "a", "x")
    items, _ = store.list(configmaps, "a")
    assert [o["metadata"]["name"] for o in items] == ["m", "y"]


@pytest.mark.parametrize(
    ("keys", "namespace", "expected"),
    [
        ([("b", "1"), ("a", "2"), ("a", "1")], "a", [("a", "1"), ("a", "2")]),
        ([("a", "1"), ("a\x00", "1")], "a", [("a", "1")]),
        ([("", "ns1"), ("", "ns0")], None, [("", "ns0"), ("", "ns1")]),
        ([], "a", []),
    ],
)
def test_sorted_keys_slices_one_namespace(
    keys: list[tuple[str, str]], namespace: str | None, expected: list[tuple[str, str]]
) -> None:
    bucket = {key: {} for key in keys}
    assert SortedKeys().in_order(("", "configmaps"), bucket, namespace) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"metadata": {"labels": {"a": "b"}, "finalizers": ["f"]}, "data": {"n": 1, "x": None}},
        [1, 2.5, True, "s", [{"deep": []}]],
        "scalar",
    ],
)
def test_json_copy_is_equal_and_independent(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    if isinstance(value, dict):
        copied["metadata"]["labels"]["a"] = "changed"
        assert value["metadata"]["labels"]["a"] == "b"


async def test_watchers_of_one_change_get_the_same_encoded_line() -> None:
    store, configmaps = store_with_configmaps()
    first = store.watch(configmaps, "a", since_rv=store.resource_version)
    second = store.watch(configmaps, None, since_rv=store.resource_version)
    store.create(configmaps, {"metadata": {"name": "z"}}, namespace="a")
    one, two = first.queue.get_nowait(), second.queue.get_nowait()
    assert one is not None
    assert two is not None
    encoded = event_line(one, lambda body: json.dumps(body).encode())
    assert (
        encoded == event_line(two, lambda body: b"never called") == json.dumps(one).encode() + b"\n"
    )
    assert json.loads(encoded)["object"]["metadata"]["name"] == "z"
