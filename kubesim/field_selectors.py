"""Field selectors, parsed and matched as apimachinery's ``fields.ParseSelector`` does (reference
§4.2): ``=``, ``==``, ``!=``, comma = AND, backslash escapes for ``\\``, ``,`` and ``=``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.selector_text import SelectorError


@dataclass(frozen=True)
class FieldTerm:
    """One ``field=value`` / ``field!=value`` term; ``value`` is unescaped."""

    field: str
    value: str
    negated: bool = False


def _split_unescaped(text: str, separator: str) -> list[str]:
    """fields.splitTerms: split on separators that are not backslash-escaped."""
    parts: list[str] = []
    start = 0
    escaped = False
    for index, character in enumerate(text):
        if escaped:
            escaped = False
        elif character == "\\":
            escaped = True
        elif character == separator:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _split_term(term: str) -> tuple[str, str, str] | None:
    """fields.splitTerm: the first position where ``!=``, ``==`` or ``=`` starts."""
    for index in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
    return None


def _unescape_field_value(text: str) -> str:
    """fields.UnescapeValue: ``\\\\``, ``\\,`` and ``\\=`` are the only escapes."""
    unescaped: list[str] = []
    escaped = False
    for character in text:
        if escaped:
            if character not in "\\,=":
                raise SelectorError(
                    f"invalid field selector: invalid escape sequence: \\{character}"
                )
            unescaped.append(character)
            escaped = False
        elif character == "\\":
            escaped = True
        elif character in ",=":
            # Go formats the rune with %v, i.e. as its code point.
            raise SelectorError(
                f"invalid field selector: unescaped character in value: {ord(character)}"
            )
        else:
            unescaped.append(character)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(unescaped)


def _escape_field_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _field_text(value: Any) -> str:
    """How a field value reads in a selector comparison: strings as-is, JSON scalars as Go prints them."""
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_field(obj: Mapping[str, Any], path: str) -> str:
    """The value at a dotted path (``involvedObject.kind``) as selector text; missing → ``""``."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return ""
        current = current[part]
    return _field_text(current)


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: the AND of its terms (sorted, as apimachinery does)."""

    terms: tuple[FieldTerm, ...] = ()

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """fields.ParseSelector: ``""`` selects everything; bad input raises :class:`SelectorError`."""
        terms: list[FieldTerm] = []
        for part in sorted(_split_unescaped(text, ",") if text else []):
            if not part:
                continue
            split = _split_term(part)
            if split is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
            field, operator, raw_value = split
            terms.append(FieldTerm(field, _unescape_field_value(raw_value), operator == "!="))
        return cls(tuple(terms))

    def fields(self) -> set[str]:
        """The field names the selector uses (the caller checks they are supported)."""
        return {term.field for term in self.terms}

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` satisfies every term; missing fields read as ``""``."""
        return all(
            (read_field(obj, term.field) == term.value) != term.negated for term in self.terms
        )

    def required_value(self, field: str) -> str | None:
        """The value an ``=`` / ``==`` term demands for ``field`` (e.g. ``metadata.name``), if any."""
        for term in self.terms:
            if term.field == field and not term.negated:
                return term.value
        return None

    def is_empty(self) -> bool:
        """True for the selector that selects everything."""
        return not self.terms

    def to_string(self) -> str:
        """The canonical text form, with values escaped; parses back to an equal selector."""
        return ",".join(
            term.field + ("!=" if term.negated else "=") + _escape_field_value(term.value)
            for term in self.terms
        )
