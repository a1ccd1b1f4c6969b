"""Field-by-field comparison of two normalized transcripts, tolerating documented differences.

A transcript is flattened to ``{path: value}`` where a path is the step name followed by the keys
and list indexes down to a scalar (``create.body.metadata.labels.app``,
``list.body.items[1].metadata.name``). Empty maps and lists are kept as values, so a field present
as ``{}`` on one side and absent on the other is a difference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.conformance.differences import ANY_CHECK, Difference

ABSENT = "<absent>"


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """``{path: scalar}`` for a JSON value (empty containers are scalars)."""
    out: dict[str, Any] = {}
    if isinstance(value, dict) and value:
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}"))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
    else:
        out[prefix] = value
    return out


def flatten_transcript(entries: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The flattened form of a whole transcript (steps in order)."""
    out: dict[str, Any] = {}
    for step, data in entries:
        out.update(flatten(data, step))
    return out


@dataclass(frozen=True)
class FieldDiff:
    """One path whose value differs (``ABSENT`` when a side lacks it)."""

    path: str
    kubesim: Any
    apiserver: Any

    def render(self) -> str:
        """``path: kubesim=… apiserver=…``."""
        return f"  {self.path}\n      kubesim:   {_show(self.kubesim)}\n      apiserver: {_show(self.apiserver)}"


@dataclass
class Comparison:
    """The outcome for one check: undocumented and documented (tolerated) differences."""

    check: str
    failures: list[FieldDiff] = field(default_factory=list)
    tolerated: list[FieldDiff] = field(default_factory=list)
    #: The documented differences of this check that matched at least one path.
    used: list[Difference] = field(default_factory=list)
    #: Rows documented for this very check that matched nothing (stale documentation).
    stale: list[Difference] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """No difference at all."""
        return not self.failures and not self.tolerated

    @property
    def passed(self) -> bool:
        """Every difference is documented, and every row documented for this check still applies."""
        return not self.failures and not self.stale

    def report(self) -> str:
        """A readable field-by-field account of what failed."""
        lines = [f"check {self.check!r}:"]
        if self.failures:
            lines.append(f"{len(self.failures)} undocumented difference(s):")
            lines += [diff.render() for diff in self.failures]
        for row in self.stale:
            lines.append(
                f"documented difference no longer seen (remove it from differences.py): "
                f"{row.check} {', '.join(row.paths)}"
            )
        return "\n".join(lines)


def path_pattern(pattern: str) -> re.Pattern[str]:
    """A documented path as a regular expression: ``*`` is any text, everything else literal
    (list indexes such as ``[0]`` included)."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")) + r"\Z")


def matches(row: Difference, check: str, path: str) -> bool:
    """Whether a documented difference covers ``path`` of ``check``."""
    if row.check not in (check, ANY_CHECK):
        return False
    return any(path_pattern(pattern).match(path) for pattern in row.paths)


def compare(
    check: str,
    kubesim: dict[str, Any],
    apiserver: dict[str, Any],
    differences: Sequence[Difference],
) -> Comparison:
    """Compare two flattened transcripts of ``check``."""
    result = Comparison(check)
    used: list[Difference] = []
    for path in _ordered_union(kubesim, apiserver):
        left = kubesim.get(path, ABSENT)
        right = apiserver.get(path, ABSENT)
        if _same(left, right):
            continue
        diff = FieldDiff(path, left, right)
        covering = [row for row in differences if matches(row, check, path)]
        if covering:
            result.tolerated.append(diff)
            used += [row for row in covering if row not in used]
        else:
            result.failures.append(diff)
    result.used = used
    result.stale = [row for row in differences if row.check == check and row not in used]
    return result


def _same(left: Any, right: Any) -> bool:
    # 1 and 1.0 are the same JSON number, True and 1 are not.
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)


def _ordered_union(left: dict[str, Any], right: dict[str, Any]) -> list[str]:
    seen = dict.fromkeys(left)
    for key in right:
        seen.setdefault(key, None)
    return list(seen)


def _show(value: Any) -> str:
    if value == ABSENT:
        return ABSENT
    text = json.dumps(value)
    return text if len(text) <= 300 else text[:297] + "..."
