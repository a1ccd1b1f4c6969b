"""Label selectors: Kubernetes validation, matching and the string form."""

from __future__ import annotations

import pytest

from stackflow.scope.selector import (
    LabelSelector,
    SelectorError,
    label_selector_from_data,
    parse_selector_string,
)

_NAME_RULE = "alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"


def _expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, object]:
    expression: dict[str, object] = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return {"matchExpressions": [expression]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _expr("a", "Foo"),
            'ns.matchExpressions[0].operator: unsupported operator "Foo" '
            "(must be one of In, NotIn, Exists, DoesNotExist)",
        ),
        (
            _expr("a", "in", ["x"]),
            'ns.matchExpressions[0].operator: unsupported operator "in" '
            "(must be one of In, NotIn, Exists, DoesNotExist)",
        ),
        (
            _expr("a", "In"),
            "ns.matchExpressions[0].values: must have at least one value when operator is In",
        ),
        (
            _expr("a", "NotIn", []),
            "ns.matchExpressions[0].values: must have at least one value when operator is NotIn",
        ),
        (
            _expr("a", "Exists", ["x"]),
            "ns.matchExpressions[0].values: must be empty when operator is Exists",
        ),
        (
            _expr("a", "DoesNotExist", ["x"]),
            "ns.matchExpressions[0].values: must be empty when operator is DoesNotExist",
        ),
        (
            _expr("a", "In", ["ok", "-bad"]),
            f'ns.matchExpressions[0].values[1]: invalid label value "-bad": must be empty or consist of {_NAME_RULE}',
        ),
        (
            _expr("a", "In", ["v" * 64]),
            f'ns.matchExpressions[0].values[0]: invalid label value "{"v" * 64}": must be no more than 63 characters',
        ),
        (
            _expr("a b", "Exists"),
            f'ns.matchExpressions[0].key: invalid label key "a b": the name must consist of {_NAME_RULE}',
        ),
        (
            _expr("", "Exists"),
            'ns.matchExpressions[0].key: invalid label key "": the name must not be empty',
        ),
        (
            _expr("x.io/", "Exists"),
            'ns.matchExpressions[0].key: invalid label key "x.io/": the name must not be empty',
        ),
        (
            _expr("/a", "Exists"),
            "ns.matchExpressions[0].key: invalid label key \"/a\": the prefix before '/' must not be empty",
        ),
        (
            _expr("a/b/c", "Exists"),
            "ns.matchExpressions[0].key: invalid label key \"a/b/c\": at most one '/' is allowed "
            "(an optional DNS subdomain prefix, then the name)",
        ),
        (
            _expr("Example.com/a", "Exists"),
            'ns.matchExpressions[0].key: invalid label key "Example.com/a": the prefix must be a '
            'lowercase DNS subdomain (e.g. "example.com")',
        ),
        (
            _expr("k" * 64, "Exists"),
            f'ns.matchExpressions[0].key: invalid label key "{"k" * 64}": the name must be no more than 63 characters',
        ),
        (
            _expr("p" * 254 + "/a", "Exists"),
            f'ns.matchExpressions[0].key: invalid label key "{"p" * 254}/a": the prefix must be no more than 253 characters',
        ),
        (
            {"matchLabels": {"team": "a", "bad key": "x"}},
            f'ns.matchLabels["bad key"]: invalid label key "bad key": the name must consist of {_NAME_RULE}',
        ),
        (
            {"matchLabels": {"team": "a_"}},
            f'ns.matchLabels["team"]: invalid label value "a_": must be empty or consist of {_NAME_RULE}',
        ),
        ({"matchLabels": {"team": 1}}, 'ns.matchLabels["team"]: must be a string, got 1'),
        ({"matchLabels": ["a"]}, 'ns.matchLabels: must be a mapping, got ["a"]'),
        (
            {"matchExpressions": {"key": "a"}},
            'ns.matchExpressions: must be a list, got {"key": "a"}',
        ),
        (
            {"matchExpressions": [{"operator": "Exists"}]},
            "ns.matchExpressions[0].key: required field is missing",
        ),
        (
            {"matchExpressions": [{"key": "a"}]},
            "ns.matchExpressions[0].operator: required field is missing",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "value": ["x"]}]},
            "ns.matchExpressions[0].value: unknown field",
        ),
        ({"matchLabel": {"a": "b"}}, "ns.matchLabel: unknown field"),
        ("team=a", 'ns: must be a mapping, got "team=a"'),
    ],
)
def test_invalid_selectors_are_refused_with_one_line_naming_the_field(
    data: object, message: str
) -> None:
    with pytest.raises(SelectorError) as caught:
        label_selector_from_data(data, field="ns")
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"matchLabels": None, "matchExpressions": None},
        {"matchLabels": {"example.com/team": "", "a": "B-1.2_3"}},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": None}]},
        {"matchExpressions": [{"key": "k8s.io/a", "operator": "In", "values": ["x", ""]}]},
        {"matchLabels": {"k" * 63: "v" * 63}},
    ],
)
def test_valid_selectors_are_accepted(data: object) -> None:
    assert isinstance(label_selector_from_data(data), LabelSelector)


