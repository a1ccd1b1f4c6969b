"""Label and field selectors as the API server parses and applies them (reference §4.2)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesim.selectors import FieldSelector, LabelSelector, SelectorError

_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("   ", ""),
        ("app=web", "app=web"),
        ("app==web", "app==web"),
        ("app!=web", "app!=web"),
        ("app = web , tier", "app=web,tier"),
        ("env in (b, a)", "env in (a,b)"),
        ("env notin (a)", "env notin (a)"),
        ("env in ()", "env in ()"),
        ("env in (,a)", "env in (,a)"),
        ("k=", "k="),
        ("!legacy", "!legacy"),
        ("size>5,size<10", "size>5,size<10"),
        ("example.com/app=web", "example.com/app=web"),
        ("tier!=db,env in (a,b),!legacy", "env in (a,b),!legacy,tier!=db"),
        ("in=notin", "in=notin"),
        ("a\tin\n(x)", "a in (x)"),
    ],
)
def test_label_selector_parses_to_canonical_text(text: str, canonical: str) -> None:
    assert LabelSelector.parse(text).to_string() == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("env in a", "unable to parse requirement: found 'a' expected: '('"),
        ("env in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("env in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x=a,", "found '', expected: identifier after ','"),
        ("x=a,,y", "found ',', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a x", "unable to parse requirement: found 'x', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        (
            "app: nginx",
            f'unable to parse requirement: <nil>: Invalid value: "app:": name part {_NAME_RULE}',
        ),
        (
            "a/b/c=d",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name '
            f"{_NAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "/app=x",
            'unable to parse requirement: <nil>: Invalid value: "/app": prefix part must be non-empty',
        ),
        (
            "Example.com/app=x",
            'unable to parse requirement: <nil>: Invalid value: "Example.com/app": prefix part a '
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "x/=y",
            'unable to parse requirement: <nil>: Invalid value: "x/": name part must be non-empty; '
            f"name part {_NAME_RULE}",
        ),
        (
            "k" * 64,
            f'unable to parse requirement: <nil>: Invalid value: "{"k" * 64}": '
            "name part must be no more than 63 characters",
        ),
        (
            "k=-x",
            f'unable to parse requirement: values[0][k]: Invalid value: "-x": {_VALUE_RULE}',
        ),
        (
            "k=" + "v" * 64,
            f'unable to parse requirement: values[0][k]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 characters",
        ),
        (
            "k>-1",
            f'unable to parse requirement: values[0][k]: Invalid value: "-1": {_VALUE_RULE}',
        ),
        (
            "k>abc",
            'unable to parse requirement: values[0]: Invalid value: "abc": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
def test_label_selector_rejects_with_apimachinery_message(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        LabelSelector.parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "labels", "selected"),
    [
        ("", None, True),
        ("", {"a": "b"}, True),
        ("app=web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app=web", {}, False),
        ("app==web", {"app": "web", "x": "y"}, True),
        ("app!=web", {}, True),
        ("app!=web", {"app": "db"}, True),
        ("app!=web", {"app": "web"}, False),
        ("env in (a,b)", {"env": "b"}, True),
        ("env in (a,b)", {"env": "c"}, False),
        ("env in (a,b)", {}, False),
        ("env notin (a,b)", {}, True),
        ("env notin (a,b)", {"env": "a"}, False),
        ("env in ()", {"env": ""}, True),
        ("k=", {"k": ""}, True),
        ("k=", {}, False),
        ("tier", {"tier": ""}, True),
        ("tier", {"app": "x"}, False),
        ("!tier", {"app": "x"}, True),
        ("!tier", {"tier": "x"}, False),
        ("size>5", {"size": "6"}, True),
        ("size>5", {"size": "5"}, False),
        ("size>5", {"size": "big"}, False),
        ("size>5", {"size": " 6"}, False),
        ("size>5", {}, False),
        ("size<5", {"size": "-10"}, True),
        ("size<5", {"size": "99999999999999999999"}, False),
        ("env in (a,b),!legacy,tier!=db", {"env": "a"}, True),
        ("env in (a,b),!legacy,tier!=db", {"env": "a", "tier": "web"}, True),
        ("env in (a,b),!legacy,tier!=db", {"env": "a", "tier": "db"}, False),
        ("env in (a,b),!legacy,tier!=db", {"env": "a", "legacy": "true"}, False),
        ("env in (a,b),!legacy,tier!=db", {"tier": "web"}, False),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str] | None, selected: bool) -> None:
    assert LabelSelector.parse(text).matches(labels) is selected


@pytest.mark.parametrize(
    ("api_selector", "labels", "selected"),
    [
        (None, {"a": "b"}, False),
        ({}, {"a": "b"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        (
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]},
            {"env": "a"},
            True,
        ),
        ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, {"env": "a"}, False),
    ],
)
def test_label_selector_from_api_object(
    api_selector: dict[str, Any] | None, labels: dict[str, str], selected: bool
) -> None:
    assert LabelSelector.from_api(api_selector).matches(labels) is selected


def test_empty_label_selector_reports_empty() -> None:
    assert LabelSelector.parse("").is_empty()
    assert not LabelSelector.parse("a").is_empty()
    assert not LabelSelector.from_api(None).is_empty()


_KEYS = st.sampled_from(["a", "b", "app.kubernetes.io/name", "x-1"])
_VALUES = st.sampled_from(["", "a", "b", "v_2", "1", "10"])
_NUMBERS = st.sampled_from(["0", "1", "10", "007"])
_SPACE = st.sampled_from(["", " ", "  "])


@st.composite
def _requirement_text(draw: st.DrawFn) -> str:
    key = draw(_KEYS)
    space = draw(_SPACE)
    form = draw(st.sampled_from(["eq", "set", "exists", "numeric"]))
    if form == "eq":
        operator = draw(st.sampled_from(["=", "==", "!="]))
        return f"{key}{space}{operator}{space}{draw(_VALUES)}"
    if form == "set":
        operator = draw(st.sampled_from(["in", "notin"]))
        values = draw(st.lists(_VALUES.filter(bool), min_size=1, max_size=3))
        return f"{key} {operator}{space}({f',{space}'.join(values)})"
    if form == "exists":
        return draw(st.sampled_from(["", "!"])) + key
    return f"{key}{draw(st.sampled_from(['>', '<']))}{draw(_NUMBERS)}"


_LABEL_SETS = st.dictionaries(
    _KEYS, st.one_of(_VALUES, _NUMBERS, st.sampled_from(["-3", "+4"])), max_size=4
)


@given(
    st.lists(_requirement_text(), max_size=4),
    st.lists(_LABEL_SETS, min_size=1, max_size=8),
)
def test_label_selector_text_round_trips(
    terms: list[str], label_sets: list[dict[str, str]]
) -> None:
    selector = LabelSelector.parse(",".join(terms))
    reparsed = LabelSelector.parse(selector.to_string())
    assert reparsed == selector
    for labels in label_sets:
        assert reparsed.matches(labels) == selector.matches(labels)


# --- field selectors --------------------------------------------------------------------------

_EVENT = {
    "metadata": {"name": "e1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "web-0", "uid": "u1"},
    "type": "Warning",
    "count": 3,
}


@pytest.mark.parametrize(
    ("text", "obj", "selected"),
    [
        ("", _EVENT, True),
        ("metadata.name=e1", _EVENT, True),
        ("metadata.name==e1", _EVENT, True),
        ("metadata.name!=e1", _EVENT, False),
        ("metadata.namespace=default,type=Warning", _EVENT, True),
        ("involvedObject.kind=Pod,involvedObject.name=web-0", _EVENT, True),
        ("involvedObject.kind=Node", _EVENT, False),
        ("spec.nodeName=", {"spec": {}}, True),
        ("spec.nodeName!=", {"spec": {"nodeName": "n1"}}, True),
        ("status.phase=Running", {}, False),
        ("count=3", _EVENT, True),
        (r"metadata.name=a\,b", {"metadata": {"name": "a,b"}}, True),
        (r"metadata.name=a\=b\\c", {"metadata": {"name": "a=b\\c"}}, True),
    ],
)
def test_field_selector_matches(text: str, obj: dict[str, Any], selected: bool) -> None:
    assert FieldSelector.parse(text).matches(obj) is selected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a!==b", "invalid field selector: unescaped character in value: 61"),
        (r"a=b\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_rejects_with_apimachinery_message(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        FieldSelector.parse(text)
    assert str(caught.value) == message


def test_field_selector_reports_fields_and_required_values() -> None:
    selector = FieldSelector.parse("metadata.name=web,status.phase!=Failed,,")
    assert selector.fields() == {"metadata.name", "status.phase"}
    assert selector.required_value("metadata.name") == "web"
    assert selector.required_value("status.phase") is None
    assert selector.required_value("spec.nodeName") is None
    assert not selector.is_empty()
    assert FieldSelector.parse("").is_empty()


@pytest.mark.parametrize("text", ["a=b", r"a=x\,y\=z\\", "b!=,a==c"])
def test_field_selector_text_round_trips(text: str) -> None:
    selector = FieldSelector.parse(text)
    assert FieldSelector.parse(selector.to_string()) == selector
