"""The decoding of API server answers: the fast stdlib path, the depth-capped fallback, and the
per-object verdict that quarantines a poison object while keeping the others."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stackflow.kube import decoding, errors
from stackflow.kube.decoding import (
    DOCUMENT_DEPTH_CAP,
    MAX_OBJECT_DEPTH,
    TOO_DEEP_PLACEHOLDER,
    DocumentError,
    Quarantined,
    cap_nesting,
    may_nest_deeper,
    object_problem,
    too_deep_path,
)
from stackflow.kube.resources import _lines, _watch_event
from stackflow.stack.spec_shapes import MAX_SPEC_DEPTH

PLACEHOLDER = json.dumps(TOO_DEEP_PLACEHOLDER)


def nested_json(depth: int, leaf: str = "1") -> str:
    """A JSON value nested ``depth`` objects deep (written out: json.dumps would recurse)."""
    return '{"a":' * depth + leaf + "}" * depth


def elasticsearch_json(name: str, config: str) -> str:
    metadata = json.dumps({"name": name, "namespace": "ns", "resourceVersion": "7"})
    return (
        '{"metadata":'
        + metadata
        + ',"spec":{"nodeSets":[{"name":"default","config":'
        + config
        + "}]}}"
    )


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def named(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", "namespace": "ns"}, **fields}


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (named(spec={"a": 1}), None),
        (named(spec={"config": nested(MAX_OBJECT_DEPTH - 2)}), None),  # exactly the limit
        (
            named(spec={"config": nested(MAX_OBJECT_DEPTH - 1)}),
            f"spec.config.a.a: nested more than {MAX_OBJECT_DEPTH} levels deep",
        ),
        (
            named(spec={"nodeSets": [{"config": nested(500)}]}),
            f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep",
        ),
        (["a"], "the object is a JSON array, not an object"),
        (None, "the object is a JSON null, not an object"),
        ({"metadata": "x"}, "metadata: must be an object, not a JSON string"),
        ({"metadata": {}}, "metadata.name: Required value"),
        ({"metadata": {"name": 3}}, "metadata.name: Required value"),
        (
            {"metadata": {"name": "x", "namespace": ["a"]}},
            "metadata.namespace: must be a string, not a JSON array",
        ),
        (
            {"metadata": {"name": "x", "resourceVersion": 5}},
            "metadata.resourceVersion: must be a string, not a JSON number",
        ),
    ],
)
def test_object_problem(obj: object, problem: str | None) -> None:
    assert object_problem(obj) == problem


@pytest.mark.parametrize(
    ("value", "limit", "path"),
    [
        ({"a": 1}, 1, None),
        ({"a": {"b": 1}}, 1, "a"),
        ([[[1]]], 2, "[0][0]"),
        ({"spec": {"nodeSets": [{"config": {"x": {"y": {}}}}]}}, 5, "spec.nodeSets[0].config"),
        ({"ok": {"b": 1}, "deep": {"b": {"c": {}}}}, 3, "deep.b.c"),
    ],
)
def test_too_deep_path_names_the_first_segments_of_the_deep_field(
    value: object, limit: int, path: str | None
) -> None:
    assert too_deep_path(value, limit) == path


@pytest.mark.parametrize(
    ("raw", "limit", "may"),
    [
        (b'{"a":{"b":[1]}}', 3, False),
        (b'{"a":{"b":[1]}}', 2, True),
        ('{"a":"{{{{"}', 3, True),  # brackets in strings only add: never a wrong "shallow"
        (nested_json(50).encode(), 100, False),
    ],
)
def test_may_nest_deeper_never_says_shallow_for_a_deep_document(
    raw: bytes | str, limit: int, may: bool
) -> None:
    assert may_nest_deeper(raw, limit) is may


@pytest.mark.parametrize(
    ("text", "cap", "capped"),
    [
        ('{"a":1}', 1, '{"a":1}'),
        ('{"a":{"b":1}}', 1, '{"a":' + PLACEHOLDER + "}"),
        ("[[1],[2,[3]]]", 2, "[[1],[2," + PLACEHOLDER + "]]"),
        ('{"a":"}{[]","b":{"c":"]"}}', 1, '{"a":"}{[]","b":' + PLACEHOLDER + "}"),
        ('{"a":"\\"{","b":[]}', 1, '{"a":"\\"{","b":' + PLACEHOLDER + "}"),
    ],
)
def test_cap_nesting_replaces_only_what_is_deeper_than_the_cap(
    text: str, cap: int, capped: str
) -> None:
    assert cap_nesting(text, cap) == capped
    json.loads(capped)


def test_loads_takes_the_fast_path_for_an_ordinary_document() -> None:
    assert decoding.loads(b'{"items":[{"a":1}]}') == {"items": [{"a": 1}]}


def test_loads_recovers_every_other_item_of_a_list_too_deep_for_the_stdlib() -> None:
    raw = (
        '{"kind":"ElasticsearchList","items":['
        + elasticsearch_json("poison", nested_json(5000))
        + ","
        + elasticsearch_json("good", '{"x":1}')
        + "]}"
    ).encode()
    with pytest.raises(RecursionError):
        json.loads(raw)
    items = decoding.loads(raw)["items"]
    assert [item["metadata"]["name"] for item in items] == ["poison", "good"]
    assert object_problem(items[0]) == (
        f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep"
    )
    assert object_problem(items[1]) is None
    assert items[1]["spec"]["nodeSets"][0]["config"] == {"x": 1}
    assert Quarantined.of(items[0], "p").resource_version == "7"


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff", b'{"a":' * 5000])
def test_loads_says_not_json_for_what_is_not_json(raw: bytes) -> None:
    with pytest.raises(DocumentError, match="not JSON"):
        decoding.loads(raw)


def test_the_document_cap_leaves_room_for_the_wrapping_levels() -> None:
    # A list item sits two levels below the list, an AdmissionReview's object three.
    assert DOCUMENT_DEPTH_CAP >= MAX_OBJECT_DEPTH + 4


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"", None),
        (b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}', "BOOKMARK"),
        (b'{"type":"ADDED","object":' + elasticsearch_json("ok", "{}").encode() + b"}", "ADDED"),
    ],
)
def test_watch_event_passes_usable_events_unchanged(line: bytes, expected: str | None) -> None:
    event = _watch_event(line)
    assert (event or {}).get("type") == expected
    assert event is None or decoding.QUARANTINED_KEY not in event


@pytest.mark.parametrize(
    ("line", "name", "problem"),
    [
        (
            b'{"type":"MODIFIED","object":'
            + elasticsearch_json("deep", nested_json(3000)).encode()
            + b"}",
            "deep",
            f"spec.nodeSets[0].config: nested more than {MAX_OBJECT_DEPTH} levels deep",
        ),
        (b'{"type":"ADDED","object":[1]}', "", "the object is a JSON array, not an object"),
        (b"[1]", "", "the watch event is not a JSON object"),
        (b"{nope", "", "the watch event is not JSON"),
    ],
)
def test_watch_event_quarantines_what_cannot_be_used(line: bytes, name: str, problem: str) -> None:
    event = _watch_event(line)
    assert event is not None
    quarantined = Quarantined.from_dict(event[decoding.QUARANTINED_KEY])
    assert quarantined.name == name
    assert quarantined.problem.startswith(problem)
    assert "object" not in event


class _Chunks:
    """A stream that hands out the given chunks (``aiohttp.StreamReader.iter_any``)."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def test_lines_drop_an_oversized_line_and_keep_the_next_ones() -> None:
    stream = _Chunks(b"one\ntw", b"o\n" + b"x" * 10, b"x" * 10, b"xx\nthree\nfour")
    lines = [line async for line in _lines(stream, 16)]  # type: ignore[arg-type]
    assert lines == [b"one", b"two", None, b"three", b"four"]
    oversized = _watch_event(lines[2])
    assert oversized is not None
    assert "larger than" in oversized[decoding.QUARANTINED_KEY]["problem"]


def test_the_informers_read_every_spec_the_validators_refuse_with_a_condition() -> None:
    # A spec nested past the validators' bound is refused on the object (a condition), not
    # quarantined: the informer's limit counts from the object, two levels above the spec.
    assert MAX_OBJECT_DEPTH > MAX_SPEC_DEPTH + 2


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"ERROR","object":[1]}',
        b'{"type":"ERROR","object":"gone"}',
        b'{"type":"ERROR"}',
        b'{"type":"ERROR","object":{"code":410,"reason":"Expired","message":"too old"}}',
    ],
)
def test_an_error_event_of_any_shape_is_one_of_the_operators_errors(line: bytes) -> None:
    with pytest.raises(errors.KubeError):
        _watch_event(line)
