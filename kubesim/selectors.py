"""Label selectors, parsed and matched exactly as apimachinery's ``labels.Parse`` does (reference
§4.2); field selectors live in :mod:`kubesim.field_selectors` and are re-exported here.

Error messages are the client-facing text the API server returns in its 400 ``BadRequest``,
including apimachinery's quirks (``<nil>:`` field paths, the double space in validation examples).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from kubesim.field_selectors import FieldSelector, FieldTerm, read_field
from kubesim.selector_text import (
    SelectorError,
    aggregate_messages,
    field_invalid,
    label_value_errors,
    parse_go_int,
    qualified_name_errors,
)

__all__ = [
    "FieldSelector",
    "FieldTerm",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
    "read_field",
]


# ---------------------------------------------------------------------------------------------
# Label selectors


class Operator(StrEnum):
    """selection.Operator values a parsed label requirement can carry."""

    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True)
class Requirement:
    """One comma-separated term of a label selector; ``values`` is sorted and de-duplicated."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Requirement.Matches: absent keys satisfy only the negative operators."""
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return present and value in self.values
        if self.operator in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return not present or value not in self.values
        if self.operator is Operator.EXISTS:
            return present
        if self.operator is Operator.DOES_NOT_EXIST:
            return not present
        label_number = parse_go_int(value) if present else None
        bound = parse_go_int(self.values[0]) if len(self.values) == 1 else None
        if label_number is None or bound is None:
            return False
        if self.operator is Operator.GREATER_THAN:
            return label_number > bound
        return label_number < bound

    def to_string(self) -> str:
        """Requirement.String(): the canonical text form of this term."""
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {self.operator.value} ({','.join(self.values)})"
        symbols = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}
        symbol = symbols.get(self.operator, str(self.operator.value))
        return self.key + symbol + self.values[0]


def _new_requirement(key: str, operator: Operator, values: Iterable[str]) -> Requirement:
    """labels.NewRequirement: validate the values for the operator (the key is already valid)."""
    sorted_values = tuple(sorted(set(values)))
    errors: list[str] = []
    if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
        if len(sorted_values) != 1:
            errors.append(
                f"values: Invalid value: {list(sorted_values)}: for 'Gt', 'Lt' operators, "
                "exactly one value is required"
            )
        for index, value in enumerate(sorted_values):
            if parse_go_int(value) is None:
                errors.append(
                    field_invalid(
                        f"values[{index}]",
                        value,
                        ["for 'Gt', 'Lt' operators, the value must be an integer"],
                    )
                )
    for index, value in enumerate(sorted_values):
        value_errors = label_value_errors(value)
        if value_errors:
            errors.append(field_invalid(f"values[{index}][{key}]", value, value_errors))
    if errors:
        raise SelectorError("unable to parse requirement: " + aggregate_messages(errors))
    return Requirement(key, operator, sorted_values)


class _Token(Enum):
    END = "end"
    IDENTIFIER = "identifier"
    OPEN_PAR = "("
    CLOSED_PAR = ")"
    COMMA = ","
    NOT = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER = ">"
    LESS = "<"
    IN = "in"
    NOT_IN = "notin"


_SYMBOL_TOKENS = {
    t.value: t
    for t in (
        _Token.OPEN_PAR,
        _Token.CLOSED_PAR,
        _Token.COMMA,
        _Token.NOT,
        _Token.EQUALS,
        _Token.DOUBLE_EQUALS,
        _Token.NOT_EQUALS,
        _Token.GREATER,
        _Token.LESS,
    )
}
_SPECIAL_CHARS = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
# As apimachinery words it (its tokens for > and < are named gt and lt).
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPERATOR_BY_TOKEN = {
    _Token.IN: Operator.IN,
    _Token.NOT_IN: Operator.NOT_IN,
    _Token.EQUALS: Operator.EQUALS,
    _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Token.NOT_EQUALS: Operator.NOT_EQUALS,
    _Token.GREATER: Operator.GREATER_THAN,
    _Token.LESS: Operator.LESS_THAN,
}


def _lex(text: str) -> list[tuple[_Token, str]]:
    """The apimachinery lexer: longest-match symbols, identifiers end at whitespace or a symbol."""
    tokens: list[tuple[_Token, str]] = []
    position = 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position >= len(text):
            tokens.append((_Token.END, ""))
            return tokens
        if text[position] in _SPECIAL_CHARS:
            # Every single special character is a token, so the longest match always exists.
            length = 2 if text[position : position + 2] in _SYMBOL_TOKENS else 1
            literal = text[position : position + length]
            tokens.append((_SYMBOL_TOKENS[literal], literal))
            position += length
            continue
        start = position
        while (
            position < len(text)
            and text[position] not in _WHITESPACE
            and text[position] not in _SPECIAL_CHARS
        ):
            position += 1
        literal = text[start:position]
        keyword = {"in": _Token.IN, "notin": _Token.NOT_IN}.get(literal, _Token.IDENTIFIER)
        tokens.append((keyword, literal))


