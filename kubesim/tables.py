"""Server-side printing: ``meta.k8s.io/v1`` Table bodies for ``kubectl get`` (§2.5)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubesim.resource_type import ResourceType

_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
_CREATED_AT_COLUMN = {
    "name": "Created At",
    "type": "date",
    "format": "",
    "description": "CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
    "priority": 0,
}
_AGE_COLUMN = {
    "name": "Age",
    "type": "date",
    "format": "",
    "description": "CreationTimestamp is a timestamp representing the server time when this object "
    "was created.",
    "priority": 0,
}
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")
_SEGMENT = re.compile(r"^([^\[\]]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")


def human_duration(seconds: float) -> str:
    """Age as ``kubectl`` prints it (apimachinery ``duration.HumanDuration``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def parse_time(text: str) -> datetime | None:
    """Parse an RFC3339 timestamp (``Z`` or offset, optional fraction); None when malformed."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def json_path_value(obj: Any, path: str) -> tuple[bool, Any]:
    """Evaluate a simple JSONPath (``.a.b``, ``.a[0].b``, optionally in braces): (found, value)."""
    expression = path.strip()
    if expression.startswith("{") and expression.endswith("}"):
        expression = expression[1:-1]
    current = obj
    for segment in expression.strip().removeprefix(".").split("."):
        if segment == "":
            continue
        match = _SEGMENT.match(segment)
        if match is None:
            return (False, None)
        key, indexes = match.groups()
        if key:
            if not isinstance(current, Mapping) or key not in current:
                return (False, None)
            current = current[key]
        for index in (int(i) for i in _INDEX.findall(indexes)):
            if not isinstance(current, list) or index >= len(current):
                return (False, None)
            current = current[index]
    return (True, current)


def _age_cell(value: Any, now: datetime) -> Any:
    if not isinstance(value, str):
        return None
    timestamp = parse_time(value)
    if timestamp is None:
        return "<invalid>"
    return human_duration((now - timestamp).total_seconds())


def _string_cell(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _typed_cell(column_type: str, value: Any, now: datetime) -> Any:
    """A printer-column cell as apiextensions' ``cellForJSONValue`` types it."""
    if value is None:
        return None
    if column_type == "string":
        return _string_cell(value)
    if column_type == "date":
        return _age_cell(value, now)
    if column_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    return None


def column_definitions(rt: ResourceType) -> list[dict[str, Any]]:
    """The Table columns for a kind: Name + Created At (built-ins), Name + printer columns or Age (CRs)."""
    if not rt.custom:
        return [dict(_NAME_COLUMN), dict(_CREATED_AT_COLUMN)]
    if not rt.printer_columns:
        return [dict(_NAME_COLUMN), dict(_AGE_COLUMN)]
    columns = [dict(_NAME_COLUMN)]
    for column in rt.printer_columns:
        columns.append(
            {
                "name": str(column.get("name", "")),
                "type": str(column.get("type", "string")),
                "format": str(column.get("format", "")),
                "description": str(column.get("description", "")),
                "priority": int(column.get("priority", 0)),
            }
        )
    return columns


def _cells(rt: ResourceType, obj: Mapping[str, Any], now: datetime) -> list[Any]:
    meta = obj.get("metadata") or {}
    created = meta.get("creationTimestamp")
    if not rt.custom:
        return [meta.get("name", ""), created]
    if not rt.printer_columns:
        return [meta.get("name", ""), _age_cell(created, now)]
    cells: list[Any] = [meta.get("name", "")]
    for column in rt.printer_columns:
        found, value = json_path_value(obj, str(column.get("jsonPath", "")))
        column_type = str(column.get("type", "string"))
        cells.append(_typed_cell(column_type, value, now) if found else None)
    return cells


def _row_object(rt: ResourceType, obj: Mapping[str, Any], include_object: str) -> Any:
    if include_object == "Object":
        return dict(obj)
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(obj.get("metadata") or {}),
    }


def to_table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    *,
    include_object: str,
    list_meta: dict[str, Any],
    with_columns: bool = True,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects``.

    ``include_object`` is ``Metadata`` (PartialObjectMetadata rows), ``Object`` (full objects) or
    ``None`` (no ``object`` in rows). ``with_columns=False`` leaves out the column definitions
    (watch events after the first). ``now`` is the reference time for age cells (default: now).
    """
    moment = now or datetime.now(UTC)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": _cells(rt, obj, moment)}
        if include_object != "None":
            row["object"] = _row_object(rt, obj, include_object)
        rows.append(row)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
    }
    if with_columns:
        table["columnDefinitions"] = column_definitions(rt)
    table["rows"] = rows
    return table
