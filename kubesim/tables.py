"""Server-side printing: ``meta.k8s.io/v1`` Table bodies for ``kubectl get`` (§2.5).

The built-in kinds print the columns of the real API server's printers (kubernetes
``pkg/printers/internalversion``, v1.37): the column definitions are the server's own
(:mod:`kubesim.printer_columns`), and the cells are computed as its print functions compute
them (:mod:`kubesim.printers`), ``wide`` columns included (the server always sends them; the
column's priority tells kubectl whether to show it). Kinds without a printer (Roles,
ClusterRoles) get the default ``Name`` + ``Created At`` table; custom resources get ``Name``
plus their ``additionalPrinterColumns``, or ``Age``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubesim.printer_columns import (
    BUILTIN_COLUMNS,
    CUSTOM_RESOURCE_AGE,
    DEFAULT_COLUMNS,
    NAME,
)
from kubesim.printers import builtin_cells, human_duration, parse_time
from kubesim.resource_type import ResourceType

INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")
_SEGMENT = re.compile(r"^([^\[\]]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")


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


# -- custom resources -------------------------------------------------------------------------


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
        if not isinstance(value, str):
            return None
        timestamp = parse_time(value)
        return (
            "<invalid>" if timestamp is None else human_duration((now - timestamp).total_seconds())
        )
    if column_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    return None


def _column(name: str, kind: str, priority: int, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "name" if name == "Name" else "",
        "description": description,
        "priority": priority,
    }


def column_definitions(rt: ResourceType) -> list[dict[str, Any]]:
    """The Table columns of a kind: its printer's, the default ones, or a CRD's printer columns."""
    if not rt.custom:
        columns = BUILTIN_COLUMNS.get((rt.group, rt.plural), DEFAULT_COLUMNS)
        return [_column(*column) for column in columns]
    defined = [_column(*NAME)]
    if not rt.printer_columns:
        return [*defined, _column(*CUSTOM_RESOURCE_AGE)]
    for column in rt.printer_columns:
        # Without a description the server describes where the cells come from.
        description = str(column.get("description") or "") or (
            f"Custom resource definition column (in JSONPath format): {column.get('jsonPath', '')}"
        )
        defined.append(
            {
                "name": str(column.get("name", "")),
                "type": str(column.get("type", "string")),
                "format": str(column.get("format", "")),
                "description": description,
                "priority": int(column.get("priority", 0)),
            }
        )
    return defined


def _cells(rt: ResourceType, obj: Mapping[str, Any], now: datetime) -> list[Any]:
    if not rt.custom:
        return builtin_cells(rt.group, rt.plural, obj, now)
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    if not rt.printer_columns:
        return [meta.get("name", ""), _typed_cell("date", meta.get("creationTimestamp"), now)]
    cells: list[Any] = [meta.get("name", "")]
    for column in rt.printer_columns:
        found, value = json_path_value(obj, str(column.get("jsonPath", "")))
        column_type = str(column.get("type", "string"))
        cells.append(_typed_cell(column_type, value, now) if found else None)
    return cells


#: Annotations that exist only in a kind's versioned form (the internal type holds a field
#: instead): the metadata of a row, taken from the internal object, lacks them.
_VERSIONED_ONLY_ANNOTATIONS = {("apps", "daemonsets"): "deprecated.daemonset.template.generation"}


def _row_object(rt: ResourceType, obj: Mapping[str, Any], include_object: str) -> Any:
    if include_object == "Object":
        return dict(obj)
    metadata = dict(obj.get("metadata") or {})
    hidden = _VERSIONED_ONLY_ANNOTATIONS.get((rt.group, rt.plural))
    if hidden and not rt.custom and hidden in (metadata.get("annotations") or {}):
        annotations = {k: v for k, v in metadata["annotations"].items() if k != hidden}
        if annotations:
            metadata["annotations"] = annotations
        else:
            del metadata["annotations"]
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}


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
    ``None`` (``object: null`` in rows). ``with_columns=False`` sends ``columnDefinitions: null``
    (watch events after the first). ``now`` is the reference time for age cells (default: now).
    """
    moment = now or datetime.now(UTC)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": _cells(rt, obj, moment)}
        # includeObject=None leaves the row's object null (the field is still written).
        row["object"] = None if include_object == "None" else _row_object(rt, obj, include_object)
        rows.append(row)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta),
    }
    # Watch events after the first carry no column definitions: null, as the real server.
    table["columnDefinitions"] = column_definitions(rt) if with_columns else None
    table["rows"] = rows
    return table