class _Parser:
    """labels.Parser: a recursive-descent parser over the lexed tokens."""

    def __init__(self, text: str) -> None:
        self._tokens = _lex(text)
        self._position = 0

    def _lookahead(self, *, values: bool = True) -> tuple[_Token, str]:
        token, literal = self._tokens[self._position]
        # In the "Values" context the keywords in/notin are ordinary identifiers.
        if values and token in (_Token.IN, _Token.NOT_IN):
            token = _Token.IDENTIFIER
        return token, literal

    def _consume(self, *, values: bool = True) -> tuple[_Token, str]:
        token, literal = self._lookahead(values=values)
        if self._position < len(self._tokens) - 1:
            self._position += 1
        return token, literal

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token, literal = self._lookahead()
            if token is _Token.END:
                return requirements
            if token not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self._requirement())
            except _RequirementError as error:
                raise SelectorError(f"unable to parse requirement: {error}") from None
            token, literal = self._consume()
            if token is _Token.END:
                return requirements
            if token is not _Token.COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            next_token, next_literal = self._lookahead()
            if next_token not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(f"found '{next_literal}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        key, operator = self._key_and_inferred_operator()
        if operator is not None:
            return Requirement(key, operator)
        token, literal = self._consume(values=False)
        binary = _OPERATOR_BY_TOKEN.get(token)
        if binary is None:
            raise _RequirementError(f"found '{literal}', expected: {_BINARY_OPERATORS}")
        if binary in (Operator.IN, Operator.NOT_IN):
            values = self._value_set()
        else:
            values = self._exact_value()
        return _new_requirement(key, binary, values)

    def _key_and_inferred_operator(self) -> tuple[str, Operator | None]:
        operator: Operator | None = None
        token, literal = self._consume()
        if token is _Token.NOT:
            operator = Operator.DOES_NOT_EXIST
            token, literal = self._consume()
        if token is not _Token.IDENTIFIER:
            raise _RequirementError(f"found '{literal}', expected: identifier")
        key_errors = qualified_name_errors(literal)
        if key_errors:
            raise _RequirementError(field_invalid("<nil>", literal, key_errors))
        if operator is None and self._lookahead()[0] in (_Token.END, _Token.COMMA):
            operator = Operator.EXISTS
        return literal, operator

    def _value_set(self) -> set[str]:
        token, literal = self._consume()
        if token is not _Token.OPEN_PAR:
            raise _RequirementError(f"found '{literal}' expected: '('")
        token, literal = self._lookahead()
        if token is _Token.CLOSED_PAR:
            self._consume()
            return {""}
        if token not in (_Token.IDENTIFIER, _Token.COMMA):
            raise _RequirementError(f"found '{literal}', expected: ',', ')' or identifier")
        values = self._identifier_list()
        closing, _ = self._consume()
        if closing is not _Token.CLOSED_PAR:
            raise _RequirementError(f"found '{literal}', expected: ')'")
        return values

    def _identifier_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            token, literal = self._consume()
            if token is _Token.IDENTIFIER:
                values.add(literal)
                next_token, next_literal = self._lookahead()
                if next_token is _Token.COMMA:
                    continue
                if next_token is _Token.CLOSED_PAR:
                    return values
                raise _RequirementError(f"found '{next_literal}', expected: ',' or ')'")
            if token is _Token.COMMA:
                # "(," ",," and ",)" each stand for an empty value.
                if not values:
                    values.add("")
                next_token, _ = self._lookahead()
                if next_token is _Token.CLOSED_PAR:
                    values.add("")
                    return values
                if next_token is _Token.COMMA:
                    self._consume()
                    values.add("")
                continue
            raise _RequirementError(f"found '{literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        token, _ = self._lookahead()
        if token in (_Token.END, _Token.COMMA):
            return {""}
        token, literal = self._consume()
        if token is _Token.IDENTIFIER:
            return {literal}
        raise _RequirementError(f"found '{literal}', expected: identifier")


class _RequirementError(Exception):
    """A failure inside one requirement; the parser prefixes it with 'unable to parse requirement'."""


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: the AND of its requirements (sorted by key, as apimachinery does)."""

    requirements: tuple[Requirement, ...] = ()
    match_nothing: bool = False

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """labels.Parse: ``""`` selects everything; bad input raises :class:`SelectorError`."""
        requirements = _Parser(text).parse()
        return cls(tuple(sorted(requirements, key=lambda requirement: requirement.key)))

    @classmethod
    def from_api(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """metav1.LabelSelectorAsSelector: ``None`` selects nothing, ``{}`` everything."""
        if selector is None:
            return cls(match_nothing=True)
        requirements: list[Requirement] = []
        for key, value in sorted((selector.get("matchLabels") or {}).items()):
            requirements.append(_validated(key, Operator.EQUALS, [str(value)]))
        api_operators = {
            "In": Operator.IN,
            "NotIn": Operator.NOT_IN,
            "Exists": Operator.EXISTS,
            "DoesNotExist": Operator.DOES_NOT_EXIST,
        }
        for expression in selector.get("matchExpressions") or []:
            operator = api_operators.get(str(expression.get("operator")))
            if operator is None:
                raise SelectorError(
                    f'"{expression.get("operator")}" is not a valid label selector operator'
                )
            values = [str(value) for value in expression.get("values") or []]
            requirements.append(_validated(str(expression.get("key", "")), operator, values))
        return cls(tuple(sorted(requirements, key=lambda requirement: requirement.key)))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with these labels is selected (every requirement holds)."""
        if self.match_nothing:
            return False
        present = labels or {}
        return all(requirement.matches(present) for requirement in self.requirements)

    def is_empty(self) -> bool:
        """True for the selector that selects everything."""
        return not self.requirements and not self.match_nothing

    def to_string(self) -> str:
        """The canonical text form; ``parse(to_string())`` selects the same objects."""
        return ",".join(requirement.to_string() for requirement in self.requirements)


def _validated(key: str, operator: Operator, values: list[str]) -> Requirement:
    key_errors = qualified_name_errors(key)
    if key_errors:
        raise SelectorError(field_invalid("key", key, key_errors))
    if operator in (Operator.IN, Operator.NOT_IN) and not values:
        raise SelectorError(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        raise SelectorError(
            f"values: Invalid value: {values}: values set must be empty for exists and does not exist"
        )
    return _new_requirement(key, operator, values)
