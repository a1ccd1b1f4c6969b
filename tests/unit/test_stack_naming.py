"""ECK's Namer and HashObject, reproduced byte for byte."""

from __future__ import annotations

import pytest

from stackflow.stack.naming import (
    ES_NAMER,
    GoInt,
    GoMap,
    GoPointer,
    GoSlice,
    GoStruct,
    Namer,
    hash_object,
    object_selector,
    spew_text,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("elastic" + "testing", "4269947480"),
        (object_selector(namespace="namespace1", name="elasticsearch1"), "2150608354"),
    ],
)
def test_hash_object_matches_eck_vectors(value: object, expected: str) -> None:
    assert hash_object(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "(string)abc"),
        (
            object_selector(namespace="namespace1", name="elasticsearch1"),
            "(v1.ObjectSelector){Namespace:(string)namespace1 Name:(string)elasticsearch1 "
            "ServiceName:(string) SecretName:(string)}",
        ),
        (GoMap("map[string]string", {"b": "2", "a": "1"}), "(map[string]string)map[a:1 b:2]"),
        (GoSlice("[]string", ["x", "y"]), "([]string)[x y]"),
        (GoSlice("[]string", None), "([]string)<nil>"),
        (
            GoStruct("v1.T", (("Count", GoPointer("int32", GoInt(3, "int32"))),)),
            "(v1.T){Count:(*int32)3}",
        ),
        (GoStruct("v1.T", (("Count", GoPointer("int32")),)), "(v1.T){Count:(*int32)<nil>}"),
        (GoStruct("v1.T", (("On", True), ("N", 7))), "(v1.T){On:(bool)true N:(int)7}"),
    ],
)
def test_spew_text_renders_go_values(value: object, expected: str) -> None:
    assert spew_text(value) == expected


@pytest.mark.parametrize(
    ("owner", "parts", "expected"),
    [
        ("quickstart", (), "quickstart-es"),
        ("quickstart", ("http",), "quickstart-es-http"),
        ("quickstart", ("default", "es", "config"), "quickstart-es-default-es-config"),
    ],
)
def test_es_namer_suffix(owner: str, parts: tuple[str, ...], expected: str) -> None:
    assert ES_NAMER.suffix(owner, *parts) == expected


def test_namer_truncates_the_owner_to_fit_the_maximum_length() -> None:
    namer = Namer("es", max_name_length=20)

    name = namer.suffix("a" * 30, "http")

    assert name == "a" * 12 + "-es-http"
    assert len(name) == 20


def test_namer_keeps_names_within_the_kubernetes_limit() -> None:
    name = ES_NAMER.suffix("o" * 300, "transport", "certs")

    assert len(name) == 253
    assert name.endswith("-es-transport-certs")
