"""Kubernetes label selectors: the model, its validation, matching and the string form.

`LabelSelector` is validated exactly as the API server validates a ``metav1.LabelSelector``:
keys are qualified names, values are label values, operators are ``In``, ``NotIn``, ``Exists``
and ``DoesNotExist``, and the value list must be non-empty for ``In``/``NotIn`` and empty for
``Exists``/``DoesNotExist``. Every problem becomes one line that names the field, e.g.
``matchExpressions[0].operator: unsupported operator "Foo" (must be one of In, NotIn, Exists,
DoesNotExist)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import NewType

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from stackflow.scope.validation import describe_validation_error, quote

NamespaceName = NewType("NamespaceName", str)
"""The name of a Kubernetes Namespace ("" stands for cluster-scoped objects)."""

_QUALIFIED_NAME_MAX = 63
_SUBDOMAIN_MAX = 253
_LABEL_VALUE_MAX = 63
_NAME_PATTERN = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN_PATTERN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_CHARSET = "alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"


class SelectorError(ValueError):
    """A label selector that cannot be parsed or is invalid; the message is a single line."""


class SelectorOperator(StrEnum):
    """The operators a ``matchExpressions`` requirement may use."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


_OPERATOR_NAMES = ", ".join(op.value for op in SelectorOperator)


