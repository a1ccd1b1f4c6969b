"""One-line descriptions of pydantic validation errors, for configuration and selectors."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError


def quote(text: str) -> str:
    """Quote `text` for an error message, escaping anything that would break the line."""
    return json.dumps(text, ensure_ascii=False)


_MAPPING_FIELDS = frozenset({"matchLabels", "match_labels"})

_PROBLEM_BY_TYPE = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "bool_type": "must be a boolean (true or false)",
    "bool_parsing": "must be a boolean (true or false)",
    "enum": "unsupported value",
}


def _location(loc: tuple[int | str, ...], *, prefix: str) -> str:
    path = prefix
    previous: int | str | None = None
    for part in loc:
        if part == "[key]":
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        elif previous in _MAPPING_FIELDS:
            path += f"[{quote(part)}]"
        else:
            path += f".{part}" if path else part
        previous = part
    return path


def _join(path: str, field: str) -> str:
    if not field:
        return path
    if not path or field.startswith("["):
        return path + field
    return f"{path}.{field}"


def _shown_input(value: Any) -> str:
    if isinstance(value, str):
        return quote(value)
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except ValueError:
        return repr(value)


def describe_validation_error(exc: ValidationError, *, prefix: str = "") -> str:
    """Turn a pydantic ValidationError into one line: ``<field path>: <problem>``.

    Only the first error is described; the count of further ones is appended.
    """
    errors = exc.errors()
    first = errors[0]
    context = first.get("ctx") or {}
    path = _location(tuple(first["loc"]), prefix=prefix)
    if first["type"] == "label_selector":
        path = _join(path, str(context.get("field", "")))
        problem = str(context["problem"])
    elif first["type"] == "value_error":
        problem = str(context.get("error", first["msg"]))
    elif first["type"] in ("missing", "extra_forbidden"):
        problem = _PROBLEM_BY_TYPE[first["type"]]
    elif first["type"] in _PROBLEM_BY_TYPE:
        problem = f"{_PROBLEM_BY_TYPE[first['type']]}, got {_shown_input(first['input'])}"
    else:
        problem = first["msg"]
    line = f"{path}: {problem}" if path else problem
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return " ".join(line.splitlines())
