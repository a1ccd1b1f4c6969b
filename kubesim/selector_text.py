"""Text rules shared by the selector parsers: :class:`SelectorError`, apimachinery's name and label
value validation (``k8s.io/apimachinery/pkg/util/validation``) and Go-style message formatting."""

from __future__ import annotations

import re


class SelectorError(ValueError):
    """A selector that does not parse; ``str(error)`` is the message the client sees."""


# ---------------------------------------------------------------------------------------------
# Name and value validation (k8s.io/apimachinery/pkg/util/validation)

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_GO_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    # Reproduces validation.RegexError, including its "',  or '" double space.
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index > 0:
            text += " or "
        text += "'" + example + "', "
    return text + "regex used for validation is '" + fmt + "')"


def qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName: label keys and other ``prefix/name`` identifiers."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errors.append(
                    "prefix part "
                    + _regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_ERR, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errors.append(
            "name part "
            + _regex_error(_QUALIFIED_NAME_ERR, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(
            _regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def go_quote(text: str) -> str:
    """Go's ``%q`` for the printable strings that reach error messages."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def field_invalid(path: str, value: str, details: list[str]) -> str:
    """field.Invalid(...).Error(); apimachinery prints a nil path as ``<nil>``."""
    return f"{path}: Invalid value: {go_quote(value)}: {'; '.join(details)}"


def aggregate_messages(messages: list[str]) -> str:
    """utilerrors.Aggregate.Error(): one message bare, several de-duplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def parse_go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None where Go would fail."""
    if not _GO_INT_RE.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None