def label_key_problem(key: str) -> str | None:
    """Return why `key` is not a valid label key (a Kubernetes qualified name), or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return (
            f"invalid label key {quote(key)}: at most one '/' is allowed "
            "(an optional DNS subdomain prefix, then the name)"
        )
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return f"invalid label key {quote(key)}: the prefix before '/' must not be empty"
        if len(prefix) > _SUBDOMAIN_MAX:
            return (
                f"invalid label key {quote(key)}: the prefix must be no more than "
                f"{_SUBDOMAIN_MAX} characters"
            )
        if not _SUBDOMAIN_PATTERN.fullmatch(prefix):
            return (
                f"invalid label key {quote(key)}: the prefix must be a lowercase DNS subdomain "
                '(e.g. "example.com")'
            )
    if not name:
        return f"invalid label key {quote(key)}: the name must not be empty"
    if len(name) > _QUALIFIED_NAME_MAX:
        return (
            f"invalid label key {quote(key)}: the name must be no more than "
            f"{_QUALIFIED_NAME_MAX} characters"
        )
    if not _NAME_PATTERN.fullmatch(name):
        return f"invalid label key {quote(key)}: the name must consist of {_NAME_CHARSET}"
    return None


def label_value_problem(value: str) -> str | None:
    """Return why `value` is not a valid label value, or None (the empty value is valid)."""
    if len(value) > _LABEL_VALUE_MAX:
        return f"invalid label value {quote(value)}: must be no more than {_LABEL_VALUE_MAX} characters"
    if value and not _NAME_PATTERN.fullmatch(value):
        return f"invalid label value {quote(value)}: must be empty or consist of {_NAME_CHARSET}"
    return None


def _selector_error(field: str, problem: str) -> PydanticCustomError:
    # The relative field travels in the context so that the one-line formatter can append it to
    # pydantic's location (which only reaches the model that raised).
    return PydanticCustomError("label_selector", "{problem}", {"field": field, "problem": problem})


def _none_to_empty(value: object, empty: object) -> object:
    # Kubernetes decodes `matchLabels:` / `values:` written as null the same as an empty one.
    return empty if value is None else value


class LabelSelectorRequirement(BaseModel):
    """One ``matchExpressions`` entry: a key, an operator and (for In/NotIn) values."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    key: str
    operator: SelectorOperator
    values: list[str] = Field(default_factory=list)

    @field_validator("operator", mode="before")
    @classmethod
    def _known_operator(cls, value: object) -> object:
        if isinstance(value, str) and value not in SelectorOperator.__members__.values():
            raise _selector_error(
                "", f"unsupported operator {quote(value)} (must be one of {_OPERATOR_NAMES})"
            )
        return value

    @field_validator("values", mode="before")
    @classmethod
    def _null_values(cls, value: object) -> object:
        return _none_to_empty(value, [])

    @model_validator(mode="after")
    def _valid_requirement(self) -> LabelSelectorRequirement:
        problem = label_key_problem(self.key)
        if problem:
            raise _selector_error("key", problem)
        if self.operator in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not self.values:
            raise _selector_error(
                "values", f"must have at least one value when operator is {self.operator.value}"
            )
        no_values = (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST)
        if self.operator in no_values and self.values:
            raise _selector_error("values", f"must be empty when operator is {self.operator.value}")
        for index, value in enumerate(self.values):
            problem = label_value_problem(value)
            if problem:
                raise _selector_error(f"values[{index}]", problem)
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` satisfy this requirement (NotIn also matches a missing key)."""
        present = self.key in labels
        if self.operator is SelectorOperator.IN:
            return present and labels[self.key] in self.values
        if self.operator is SelectorOperator.NOT_IN:
            return not present or labels[self.key] not in self.values
        if self.operator is SelectorOperator.EXISTS:
            return present
        return not present

    def to_string(self) -> str:
        """Render in apimachinery's string form, values sorted (``k in (a,b)``, ``!k``)."""
        if self.operator is SelectorOperator.EXISTS:
            return self.key
        if self.operator is SelectorOperator.DOES_NOT_EXIST:
            return f"!{self.key}"
        keyword = "in" if self.operator is SelectorOperator.IN else "notin"
        return f"{self.key} {keyword} ({','.join(sorted(self.values))})"


class LabelSelector(BaseModel):
    """A ``metav1.LabelSelector``; all requirements must hold (an empty selector matches all)."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[LabelSelectorRequirement] = Field(
        default_factory=list, alias="matchExpressions"
    )

    @field_validator("match_labels", mode="before")
    @classmethod
    def _null_labels(cls, value: object) -> object:
        return _none_to_empty(value, {})

    @field_validator("match_expressions", mode="before")
    @classmethod
    def _null_expressions(cls, value: object) -> object:
        return _none_to_empty(value, [])

    @model_validator(mode="after")
    def _valid_match_labels(self) -> LabelSelector:
        for key, value in self.match_labels.items():
            problem = label_key_problem(key) or label_value_problem(value)
            if problem:
                raise _selector_error(f"matchLabels[{quote(key)}]", problem)
        return self

    def is_empty(self) -> bool:
        """Whether the selector has no requirement at all (and so matches everything)."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` satisfy every matchLabels entry and every matchExpressions entry."""
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        return all(requirement.matches(labels) for requirement in self.match_expressions)

    def to_string(self) -> str:
        """Render as apimachinery does: requirements sorted by key, ``a=b,c in (x,y),!d``."""
        parts: list[tuple[str, str]] = [
            (key, f"{key}={value}") for key, value in sorted(self.match_labels.items())
        ]
        parts.extend((req.key, req.to_string()) for req in self.match_expressions)
        # Sorting is stable, so requirements on the same key keep matchLabels-then-given order.
        parts.sort(key=lambda part: part[0])
        return ",".join(text for _, text in parts)

    def __str__(self) -> str:
        """The string form (see `to_string`)."""
        return self.to_string()


def equality_selector_string(labels: Mapping[str, str]) -> str:
    """The selector string requiring every one of ``labels`` (``a=b,c=d``, sorted by key), as
    ``LabelSelector.to_string`` renders matchLabels; the values are the caller's own names and
    are not validated again."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def label_selector_from_data(data: object, *, field: str = "") -> LabelSelector:
    """Validate decoded YAML/JSON `data` as a LabelSelector, raising a one-line SelectorError.

    `field` prefixes the reported location (e.g. ``namespace-selector``).
    """
    try:
        return LabelSelector.model_validate(data)
    except ValidationError as exc:
        raise SelectorError(describe_validation_error(exc, prefix=field)) from None


# --- the string form -------------------------------------------------------------------------

