"""ECK's child-object naming (the Namer) and ``hash.HashObject`` (FNV-32a over go-spew text).

ECK derives child names as ``<owner>-<short>-<parts…>`` and, in a few places, puts a hash of a Go value
into a name or a label. Names must match ECK's byte for byte so that a cluster created by ECK is adopted
unchanged, so the hash reproduces go-spew's ``%#v`` rendering (``SortKeys``, ``DisableMethods``,
``SpewKeys``) of the Go value. Python values stand in for Go values as follows:

* ``str`` → ``string``; ``bool`` → ``bool``; ``int`` → ``int`` (use :class:`GoInt` for a sized type);
* :class:`GoStruct` → a named struct, fields in declaration order;
* :class:`GoPointer` → a pointer (``None`` target renders as ``<nil>``);
* ``dict`` → a map (type given by :class:`GoMap` or ``map[string]interface {}``), keys sorted;
* ``list``/``tuple`` → a slice (type given by :class:`GoSlice` or ``[]interface {}``);
* ``None`` → an untyped nil interface (``<nil>``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

MAX_NAME_LENGTH = 253
"""Kubernetes DNS-1123 subdomain limit: the longest child name the Namer returns."""

MAX_RESOURCE_NAME_LENGTH = 36
"""Longest custom-resource name ECK's webhook accepts, so that derived names stay label-safe."""

FNV32_OFFSET_BASIS = 0x811C9DC5
FNV32_PRIME = 0x01000193


@dataclass(frozen=True)
class Namer:
    """Builds child names ``<owner>-<short>[-<part>…]`` as ECK's ``name.Namer.Suffix`` does."""

    short: str
    max_name_length: int = MAX_NAME_LENGTH

    def suffix(self, owner: str, *parts: str) -> str:
        """Return the child name for ``owner`` with ``parts`` appended, truncating the owner if too long.

        ECK logs an error and truncates the owner part rather than fail: names are validated upstream
        (owner ≤ 36 chars), so truncation only protects against objects that bypassed the webhook.
        """
        suffix = "-" + "-".join((self.short, *parts))
        if len(suffix) >= self.max_name_length:
            # Only reachable with absurd node set names; keep a one-character owner prefix.
            suffix = suffix[: self.max_name_length - 1]
        room_for_owner = self.max_name_length - len(suffix)
        return owner[:room_for_owner] + suffix


ES_NAMER = Namer("es")


@dataclass(frozen=True)
class GoInt:
    """An integer of a named Go type (``int32``, ``int64``, ``uint16``…)."""

    value: int
    type_name: str = "int"


@dataclass(frozen=True)
class GoPointer:
    """A pointer to ``target`` (``None`` for a nil pointer) whose element type is ``type_name``."""

    type_name: str
    target: object = None


@dataclass(frozen=True)
class GoStruct:
    """A Go struct value: its qualified type name (``v1.ObjectSelector``) and its fields in order."""

    type_name: str
    fields: tuple[tuple[str, object], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class GoMap:
    """A map with an explicit Go type name, e.g. ``map[string]string``."""

    type_name: str
    entries: Mapping[str, object]


@dataclass(frozen=True)
class GoSlice:
    """A slice with an explicit Go type name, e.g. ``[]string``; ``items=None`` is a nil slice."""

    type_name: str
    items: Sequence[object] | None


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, GoInt):
        return value.type_name
    if isinstance(value, GoStruct | GoMap | GoSlice):
        return value.type_name
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    raise TypeError(f"no Go rendering for {type(value).__name__}")


def _render(value: object, out: list[str], *, show_type: bool) -> None:
    if value is None:
        out.append("<nil>")
        return
    if isinstance(value, GoPointer):
        # spew prints a pointer's type unless the container already implied it, then the target.
        out.append(f"(*{value.type_name})" if show_type else "<*>")
        if value.target is None:
            out.append("<nil>")
        else:
            _render(value.target, out, show_type=False)
        return
    if show_type:
        out.append(f"({_type_name(value)})")
    if isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, str):
        out.append(value)
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(repr(value))
    elif isinstance(value, GoInt):
        out.append(str(value.value))
    elif isinstance(value, GoStruct):
        out.append("{")
        for index, (name, field_value) in enumerate(value.fields):
            if index:
                out.append(" ")
            out.append(f"{name}:")
            _render(field_value, out, show_type=True)
        out.append("}")
    elif isinstance(value, GoMap | Mapping):
        entries = value.entries if isinstance(value, GoMap) else value
        out.append("map[")
        for index, key in enumerate(sorted(entries)):
            if index:
                out.append(" ")
            _render(key, out, show_type=False)
            out.append(":")
            _render(entries[key], out, show_type=False)
        out.append("]")
    else:
        items = value.items if isinstance(value, GoSlice) else value
        if items is None:
            out.append("<nil>")
            return
        assert isinstance(items, Sequence)
        out.append("[")
        for index, item in enumerate(items):
            if index:
                out.append(" ")
            _render(item, out, show_type=False)
        out.append("]")


def spew_text(value: object) -> str:
    """Return go-spew's ``%#v`` rendering of ``value`` (the text ECK hashes)."""
    out: list[str] = []
    _render(value, out, show_type=True)
    return "".join(out)


def fnv32a(data: bytes) -> int:
    """Return the 32-bit FNV-1a hash of ``data``."""
    digest = FNV32_OFFSET_BASIS
    for byte in data:
        digest = ((digest ^ byte) * FNV32_PRIME) & 0xFFFFFFFF
    return digest


def hash_object(value: object) -> str:
    """Return ECK's ``hash.HashObject(value)``: FNV-32a of the spew text, as unsigned decimal."""
    return str(fnv32a(spew_text(value).encode()))


def object_selector(
    *, namespace: str = "", name: str = "", service_name: str = "", secret_name: str = ""
) -> GoStruct:
    """Return the Go value of a ``commonv1.ObjectSelector`` for hashing."""
    return GoStruct(
        "v1.ObjectSelector",
        (
            ("Namespace", namespace),
            ("Name", name),
            ("ServiceName", service_name),
            ("SecretName", secret_name),
        ),
    )
