"""Reading documents a user wrote (YAML or JSON text) with bounds, before anything is built on them.

A few hundred bytes of YAML with anchors and aliases expand to gigabytes once anything copies or
serialises the result, and a document nested a few thousand levels deep overflows Python's
recursion (the decoders, ``copy.deepcopy``, ``json.dumps``). Every reader of such text — the
operator's configuration file, a configRef Secret, an annotation holding JSON — goes through here,
so each of those refusals is one message naming where, never a ``RecursionError``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

#: Deep enough for any settings document a person writes, shallow enough that every later copy,
#: merge or serialisation of it stays far from Python's recursion limit.
MAX_DOCUMENT_NESTING = 100


class DocumentYAMLError(yaml.YAMLError):
    """YAML refused although it parses: an alias, an anchor, nesting too deep, a key given twice.
    ``path`` is where (``namespace-selector.matchLabels``), ``mark`` the line."""

    def __init__(self, path: str, problem: str, mark: Any, *, detail: str = "") -> None:
        """Keep where and what; `describe` puts them on one line."""
        super().__init__(problem)
        self.path = path
        self.problem = problem
        self.mark = mark
        self.detail = detail

    def describe(self) -> str:
        """``<path>: <problem> at line L, column C (<detail>)`` (one line)."""
        line = f"{self.path}: {self.problem}" if self.path else self.problem
        if self.mark is not None:
            line += f" at line {self.mark.line + 1}, column {self.mark.column + 1}"
        return f"{line} ({self.detail})" if self.detail else line

    def __str__(self) -> str:
        """The one-line description."""
        return self.describe()


class DocumentJSONError(ValueError):
    """JSON refused although it parses: nested deeper than the bound."""


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing anchors and aliases, deep nesting and duplicate keys while it
    composes the document, before anything is expanded or constructed."""

    def __init__(self, stream: str, max_nesting: int) -> None:
        super().__init__(stream)
        self._max_nesting = max_nesting
        self._path: list[str] = []
        self._depth = 0  # not len(_path): a complex key (``? [..]``) nests without a path step

    def _where(self) -> str:
        return "".join(
            part if part.startswith("[") or index == 0 else f".{part}"
            for index, part in enumerate(self._path)
        )

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # The stubs say int; PyYAML passes the key node for a mapping's value.
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        step: str | None = None
        key: object = index
        if isinstance(parent, yaml.MappingNode) and isinstance(key, yaml.ScalarNode):
            step = str(key.value)
        elif isinstance(parent, yaml.SequenceNode) and isinstance(index, int):
            step = f"[{index}]"
        if step is not None:
            self._path.append(step)
        self._depth += 1
        try:
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise DocumentYAMLError(
                    self._where(),
                    "YAML anchors and aliases (&name, *name) are not allowed",
                    event.start_mark,
                )
            if self._depth > self._max_nesting + 1:  # the document's own mapping is level 0
                raise DocumentYAMLError(
                    self._path[0] if self._path else "",  # the whole path is as long as the nesting
                    f"nested more than {self._max_nesting} levels deep",
                    event.start_mark,
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if step is not None:
                self._path.pop()
        return node

    def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
        node = super().compose_mapping_node(anchor)
        first: dict[tuple[str, str], yaml.Mark] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue  # a complex key: the constructor names it, unhashable
            seen = first.setdefault((key.tag, key.value), key.start_mark)
            if seen is not key.start_mark:
                self._path.append(str(key.value))
                where = self._where()
                self._path.pop()
                raise DocumentYAMLError(
                    where,
                    "duplicate key",
                    key.start_mark,
                    detail=f"first given at line {seen.line + 1}",
                )
        return node


def load_bounded_yaml(text: str, *, max_nesting: int = MAX_DOCUMENT_NESTING) -> object:
    """Parse one YAML document, refusing anchors and aliases, nesting deeper than ``max_nesting``
    and duplicate keys.

    Raises DocumentYAMLError for what the bounds refuse, another yaml.YAMLError for invalid YAML.
    """
    loader = _BoundedLoader(text, max_nesting)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def nesting_depth(value: object) -> int:
    """How many maps and lists deep ``value`` goes (a scalar is 0); iterative, so any depth."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = list(item)
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def load_bounded_json(text: str | bytes, *, max_nesting: int = MAX_DOCUMENT_NESTING) -> Any:
    """Parse JSON text, refusing nesting deeper than ``max_nesting``.

    Raises ValueError (``json.JSONDecodeError`` or DocumentJSONError) for anything refused, so a
    reader's existing ``except ValueError`` covers the too-deep document as well.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise DocumentJSONError(f"nested more than {max_nesting} levels deep") from None
    if nesting_depth(value) > max_nesting:
        raise DocumentJSONError(f"nested more than {max_nesting} levels deep")
    return value
