"""The patch engines behind PATCH (reference §4.6): JSON patch, merge patch, strategic merge
patch and server-side apply."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.patch import (
    ListStrategy,
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_server_side,
    apply_strategic_merge_patch,
)

# --- JSON patch (RFC 6902) --------------------------------------------------------------------

_DOC: dict[str, Any] = {"metadata": {"name": "x", "a/b": 1, "m~n": 2}, "spec": {"items": [1, 2, 3]}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([], _DOC),
        (None, _DOC),
        (
            [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
            {**_DOC, "metadata": {**_DOC["metadata"], "labels": {"a": "b"}}},
        ),
        (
            [{"op": "add", "path": "/spec/items/-", "value": 4}],
            {**_DOC, "spec": {"items": [1, 2, 3, 4]}},
        ),
        (
            [{"op": "add", "path": "/spec/items/0", "value": 0}],
            {**_DOC, "spec": {"items": [0, 1, 2, 3]}},
        ),
        (
            [{"op": "add", "path": "/spec/items/3", "value": 9}],
            {**_DOC, "spec": {"items": [1, 2, 3, 9]}},
        ),
        ([{"op": "remove", "path": "/spec/items/1"}], {**_DOC, "spec": {"items": [1, 3]}}),
        (
            [
                {"op": "remove", "path": "/metadata/a~1b"},
                {"op": "remove", "path": "/metadata/m~0n"},
            ],
            {**_DOC, "metadata": {"name": "x"}},
        ),
        (
            [{"op": "replace", "path": "/metadata/name", "value": "y"}],
            {**_DOC, "metadata": {**_DOC["metadata"], "name": "y"}},
        ),
        ([{"op": "replace", "path": "", "value": {"z": 1}}], {"z": 1}),
        (
            [{"op": "move", "from": "/metadata/name", "path": "/spec/name"}],
            {
                "metadata": {"a/b": 1, "m~n": 2},
                "spec": {"items": [1, 2, 3], "name": "x"},
            },
        ),
        (
            [{"op": "copy", "from": "/spec/items", "path": "/spec/copy"}],
            {**_DOC, "spec": {"items": [1, 2, 3], "copy": [1, 2, 3]}},
        ),
        (
            [
                {"op": "test", "path": "/spec/items", "value": [1, 2, 3.0]},
                {"op": "test", "path": "/metadata/name", "value": "x"},
                {"op": "replace", "path": "/spec/items/2", "value": 30},
            ],
            {**_DOC, "spec": {"items": [1, 2, 30]}},
        ),
    ],
)
def test_json_patch_applies_operations(ops: Any, expected: Any) -> None:
    original = copy.deepcopy(_DOC)
    assert apply_json_patch(_DOC, ops) == expected
    assert original == _DOC


@pytest.mark.parametrize(
    ("ops", "invalid", "message"),
    [
        (
            {"metadata": {"labels": {"a": "b"}}},
            False,
            "error decoding patch: json: cannot unmarshal object into Go value of type "
            "[]handlers.jsonPatchOp",
        ),
        (
            "x",
            False,
            "error decoding patch: json: cannot unmarshal string into Go value of type "
            "[]handlers.jsonPatchOp",
        ),
        (
            [{"op": "add", "path": "/nope/deeper", "value": 1}],
            True,
            'add operation does not apply: doc is missing path: "/nope/deeper": missing value',
        ),
        (
            [{"op": "remove", "path": "/metadata/missing"}],
            True,
            "error in remove for path: '/metadata/missing': Unable to remove nonexistent key: "
            "missing: missing value",
        ),
        (
            [{"op": "replace", "path": "/metadata/missing", "value": 1}],
            True,
            "replace operation does not apply: doc is missing key: /metadata/missing: missing value",
        ),
        (
            [{"op": "add", "path": "/spec/items/7", "value": 1}],
            True,
            "error in add for path: '/spec/items/7': Unable to access invalid index: 7: "
            "invalid index referenced",
        ),
        (
            [{"op": "test", "path": "/metadata/name", "value": "other"}],
            True,
            "testing value /metadata/name failed: test failed",
        ),
        (
            [{"op": "test", "path": "/metadata/a~1b", "value": True}],
            True,
            "testing value /metadata/a~1b failed: test failed",
        ),
        (
            [{"op": "move", "from": "/nope", "path": "/x"}],
            True,
            "move operation does not apply: doc is missing from path: /nope: missing value",
        ),
        ([{"op": "frob", "path": "/x"}], True, "Unexpected kind: frob"),
    ],
)
def test_json_patch_failures(ops: Any, invalid: bool, message: str) -> None:
    with pytest.raises(PatchError) as caught:
        apply_json_patch(_DOC, ops)
    assert caught.value.invalid is invalid
    assert caught.value.message == message


def test_json_patch_failure_leaves_document_untouched() -> None:
    original = copy.deepcopy(_DOC)
    ops = [
        {"op": "replace", "path": "/metadata/name", "value": "y"},
        {"op": "test", "path": "/metadata/name", "value": "x"},
    ]
    with pytest.raises(PatchError):
        apply_json_patch(_DOC, ops)
    assert original == _DOC


# --- merge patch (RFC 7386) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "patch", "expected"),
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"m": {"x": 1, "y": 2}}, {"m": {"y": None, "z": 3}}, {"m": {"x": 1, "z": 3}}),
        ({"l": [1, 2, 3]}, {"l": [4]}, {"l": [4]}),
        ({"a": "s"}, {"a": {"b": 1}}, {"a": {"b": 1}}),
        ({"a": {"b": 1}}, {"a": "s"}, {"a": "s"}),
        ({}, {"new": {"x": None, "y": 1}}, {"new": {"y": 1}}),
        ({"a": 1}, ["replaced"], ["replaced"]),
        (
            {"metadata": {"labels": {"app": "web", "old": "x"}}},
            {"metadata": {"labels": {"old": None, "tier": "db"}}},
            {"metadata": {"labels": {"app": "web", "tier": "db"}}},
        ),
    ],
)
def test_merge_patch(doc: Any, patch: Any, expected: Any) -> None:
    assert apply_merge_patch(doc, patch) == expected


_JSON_SCALARS = st.one_of(st.booleans(), st.integers(), st.text(max_size=5))
_JSON_NO_NULLS = st.recursive(
    _JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)
_JSON_OBJECTS = st.dictionaries(st.text(max_size=3), _JSON_NO_NULLS, max_size=4)
_JSON_PATCHES = st.recursive(
    st.one_of(st.none(), _JSON_SCALARS),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@given(_JSON_OBJECTS)
def test_merge_patch_of_a_document_with_itself_is_the_document(doc: dict[str, Any]) -> None:
    assert apply_merge_patch(doc, doc) == doc


@given(_JSON_OBJECTS, st.dictionaries(st.text(max_size=3), _JSON_PATCHES, max_size=4))
def test_merge_patch_is_idempotent(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    once = apply_merge_patch(doc, patch)
    assert apply_merge_patch(once, patch) == once


# --- strategic merge patch --------------------------------------------------------------------


def _deployment(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": containers}}},
    }


_KUBECTL_SECOND_APPLY = {
    "spec": {
        "template": {
            "spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "A"}, {"name": "F"}],
                        "env": [{"name": "F", "value": "6"}, {"$patch": "delete", "name": "E"}],
                        "image": "nginx:5",
                        "name": "app",
                    }
                ],
            }
        }
    }
}


@pytest.mark.parametrize(
    ("doc", "patch", "kind", "expected"),
    [
        pytest.param(
            _deployment(
                [
                    {
                        "name": "app",
                        "image": "nginx:4",
                        "env": [{"name": "A", "value": "1"}, {"name": "E", "value": "5"}],
                    },
                    {"name": "side", "image": "busybox"},
                ]
            ),
            _KUBECTL_SECOND_APPLY,
            "Deployment",
            _deployment(
                [
                    {
                        "name": "app",
                        "image": "nginx:5",
                        "env": [{"name": "A", "value": "1"}, {"name": "F", "value": "6"}],
                    },
                    {"name": "side", "image": "busybox"},
                ]
            ),
            id="kubectl-second-apply",
        ),
        pytest.param(
            _deployment([{"name": "a"}, {"name": "b"}]),
            {
                "spec": {
                    "template": {
                        "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}
                    }
                }
            },
            "Deployment",
            _deployment([{"name": "b"}, {"name": "a"}]),
            id="set-element-order-alone-reorders",
        ),
        pytest.param(
            _deployment([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]),
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
                            ]
                        }
                    }
                }
            },
            "Deployment",
            _deployment(
                [{"name": "a", "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}]}]
            ),
            id="container-ports-by-containerPort",
        ),
        pytest.param(
            {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}},
            {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
            "Service",
            {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}},
            id="service-ports-by-port",
        ),
        pytest.param(
            {"spec": {"tolerations": [{"key": "a"}, {"key": "b"}], "containers": []}},
            {"spec": {"tolerations": [{"key": "c"}]}},
            "Pod",
            {"spec": {"tolerations": [{"key": "c"}], "containers": []}},
            id="tolerations-replace",
        ),
        pytest.param(
            _deployment([{"name": "a", "args": ["x", "y"]}]),
            {"spec": {"template": {"spec": {"containers": [{"name": "a", "args": ["z"]}]}}}},
            "Deployment",
            _deployment([{"name": "a", "args": ["z"]}]),
            id="args-replace",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"finalizers": ["c", "a"]}},
            "ConfigMap",
            {"metadata": {"finalizers": ["c", "a", "b"]}},
            id="finalizers-union",
        ),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b", "c"]}},
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}},
            "ConfigMap",
            {"metadata": {"finalizers": ["a", "c"]}},
            id="delete-from-primitive-list",
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2"}]}},
            {"metadata": {"ownerReferences": [{"uid": "1", "controller": True}]}},
            "ReplicaSet",
            {
                "metadata": {
                    "ownerReferences": [{"uid": "1", "name": "a", "controller": True}, {"uid": "2"}]
                }
            },
            id="owner-references-by-uid",
        ),
        pytest.param(
            {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X"}]}},
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            "Pod",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X"}]}},
            id="conditions-by-type",
        ),
        pytest.param(
            {"data": {"a": "1", "b": "2"}},
            {"data": {"$patch": "replace", "c": "3"}},
            "ConfigMap",
            {"data": {"c": "3"}},
            id="map-replace",
        ),
        pytest.param(
            {"data": {"a": "1"}, "other": 1},
            {"data": {"$patch": "delete"}},
            "ConfigMap",
            {"data": {}, "other": 1},
            id="map-delete-leaves-empty-map-like-apimachinery",
        ),
        pytest.param(
            _deployment([{"name": "a"}, {"name": "b"}]),
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}
                }
            },
            "Deployment",
            _deployment([{"name": "c"}]),
            id="list-replace",
        ),
        pytest.param(
            {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
            {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
            "Deployment",
            {"spec": {"strategy": {"type": "Recreate"}}},
            id="retain-keys",
        ),
        pytest.param(
            {"spec": {}},
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "a", "$setElementOrder/env": [{"name": "X"}]},
                                {"$patch": "delete", "name": "gone"},
                            ]
                        }
                    }
                }
            },
            "Deployment",
            {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}},
            id="new-fields-never-store-directives",
        ),
        pytest.param(
            {"metadata": {"labels": {"a": "1", "b": "2"}}},
            {"metadata": {"labels": {"a": None, "c": None}}},
            "ConfigMap",
            {"metadata": {"labels": {"b": "2"}}},
            id="null-deletes",
        ),
    ],
)
def test_strategic_merge_patch(doc: Any, patch: Any, kind: str, expected: Any) -> None:
    original = copy.deepcopy(doc)
    assert apply_strategic_merge_patch(doc, patch, kind=kind) == expected
    assert original == doc


def test_plain_merge_patch_would_lose_the_sidecar_that_strategic_merge_keeps() -> None:
    live = _deployment([{"name": "app", "image": "nginx:4"}, {"name": "side", "image": "busybox"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:5"}]}}}}
    merged = apply_merge_patch(live, patch)["spec"]["template"]["spec"]["containers"]
    strategic = apply_strategic_merge_patch(live, patch, kind="Deployment")
    assert [c["name"] for c in merged] == ["app"]
    assert strategic["spec"]["template"]["spec"]["containers"] == [
        {"name": "app", "image": "nginx:5"},
        {"name": "side", "image": "busybox"},
    ]


@pytest.mark.parametrize(
    ("patch", "invalid", "message"),
    [
        (
            ["x"],
            False,
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}},
            True,
            'map: {"image": "x"} does not contain declared merge key: name',
        ),
        (
            {"data": {"$patch": "explode"}},
            False,
            'Unknown patch type: explode in map: {"$patch": "explode"}',
        ),
    ],
)
def test_strategic_merge_patch_failures(patch: Any, invalid: bool, message: str) -> None:
    live = _deployment([{"name": "a"}]) | {"data": {}}
    with pytest.raises(PatchError) as caught:
        apply_strategic_merge_patch(live, patch, kind="Deployment")
    assert caught.value.invalid is invalid
    assert caught.value.message == message


# --- server-side apply ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("live", "applied", "previous", "expected"),
    [
        pytest.param(
            None,
            {"kind": "ConfigMap", "data": {"a": "1"}},
            None,
            {"kind": "ConfigMap", "data": {"a": "1"}},
            id="create",
        ),
        pytest.param(
            {"kind": "ConfigMap", "metadata": {"uid": "u"}, "data": {"a": "1", "other": "x"}},
            {"kind": "ConfigMap", "data": {"a": "2"}},
            None,
            {"kind": "ConfigMap", "metadata": {"uid": "u"}, "data": {"a": "2", "other": "x"}},
            id="first-apply-keeps-fields-of-others",
        ),
        pytest.param(
            {"kind": "ConfigMap", "data": {"a": "1", "b": "2", "other": "x"}},
            {"kind": "ConfigMap", "data": {"a": "1"}},
            {"kind": "ConfigMap", "data": {"a": "1", "b": "2"}},
            {"kind": "ConfigMap", "data": {"a": "1", "other": "x"}},
            id="dropped-field-is-removed",
        ),
        pytest.param(
            {"kind": "ConfigMap", "data": {"a": "1"}, "binaryData": {"x": "eA=="}},
            {"kind": "ConfigMap", "data": {"a": "1"}},
            {"kind": "ConfigMap", "data": {"a": "1"}, "binaryData": {"x": "eA=="}},
            {"kind": "ConfigMap", "data": {"a": "1"}},
            id="dropped-map-is-removed",
        ),
        pytest.param(
            _deployment(
                [
                    {"name": "app", "image": "v1", "resources": {"limits": {"cpu": "1"}}},
                    {"name": "mine-old", "image": "x"},
                    {"name": "injected", "image": "proxy"},
                ]
            ),
            _deployment([{"name": "app", "image": "v2"}]),
            _deployment([{"name": "app", "image": "v1"}, {"name": "mine-old", "image": "x"}]),
            _deployment(
                [
                    {"name": "app", "image": "v2", "resources": {"limits": {"cpu": "1"}}},
                    {"name": "injected", "image": "proxy"},
                ]
            ),
            id="keyed-list-merges-by-name",
        ),
        pytest.param(
            _deployment([{"name": "app", "args": ["a", "b"]}]),
            _deployment([{"name": "app", "args": ["c"]}]),
            None,
            _deployment([{"name": "app", "args": ["c"]}]),
            id="atomic-list-replaced",
        ),
        pytest.param(
            {"kind": "ConfigMap", "metadata": {"finalizers": ["theirs", "mine", "old"]}},
            {"kind": "ConfigMap", "metadata": {"finalizers": ["mine", "new"]}},
            {"kind": "ConfigMap", "metadata": {"finalizers": ["mine", "old"]}},
            {"kind": "ConfigMap", "metadata": {"finalizers": ["theirs", "mine", "new"]}},
            id="finalizers-set",
        ),
        pytest.param(
            {"kind": "ConfigMap", "data": {"a": "1", "b": "2"}},
            {"kind": "ConfigMap", "data": {"a": None}},
            None,
            {"kind": "ConfigMap", "data": {"b": "2"}},
            id="null-removes",
        ),
    ],
)
def test_server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    previous: dict[str, Any] | None,
    expected: dict[str, Any],
) -> None:
    before = copy.deepcopy(live)
    assert apply_server_side(live, applied, previous=previous) == expected
    assert live == before


def test_server_side_apply_honours_schema_list_keys() -> None:
    live = {"kind": "Widget", "spec": {"items": [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]}}
    applied = {"kind": "Widget", "spec": {"items": [{"id": 1, "v": "z"}]}}

    def keyed_items(path: tuple[str, ...]) -> ListStrategy | None:
        return ListStrategy(("id",)) if path == ("spec", "items") else None

    atomic = apply_server_side(live, applied, previous=None)
    keyed = apply_server_side(live, applied, previous=None, list_keys=keyed_items)
    assert atomic["spec"]["items"] == [{"id": 1, "v": "z"}]
    assert keyed["spec"]["items"] == [{"id": 1, "v": "z"}, {"id": 2, "v": "b"}]


def test_server_side_apply_takes_the_kind_for_list_keys_when_type_meta_is_stripped() -> None:
    live = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    applied = {"spec": {"ports": [{"port": 80, "name": "web"}]}}
    merged = apply_server_side(live, applied, previous=None, kind="Service")
    assert merged["spec"]["ports"] == [{"port": 80, "name": "web"}, {"port": 443, "name": "https"}]
    assert apply_server_side(live, applied, previous=None)["spec"]["ports"] == [
        {"port": 80, "name": "web"}
    ]
