"""Decoding of the API server's JSON, with the limits that keep one poison object harmless.

The API server stores whatever a CRD's ``x-kubernetes-preserve-unknown-fields`` lets through,
and Go decodes JSON nested 10,000 levels deep; Python's ``json`` gives up near 1,000 (a
``RecursionError``), and the operator's own code walks objects recursively too. So every
document read from the API server goes through :func:`loads`: the C decoder first (the normal,
fast path); only when it recurses too deep does a slower pass replace every value nested deeper
than :data:`DOCUMENT_DEPTH_CAP` by a placeholder string and decode the rest. The other items of
a list, and the poison item's own metadata (which is shallow), are still there.

:func:`object_problem` then says, per object, why it cannot be used: not an object, no name,
nested more than :data:`MAX_OBJECT_DEPTH` levels deep (``spec.nodeSets[0].config: nested more
than 400 levels deep``), or larger than :data:`MAX_OBJECT_BYTES`. Such an object is *quarantined*
by its reader: skipped, reported once, never fatal (see ``stackflow.kube.informer``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DOCUMENT_DEPTH_CAP",
    "MAX_OBJECT_BYTES",
    "MAX_OBJECT_DEPTH",
    "QUARANTINED_KEY",
    "DocumentError",
    "Quarantined",
    "cap_nesting",
    "loads",
    "may_nest_deeper",
    "object_problem",
    "too_deep_path",
]

#: The deepest nesting an object may have (the object itself is level 1). Real Kubernetes
#: objects stay below 20. Above the spec validators' bound (200 levels below ``spec``,
#: ``stackflow.stack.spec_shapes.MAX_SPEC_DEPTH``), so that an object they refuse with a
#: condition still reaches them; below what Python's decoder (about 1,000 levels) and the
#: operator's recursive code (``copy.deepcopy``: about 450) survive.
MAX_OBJECT_DEPTH = 400

#: A document (a list, a watch event, an AdmissionReview) wraps its objects in a few levels
#: more; beyond this cap the fallback decoder keeps a placeholder instead of the value.
DOCUMENT_DEPTH_CAP = MAX_OBJECT_DEPTH + 8

#: The largest watch event line read (the API server refuses objects over 3 MiB anyway).
MAX_OBJECT_BYTES = 4 * 1024 * 1024

#: The key under which a list (next to ``items``) or a watch event (instead of ``object``)
#: describes the objects that could not be used (``Quarantined.to_dict()``).
QUARANTINED_KEY = "stackflow.quarantined"

#: What the fallback decoder leaves where a value was nested too deep.
TOO_DEEP_PLACEHOLDER = "<nested too deep>"

#: How many leading segments of a too-deep path a message names (the field, not its depths).
_PATH_SEGMENTS_SHOWN = 4

# A JSON string (with its escapes) or one bracket: the only tokens that change the nesting.
_NESTING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class DocumentError(ValueError):
    """The bytes are not JSON at all (the message says where)."""


@dataclass(frozen=True)
class Quarantined:
    """An object that was read but cannot be used: who it is (as far as known) and why."""

    problem: str
    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""

    @classmethod
    def of(cls, obj: object, problem: str) -> Quarantined:
        """Name ``obj`` by whatever of its identity is readable (nothing when it is no object)."""
        top = obj if isinstance(obj, Mapping) else {}
        metadata = top.get("metadata")
        meta = metadata if isinstance(metadata, Mapping) else {}

        def text(source: Mapping[str, Any], key: str) -> str:
            value = source.get(key)
            return value if isinstance(value, str) else ""

        return cls(
            problem=problem,
            api_version=text(top, "apiVersion"),
            kind=text(top, "kind"),
            namespace=text(meta, "namespace"),
            name=text(meta, "name"),
            uid=text(meta, "uid"),
            resource_version=text(meta, "resourceVersion"),
        )

    def to_dict(self) -> dict[str, str]:
        """Plain JSON (it travels next to the items of a list)."""
        return {
            "problem": self.problem,
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Quarantined:
        """The inverse of :meth:`to_dict`."""
        return cls(
            problem=str(data.get("problem") or ""),
            api_version=str(data.get("apiVersion") or ""),
            kind=str(data.get("kind") or ""),
            namespace=str(data.get("namespace") or ""),
            name=str(data.get("name") or ""),
            uid=str(data.get("uid") or ""),
            resource_version=str(data.get("resourceVersion") or ""),
        )


def cap_nesting(text: str, cap: int = DOCUMENT_DEPTH_CAP) -> str:
    """``text`` with every array or object nested deeper than ``cap`` levels replaced by
    :data:`TOO_DEEP_PLACEHOLDER` (a JSON string), so that it decodes without recursing deeper.

    Works on the tokens that change the nesting (strings are skipped whole, so brackets inside
    them do not count); the rest of the text is copied as is (pure).
    """
    pieces: list[str] = []
    copied_up_to = 0
    depth = 0
    skipping_from = -1  # where the value being replaced starts
    for match in _NESTING_TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            depth += 1
            if depth == cap + 1 and skipping_from < 0:
                skipping_from = match.start()
        elif token in ("}", "]"):
            depth -= 1
            if depth == cap and skipping_from >= 0:
                pieces.append(text[copied_up_to:skipping_from])
                pieces.append(json.dumps(TOO_DEEP_PLACEHOLDER))
                copied_up_to = match.end()
                skipping_from = -1
    pieces.append(text[copied_up_to:])
    return "".join(pieces)


def loads(raw: bytes | str) -> Any:
    """Decode a JSON document from the API server; never raises ``RecursionError``.

    The stdlib decoder first; a document nested too deep for it is decoded again with every
    value deeper than :data:`DOCUMENT_DEPTH_CAP` replaced (:func:`cap_nesting`), so the objects
    it holds can still be named and judged by :func:`object_problem`. Raises
    :class:`DocumentError` for bytes that are not JSON.
    """
    try:
        return json.loads(raw)
    except RecursionError:
        pass
    except (ValueError, UnicodeDecodeError) as error:
        raise DocumentError(f"not JSON: {error}") from None
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
        return json.loads(cap_nesting(text))
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise DocumentError(f"not JSON: {error}") from None


def _exceeds(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` levels (level by level, without
    recursion, so any depth is safe)."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        for container in level:
            for child in container.values() if type(container) is dict else container:
                kind = type(child)
                if kind is dict or kind is list:
                    below.append(child)
        level = below
        depth += 1
    return False


def may_nest_deeper(raw: bytes | str, limit: int = MAX_OBJECT_DEPTH) -> bool:
    """False when ``raw`` cannot hold anything nested deeper than ``limit`` levels (pure).

    Every array or object opens with a bracket, so fewer brackets than ``limit`` (brackets in
    strings only add to the count) prove the nesting shallow without decoding: the common case,
    for which :func:`object_problem` then skips its walk.
    """
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[") > limit
    return raw.count(b"{") + raw.count(b"[") > limit


def _segment(key: object, *, first: bool) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    return str(key) if first else f".{key}"


def too_deep_path(value: object, limit: int = MAX_OBJECT_DEPTH) -> str | None:
    """The field path (its first segments, e.g. ``spec.nodeSets[0].config``) under which
    ``value`` nests deeper than ``limit`` levels, or None when it does not (pure).

    A placeholder left by the fallback decoder is always found: it sits below
    ``DOCUMENT_DEPTH_CAP`` levels, deeper than ``limit`` within any object a document holds.
    """
    if not _exceeds(value, limit):
        return None
    pending: list[tuple[Any, int, tuple[object, ...]]] = [(value, 1, ())]
    while pending:
        current, depth, path = pending.pop()
        if depth > limit:
            shown = path[:_PATH_SEGMENTS_SHOWN]
            return "".join(_segment(key, first=index == 0) for index, key in enumerate(shown))
        items: list[tuple[object, Any]] = []
        if isinstance(current, dict):
            items = list(current.items())
        elif isinstance(current, list):
            items = list(enumerate(current))
        for key, child in reversed(items):
            if isinstance(child, dict | list):
                pending.append((child, depth + 1, (*path, key)))
    return None  # pragma: no cover - _exceeds said there is one


def object_problem(
    obj: object, *, max_depth: int = MAX_OBJECT_DEPTH, may_be_deep: bool = True
) -> str | None:
    """Why ``obj`` (one decoded Kubernetes object) cannot be used, or None when it can (pure).

    The shape a reader relies on: a JSON object whose ``metadata`` is an object with a string
    ``name``; and no nesting deeper than ``max_depth`` levels (named by its field path).
    ``may_be_deep`` False (see :func:`may_nest_deeper`) skips the walk that measures the nesting.
    """
    if not isinstance(obj, dict):
        return f"the object is a JSON {_json_type(obj)}, not an object"
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return f"metadata: must be an object, not a JSON {_json_type(metadata)}"
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name: Required value"
    for key in ("namespace", "resourceVersion", "uid"):
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            return f"metadata.{key}: must be a string, not a JSON {_json_type(value)}"
    path = too_deep_path(obj, max_depth) if may_be_deep else None
    if path is not None:
        return f"{path or '(the object)'}: nested more than {max_depth} levels deep"
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
