"""The bounds on documents a user wrote: YAML and JSON text read into values, or one refusal."""

from __future__ import annotations

import pytest

from stackflow.models.documents import (
    MAX_DOCUMENT_NESTING,
    DocumentJSONError,
    DocumentYAMLError,
    load_bounded_json,
    load_bounded_yaml,
    nesting_depth,
)
from stackflow.stack.apps.settings import parse_yaml_settings, read_yaml_settings

ALIAS_BOMB = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\n"


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ("text", 0),
        ({}, 1),
        ([], 1),
        ({"a": {"b": [1]}}, 3),
        ([[[[]]]], 4),
        ({"a": 1, "b": {"c": {"d": {}}}}, 4),
    ],
)
def test_nesting_depth(value: object, depth: int) -> None:
    assert nesting_depth(value) == depth


def test_nesting_depth_of_a_very_deep_value_is_counted_without_recursion() -> None:
    value: object = []
    for _ in range(20_000):
        value = [value]
    assert nesting_depth(value) == 20_001


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("[" * 5_000 + "]" * 5_000, "nested more than 100 levels deep"),
        ("[" * 101 + "]" * 101, "nested more than 100 levels deep"),
        ("{not json", "Expecting property name"),
    ],
)
def test_json_refusals_are_value_errors_naming_the_problem(text: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        load_bounded_json(text)


def test_json_within_the_bound_is_read() -> None:
    text = "[" * MAX_DOCUMENT_NESTING + "]" * MAX_DOCUMENT_NESTING
    assert nesting_depth(load_bounded_json(text)) == MAX_DOCUMENT_NESTING
    assert load_bounded_json(b'{"a": [1, 2]}') == {"a": [1, 2]}


def test_a_too_deep_json_document_is_its_own_error_type() -> None:
    with pytest.raises(DocumentJSONError):
        load_bounded_json("[" * 2_000 + "]" * 2_000)


@pytest.mark.parametrize(
    ("text", "described"),
    [
        (ALIAS_BOMB, "a: YAML anchors and aliases (&name, *name) are not allowed at line 1"),
        ("a:\n  b: 1\n  b: 2\n", "a.b: duplicate key at line 3, column 3 (first given at line 2)"),
        ("x: " + "[" * 150 + "]" * 150, "x: nested more than 100 levels deep"),
        ("[" * 5_000 + "]" * 5_000, "[0]: nested more than 100 levels deep at line 1"),
    ],
)
def test_yaml_refusals_name_where(text: str, described: str) -> None:
    with pytest.raises(DocumentYAMLError) as refused:
        load_bounded_yaml(text)
    assert refused.value.describe().startswith(described)


def test_yaml_nesting_bound_is_a_parameter() -> None:
    with pytest.raises(DocumentYAMLError, match="nested more than 2 levels deep"):
        load_bounded_yaml("a: {b: {c: 1}}", max_nesting=2)
    assert load_bounded_yaml("a: {b: 1}", max_nesting=2) == {"a": {"b": 1}}


def test_a_config_ref_that_cannot_be_used_is_refused_naming_its_source() -> None:
    source = "spec.configRef: key kibana.yml of Secret kb-config"
    with pytest.raises(ValueError, match=f"^{source}: not usable YAML: .*anchors and aliases"):
        read_yaml_settings(ALIAS_BOMB, source=source)
    with pytest.raises(ValueError, match=f"^{source}: not usable YAML: "):
        read_yaml_settings("a: [", source=source)
    assert read_yaml_settings(b"server:\n  name: kb\n", source=source) == {"server.name": "kb"}


def test_the_tolerant_reader_returns_nothing_for_what_it_cannot_use() -> None:
    assert parse_yaml_settings(ALIAS_BOMB) == {}
    assert parse_yaml_settings("[" * 5_000 + "]" * 5_000) == {}
    assert parse_yaml_settings(None) == {}
