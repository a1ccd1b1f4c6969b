"""Masking what legitimately differs from one run to the next, and nothing else.

Masked, everywhere in a transcript:

* uids (any UUID, also inside messages) → ``<uid>``;
* resourceVersions (``resourceVersion`` values, and the numbers of the resourceVersion messages)
  → ``<rv>``; how they *behave* is recorded by the checks as facts (changed, unchanged, ordered);
* timestamps → ``<time>`` (seconds) / ``<microtime>`` (6 fractional digits) / ``<time.N>``
  (another precision), so the format is still compared;
* IPv4 addresses → ``<ip>``; the port of a 127.0.0.1 URL → ``<port>``;
* continue tokens → ``<continue>`` (opaque, they encode a resourceVersion);
* names the server generated from a ``generateName``, and node names → ``<generated>``/``<node>``;
* ``caBundle`` and token values (certificates are generated per run);
* Table cells of age columns and kubectl's AGE cells → ``<age>``.

kubectl text output is compared cell by cell (columns are split on runs of spaces, since column
widths follow the masked values).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.(\d+))?(?:Z|[+-]\d{2}:\d{2})$")
IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
LOOPBACK_PORT = re.compile(r"127\.0\.0\.1:\d+")
#: Messages that quote resourceVersions.
RV_MESSAGES = (
    (re.compile(r"too old resource version: \d+ \(\d+\)"), "too old resource version: <rv> (<rv>)"),
    (
        re.compile(r"Too large resource version: \d+, current: \d+"),
        "Too large resource version: <rv>, current: <rv>",
    ),
    (re.compile(r"ResourceVersion in precondition: \d+"), "ResourceVersion in precondition: <rv>"),
    (re.compile(r"ResourceVersion in object meta: \d+"), "ResourceVersion in object meta: <rv>"),
    (
        re.compile(
            r"ResourceVersion in the precondition \(\d+\) does not match the ResourceVersion in record \(\d+\)"
        ),
        "ResourceVersion in the precondition (<rv>) does not match the ResourceVersion in record (<rv>)",
    ),
)
#: Names with a random suffix the server generates (the ServiceAccount token volume of a Pod).
GENERATED_NAMES = ((re.compile(r"kube-api-access-[a-z0-9]{5}"), "kube-api-access-<generated>"),)
#: A human duration as apimachinery prints it (``5s``, ``2m3s``, ``4h``, ``3d5h``, ``2y``).
DURATION = re.compile(r"^(?:\d+[smhdy]){1,2}$|^<invalid>$|^<unknown>$")
RESTARTS_AGO = re.compile(r"\(\S+ ago\)")
#: Table columns whose cells are ages.
AGE_COLUMNS = frozenset({"Age", "Last Seen", "First Seen", "Duration", "Last Schedule"})
VOLATILE_KEYS = {
    "uid": "<uid>",
    "resourceVersion": "<rv>",
    "caBundle": "<ca>",
    "token": "<token>",
}
KUBECTL_AGE_HEADERS = frozenset({"AGE", "LAST SEEN", "FIRST SEEN", "DURATION"})


def timestamp_mask(text: str) -> str | None:
    """``<time>``-style mask for an RFC 3339 timestamp, None for any other text."""
    match = TIMESTAMP.match(text)
    if match is None:
        return None
    fraction = match.group(1)
    if fraction is None:
        return "<time>"
    if len(fraction) == 6:
        return "<microtime>"
    return f"<time.{len(fraction)}>"


class Normalizer:
    """Masks one run's transcript: its node names and generated names, plus the general rules."""

    def __init__(self, *, node_names: Iterable[str], substitutions: Mapping[str, str]) -> None:
        """``substitutions`` are literal replacements collected by the run (longest first)."""
        literal = dict.fromkeys(node_names, "<node>")
        literal.update(substitutions)
        self._literal = sorted(literal.items(), key=lambda item: -len(item[0]))

    def text(self, value: str) -> str:
        """Mask the volatile parts of a string."""
        mask = timestamp_mask(value)
        if mask is not None:
            return mask
        for literal, replacement in self._literal:
            if literal in value:
                value = value.replace(literal, replacement)
        value = UUID.sub("<uid>", value)
        for pattern, replacement in GENERATED_NAMES:
            value = pattern.sub(replacement, value)
        value = LOOPBACK_PORT.sub("127.0.0.1:<port>", value)
        value = IPV4.sub("<ip>", value)
        for pattern, replacement in RV_MESSAGES:
            value = pattern.sub(replacement, value)
        return value

    def value(self, value: Any, *, key: str | None = None) -> Any:
        """Mask a JSON value found under ``key``."""
        if isinstance(value, dict):
            if value.get("kind") == "Table" and isinstance(value.get("rows"), list):
                return self._table(value)
            return {name: self.value(item, key=name) for name, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, key=key) for item in value]
        if isinstance(value, str):
            if key in VOLATILE_KEYS and value:
                return VOLATILE_KEYS[key]
            if key == "continue" and value:
                return "<continue>"
            return self.text(value)
        return value

    def _table(self, table: dict[str, Any]) -> dict[str, Any]:
        masked: dict[str, Any] = {
            name: self.value(item, key=name) for name, item in table.items() if name != "rows"
        }
        columns = [
            str(column.get("name", ""))
            for column in table.get("columnDefinitions") or []
            if isinstance(column, dict)
        ]
        rows = []
        for row in table["rows"]:
            cells = row.get("cells") if isinstance(row, dict) else None
            out = self.value(row)
            if isinstance(cells, list):
                out["cells"] = [
                    self._cell(columns[index] if index < len(columns) else "", cell)
                    for index, cell in enumerate(cells)
                ]
            rows.append(out)
        masked["rows"] = rows
        return masked

    def _cell(self, column: str, cell: Any) -> Any:
        if isinstance(cell, str):
            if column in AGE_COLUMNS and DURATION.match(cell):
                return "<age>"
            if column == "Restarts":
                return RESTARTS_AGO.sub("(<age> ago)", cell)
        return self.value(cell)

    def kubectl_output(self, text: str) -> list[list[str]]:
        """kubectl's output as lines of cells (split on 2+ spaces), ages and volatile values masked."""
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return []
        rows = [re.split(r"\s{2,}", line.strip()) for line in lines]
        out = []
        age_columns: set[int] = set()
        for row in rows:
            header = row[0] == "NAME"
            if header:
                # `kubectl get all` prints one table per kind, each with its own header.
                age_columns = {i for i, name in enumerate(row) if name in KUBECTL_AGE_HEADERS}
            cells = []
            for index, cell in enumerate(row):
                if not header and index in age_columns and DURATION.match(cell):
                    cells.append("<age>")
                else:
                    cells.append(RESTARTS_AGO.sub("(<age> ago)", self.text(cell)))
            out.append(cells)
        return out

    def entry(self, data: Any) -> Any:
        """Mask one transcript entry (kubectl entries get their output split into cells)."""
        if isinstance(data, dict) and set(data) == {"exit", "stdout", "stderr"}:
            return {
                "exit": data["exit"],
                "stdout": self.kubectl_output(data["stdout"]),
                "stderr": [self.text(line) for line in data["stderr"].splitlines() if line],
            }
        return self.value(data)