_SPECIAL = "=!(),<>"
_OPERATOR_TOKENS = ("==", "!=", "=", "!", "(", ")", ",", ">", "<")


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    """Split `text` into (kind, literal, position) tokens the way apimachinery's lexer does."""
    tokens: list[tuple[str, str, int]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
            continue
        symbol = next((op for op in _OPERATOR_TOKENS if text.startswith(op, index)), None)
        if symbol is not None:
            tokens.append((symbol, symbol, index))
            index += len(symbol)
            continue
        start = index
        while index < len(text) and not text[index].isspace() and text[index] not in _SPECIAL:
            index += 1
        literal = text[start:index]
        kind = literal if literal in ("in", "notin") else "identifier"
        tokens.append((kind, literal, start))
    tokens.append(("end", "", len(text)))
    return tokens


class _SelectorParser:
    """A recursive-descent parser for apimachinery's selector grammar (the expressible part)."""

    def __init__(self, text: str) -> None:
        self._tokens = _tokenize(text)
        self._index = 0
        self.match_labels: dict[str, str] = {}
        self.expressions: list[dict[str, object]] = []

    def _peek(self) -> tuple[str, str, int]:
        return self._tokens[self._index]

    def _next(self) -> tuple[str, str, int]:
        token = self._tokens[self._index]
        self._index += 1
        return token

    @staticmethod
    def _fail(token: tuple[str, str, int], expected: str) -> SelectorError:
        found = quote(token[1]) if token[0] != "end" else "end of string"
        return SelectorError(f"position {token[2]}: found {found}, expected {expected}")

    def parse(self) -> None:
        """Parse the whole text into `match_labels` and `expressions`."""
        if self._peek()[0] == "end":
            return
        while True:
            self._requirement()
            token = self._next()
            if token[0] == "end":
                return
            if token[0] != ",":
                raise self._fail(token, "',' or end of string")

    def _key(self) -> str:
        token = self._next()
        if token[0] != "identifier":
            raise self._fail(token, "a label key")
        return token[1]

    def _requirement(self) -> None:
        if self._peek()[0] == "!":
            self._next()
            self.expressions.append({"key": self._key(), "operator": "DoesNotExist"})
            return
        key = self._key()
        token = self._next()
        kind = token[0]
        if kind in (",", "end"):
            self._index -= 1
            self.expressions.append({"key": key, "operator": "Exists"})
        elif kind in ("=", "=="):
            self._add_equality(key, self._exact_value())
        elif kind == "!=":
            self.expressions.append(
                {"key": key, "operator": "NotIn", "values": [self._exact_value()]}
            )
        elif kind in ("in", "notin"):
            operator = "In" if kind == "in" else "NotIn"
            self.expressions.append({"key": key, "operator": operator, "values": self._set()})
        elif kind in (">", "<"):
            raise SelectorError(
                f"position {token[2]}: operator {quote(kind)} cannot be expressed "
                "in a LabelSelector (use In, NotIn, Exists or DoesNotExist)"
            )
        else:
            raise self._fail(token, "one of '=', '==', '!=', 'in', 'notin', ',' or end of string")

    def _add_equality(self, key: str, value: str) -> None:
        existing = self.match_labels.get(key)
        if existing is None:
            self.match_labels[key] = value
        elif existing != value:
            # matchLabels holds one value per key; a second, different one is still an AND.
            self.expressions.append({"key": key, "operator": "In", "values": [value]})

    def _exact_value(self) -> str:
        kind, literal, _ = self._peek()
        if kind in (",", "end"):
            return ""
        if kind in ("identifier", "in", "notin"):
            self._next()
            return literal
        raise self._fail(self._peek(), "a label value")

    def _set(self) -> list[str]:
        opening = self._next()
        if opening[0] != "(":
            raise self._fail(opening, "'('")
        values: list[str] = []
        expecting_value = True
        while True:
            token = self._next()
            if token[0] in ("identifier", "in", "notin") and expecting_value:
                values.append(token[1])
                expecting_value = False
            elif token[0] == ",":
                if expecting_value:
                    values.append("")
                expecting_value = True
            elif token[0] == ")":
                if expecting_value and values:
                    values.append("")
                return values
            else:
                raise self._fail(token, "a label value, ',' or ')'")


def parse_selector_string(text: str) -> LabelSelector:
    """Parse the string form (``a=b,c in (x,y),d!=e,f,!g``) into a validated LabelSelector.

    ``=`` and ``==`` become matchLabels, ``!=`` becomes NotIn with one value, ``in``/``notin``
    become In/NotIn, a bare key Exists and ``!key`` DoesNotExist. The empty string is the
    empty selector. ``<`` and ``>`` have no LabelSelector form and are rejected.
    """
    return label_selector_from_data(selector_data_from_string(text))


def selector_data_from_string(text: str) -> dict[str, object]:
    """Parse the string form into unvalidated LabelSelector data (``matchLabels``, ...).

    Raises SelectorError on a syntax error; keys and values are validated by the model.
    """
    parser = _SelectorParser(text)
    parser.parse()
    return {"matchLabels": parser.match_labels, "matchExpressions": parser.expressions}