def test_populates_by_alias_and_by_attribute_name() -> None:
    by_alias = LabelSelector.model_validate({"matchLabels": {"a": "b"}})
    by_name = LabelSelector(match_labels={"a": "b"})
    assert by_alias == by_name
    assert by_alias.model_dump(by_alias=True) == {"matchLabels": {"a": "b"}, "matchExpressions": []}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("", {"a": "b"}, True),
        ("team=a", {"team": "a"}, True),
        ("team=a", {"team": "b"}, False),
        ("team=a", {}, False),
        ("team=", {"team": ""}, True),
        ("team=", {}, False),
        ("env in (prod,stage)", {"env": "stage"}, True),
        ("env in (prod,stage)", {"env": "dev"}, False),
        ("env in (prod,stage)", {}, False),
        ("env notin (prod)", {"env": "dev"}, True),
        ("env notin (prod)", {"env": "prod"}, False),
        ("env notin (prod)", {}, True),
        ("env!=prod", {}, True),
        ("env", {"env": ""}, True),
        ("env", {}, False),
        ("!env", {}, True),
        ("!env", {"env": "x"}, False),
        ("team=a,env in (prod),!legacy", {"team": "a", "env": "prod"}, True),
        ("team=a,env in (prod),!legacy", {"team": "a", "env": "prod", "legacy": "1"}, False),
    ],
)
def test_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector_string(selector).matches(labels) is expected


def test_empty_selector() -> None:
    assert LabelSelector().is_empty()
    assert not parse_selector_string("a").is_empty()


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("a=b", "a=b"),
        ("a==b", "a=b"),
        ("a = b , c", "a=b,c"),
        ("z=1,a in (y, x),!m", "a in (x,y),!m,z=1"),
        ("a!=b", "a notin (b)"),
        ("a notin (c,b)", "a notin (b,c)"),
        ("a=b,a=c", "a=b,a in (c)"),
        ("a=b,a=b", "a=b"),
        ("x.io/team=", "x.io/team="),
        ("a in (b,)", "a in (,b)"),
        ("a=in", "a=in"),
    ],
)
def test_string_form_round_trips(text: str, canonical: str) -> None:
    selector = parse_selector_string(text)
    assert selector.to_string() == canonical
    assert parse_selector_string(canonical) == parse_selector_string(selector.to_string())
    assert parse_selector_string(canonical).to_string() == canonical


def test_string_form_of_a_model_sorts_by_key_and_values() -> None:
    selector = LabelSelector.model_validate(
        {
            "matchLabels": {"z": "1", "b": "2"},
            "matchExpressions": [
                {"key": "c", "operator": "NotIn", "values": ["y", "x"]},
                {"key": "a", "operator": "DoesNotExist"},
                {"key": "b", "operator": "Exists"},
            ],
        }
    )
    assert str(selector) == "!a,b=2,b,c notin (x,y),z=1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a=b,", "position 4: found end of string, expected a label key"),
        (",a", 'position 0: found ",", expected a label key'),
        (
            "a b",
            "position 2: found \"b\", expected one of '=', '==', '!=', 'in', 'notin', ',' or end of string",
        ),
        ("a in x", "position 5: found \"x\", expected '('"),
        ("a in (x", "position 7: found end of string, expected a label value, ',' or ')'"),
        ("a=(", 'position 2: found "(", expected a label value'),
        ("!", "position 1: found end of string, expected a label key"),
        (
            "a>1",
            'position 1: operator ">" cannot be expressed in a LabelSelector '
            "(use In, NotIn, Exists or DoesNotExist)",
        ),
        ("a in ()", "matchExpressions[0].values: must have at least one value when operator is In"),
        (
            "A_=b",
            f'matchLabels["A_"]: invalid label key "A_": the name must consist of {_NAME_RULE}',
        ),
    ],
)
def test_unparseable_strings(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_selector_string(text)
    assert str(caught.value) == message
