"""Kubernetes protobuf ↔ JSON objects, as the API server's Go types convert them (pure).

The wire format is 4 magic bytes ``k8s\\x00`` and a ``runtime.Unknown`` whose ``typeMeta`` names
the kind and whose ``raw`` is the typed message (``k8s.io.api.core.v1.Namespace``). The message
classes come from the tree :mod:`kubesim.proto_build` generates; :class:`Catalog` is handed them (it
never looks for them, :mod:`kubesim.protobuf` does). JSON follows Go's ``encoding/json`` over the
generated structs: JSON names and ``omitempty`` from the Go struct tags (the build's index), inline
embedded structs flattened, ``bytes`` in base64, and the types with their own JSON forms
(``resource.Quantity``, ``intstr.IntOrString``, ``metav1.Time``/``MicroTime``/``Duration``,
``runtime.RawExtension``, ``metav1.FieldsV1``, the slice wrappers like ``ExtraValue``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from types import ModuleType
from typing import Any, NamedTuple, TypeAlias

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

# Descriptors, typed by the stubs as either the pure-Python or the upb classes; both serve here.
Field: TypeAlias = Any
MessageType: TypeAlias = Any

MAGIC = b"k8s\x00"
# Bumped whenever the index the build writes changes shape; a stale tree is then ignored.
INDEX_FORMAT = 2

_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
_DURATION = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
_FIELDS_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"
_RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_UNKNOWN = "Unknown"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_FLOAT_TYPES = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})


class ProtobufError(ValueError):
    """A body or object that cannot be converted; the message is client-facing."""


class UnknownKindError(ProtobufError):
    """The kind has no generated message (a custom resource, or a group not generated)."""


class FieldInfo(NamedTuple):
    """How one protobuf field appears in JSON (from the Go struct tag)."""

    json: str  # "" = inline embedded struct, "-" = not in JSON
    omitempty: bool
    pointer: bool
    omitzero: bool  # Go 1.24's omitzero: a zero struct (a zero metav1.Time) is left out


# Fields of messages the index does not describe are emitted when set, like a Go pointer.
_DEFAULT_INFO = FieldInfo(json="", omitempty=True, pointer=True, omitzero=False)


class Catalog:
    """The generated message classes and the Go JSON rules of their fields.

    ``index`` is the build's ``index.json``; ``import_module`` imports a generated module by name,
    called only for the API packages actually used.
    """

    def __init__(self, index: Mapping[str, Any], import_module: Callable[[str], ModuleType]):
        self._import = import_module
        self._fields: Mapping[str, Mapping[str, list[Any]]] = index["fields"]
        self._arrays = frozenset(index["arrays"])
        self._runtime_module: str = index["runtime_module"]
        self._packages: dict[tuple[str, str], tuple[str, str]] = {}
        self._kinds: set[str] = set()
        for package, info in index["packages"].items():
            self._packages[(info["group"], info["version"])] = (package, info["module"])
            self._kinds.update(f"{package}.{kind}" for kind in info["kinds"])
        self._infos: dict[str, dict[str, FieldInfo]] = {}
        self._routes: dict[str, dict[str, tuple[Field, ...]]] = {}

    def message_class(self, api_version: str, kind: str) -> type[Message] | None:
        """The generated class of a built-in kind (``None`` for one without a message)."""
        group, _, version = api_version.rpartition("/")
        found = self._packages.get((group, version))
        if found is None or f"{found[0]}.{kind}" not in self._kinds:
            return None
        try:
            module = self._import(found[1])
        except ImportError:
            return None  # a group left out of the generated tree: like a kind without a message
        cls = getattr(module, kind, None)
        return cls if isinstance(cls, type) and issubclass(cls, Message) else None

    def unknown_class(self) -> type[Message]:
        """``runtime.Unknown``, the envelope of every protobuf body."""
        cls = getattr(self._import(self._runtime_module), _UNKNOWN)
        if not (isinstance(cls, type) and issubclass(cls, Message)):
            raise TypeError(f"{self._runtime_module}.{_UNKNOWN} is not a message class")
        return cls

    # -- the wire envelope ------------------------------------------------------------------

    def decode_object(self, data: bytes) -> dict[str, Any]:
        """A protobuf body (magic + Unknown) as the JSON object, with ``apiVersion`` and ``kind``."""
        if not data:
            raise ProtobufError("empty data")
        if not data.startswith(MAGIC):
            raise ProtobufError(
                "provided data does not appear to be a protobuf message, expected prefix "
                "[107 56 115 0]"
            )
        unknown: Any = self.unknown_class()()
        try:
            unknown.ParseFromString(data[len(MAGIC) :])
        except (DecodeError, ValueError, RecursionError) as exc:
            raise ProtobufError(f"error decoding protobuf envelope: {exc}") from None
        api_version = str(unknown.typeMeta.apiVersion)
        kind = str(unknown.typeMeta.kind)
        if not kind:
            raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
        if not api_version:
            raise ProtobufError("Object 'apiVersion' is missing in the protobuf envelope")
        if unknown.contentEncoding:
            raise ProtobufError(f"unsupported content encoding {unknown.contentEncoding!r}")
        raw = bytes(unknown.raw)
        if unknown.contentType not in ("", "application/vnd.kubernetes.protobuf"):
            if unknown.contentType != "application/json":
                raise ProtobufError(f"unsupported embedded content type {unknown.contentType!r}")
            return _typed(api_version, kind, _loads(raw, "the embedded JSON object"))
        cls = self.message_class(api_version, kind)
        if cls is None:
            raise UnknownKindError(f"no protobuf message for {api_version}, Kind={kind}")
        message = cls()
        try:
            message.ParseFromString(raw)
            body = self.to_json(message)
        except ProtobufError:
            raise
        # Undecodable bytes, and values JSON cannot carry (a time past year 9999).
        except (DecodeError, ValueError, OverflowError, RecursionError) as exc:
            raise ProtobufError(f"error decoding {kind}: {exc}") from None
        return _typed(api_version, kind, body)

    def encode_object(self, obj: Mapping[str, Any]) -> bytes:
        """A JSON object with ``apiVersion`` and ``kind`` as a protobuf body (magic + Unknown)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ProtobufError("the object has no apiVersion and kind")
        cls = self.message_class(api_version, kind)
        if cls is None:
            raise UnknownKindError(f"no protobuf message for {api_version}, Kind={kind}")
        message = cls()
        try:
            self.fill(message, obj, path="")
        except ProtobufError:
            raise
        # What protobuf itself refuses: an int32 out of range, a negative uint64, …
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            raise ProtobufError(f"the {kind} does not fit its protobuf message: {exc}") from None
        unknown: Any = self.unknown_class()()
        unknown.typeMeta.apiVersion = api_version
        unknown.typeMeta.kind = kind
        # Deterministic: map entries sorted by key, as the Go marshallers write them.
        unknown.raw = message.SerializeToString(deterministic=True)
        # The Go marshaller writes these (empty) strings too.
        unknown.contentEncoding = ""
        unknown.contentType = ""
        return MAGIC + bytes(unknown.SerializeToString())

    # -- message → JSON ---------------------------------------------------------------------

    def to_json(self, message: Message) -> Any:
        """``message`` as Go's ``encoding/json`` renders the struct it was generated from."""
        descriptor = message.DESCRIPTOR
        name = descriptor.full_name
        special = _SPECIAL_TO_JSON.get(name)
        if special is not None:
            return special(self, message)
        if name in self._arrays:
            return list(getattr(message, "items"))  # noqa: B009 - a generated field
        out: dict[str, Any] = {}
        inline: dict[str, Any] = {}
        for field in descriptor.fields:
            info = self.field_info(name, field.name)
            if info.json == "-":
                continue
            present, value = self._field_to_json(message, field, info)
            if not present:
                continue
            if info.json == "" and isinstance(value, dict):
                inline.update(value)
            else:
                out[info.json or field.name] = value
        # Go lets a struct's own field win over a same-named field of an embedded struct.
        return {**inline, **out} if inline else out

    def _field_to_json(self, message: Message, field: Field, info: FieldInfo) -> tuple[bool, Any]:
        value = getattr(message, field.name)
        if _is_map(field):
            if not value:
                return False, None
            value_field = field.message_type.fields_by_name["value"]
            return True, {
                str(k): self._value_to_json(value_field, v) for k, v in sorted(value.items())
            }
        if field.is_repeated:
            if not value:
                return False, None
            return True, [self._value_to_json(field, v) for v in value]
        if not message.HasField(field.name):
            return False, None
        # The Go marshaller writes non-pointer fields even when zero; omitempty drops zero
        # scalars, omitzero zero structs too.
        if not info.pointer:
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                if info.omitempty and _is_zero_scalar(value):
                    return False, None
            elif info.omitzero and self.is_zero(value):
                return False, None
        return True, self._value_to_json(field, value)

    def is_zero(self, message: Message) -> bool:
        """Whether ``message`` decodes to a Go zero value (what ``omitzero`` leaves out)."""
        if message.DESCRIPTOR.full_name in (_TIME, _MICRO_TIME):
            return not message.ListFields()  # see _time_to_json
        for field, value in message.ListFields():
            if field.is_repeated:
                if len(value):
                    return False
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                if not self.is_zero(value):
                    return False
            elif not _is_zero_scalar(value):
                return False
        return True

    def _value_to_json(self, field: Field, value: Any) -> Any:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            return self.to_json(value)
        if field.type == FieldDescriptor.TYPE_BYTES:
            return base64.b64encode(value).decode("ascii")
        return value

    # -- JSON → message ---------------------------------------------------------------------

    def fill(self, message: Message, value: Any, *, path: str) -> None:
        """Set ``message`` from its JSON form (``path`` names it in errors); unknown keys fail."""
        descriptor = message.DESCRIPTOR
        name = descriptor.full_name
        special = _SPECIAL_FROM_JSON.get(name)
        if special is not None:
            special(self, message, value, path)
            return
        if name in self._arrays:
            items = getattr(message, "items")  # noqa: B009 - a generated field
            items.extend(_string(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path)))
            return
        if not isinstance(value, dict):
            raise ProtobufError(f"{path or '.'}: expected an object, got {_json_kind(value)}")
        routes = self.json_routes(descriptor)
        message.SetInParent()
        for key, item in value.items():
            route = routes.get(key)
            if route is None:
                if key in ("apiVersion", "kind") and name in self._kinds:
                    continue  # TypeMeta: the envelope carries it, not the message
                raise ProtobufError(f"unknown field {_join(path, key)}")
            if item is None:
                continue  # JSON null leaves a Go field at its zero value
            target: Any = message
            for step in route[:-1]:
                target = getattr(target, step.name)
                target.SetInParent()
            self._set_field(target, route[-1], item, _join(path, key))

    def _set_field(self, message: Any, field: Field, value: Any, path: str) -> None:
        if _is_map(field):
            container = getattr(message, field.name)
            value_field = field.message_type.fields_by_name["value"]
            for key, item in _object(value, path).items():
                item_path = f"{path}[{key}]"
                if value_field.type == FieldDescriptor.TYPE_MESSAGE:
                    if item is not None:
                        self.fill(container[key], item, path=item_path)
                    else:
                        container[key].SetInParent()
                else:
                    container[key] = (
                        _zero(value_field)
                        if item is None
                        else _scalar(value_field, item, item_path)
                    )
            return
        if field.is_repeated:
            container = getattr(message, field.name)
            for index, item in enumerate(_list(value, path)):
                item_path = f"{path}[{index}]"
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    element = container.add()
                    if item is not None:
                        self.fill(element, item, path=item_path)
                else:
                    container.append(
                        _zero(field) if item is None else _scalar(field, item, item_path)
                    )
            return
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            self.fill(getattr(message, field.name), value, path=path)
            return
        setattr(message, field.name, _scalar(field, value, path))

    # -- the index --------------------------------------------------------------------------

    def field_info(self, message_name: str, field_name: str) -> FieldInfo:
        """The JSON rules of one field (presence-based defaults for messages without Go tags)."""
        infos = self._infos.get(message_name)
        if infos is None:
            raw = self._fields.get(message_name, {})
            infos = {
                f: FieldInfo(str(v[0]), bool(v[1]), bool(v[2]), bool(v[3])) for f, v in raw.items()
            }
            self._infos[message_name] = infos
        return infos.get(field_name) or _DEFAULT_INFO._replace(json=field_name)

    def json_routes(self, descriptor: MessageType) -> dict[str, tuple[Field, ...]]:
        """JSON key → the fields leading to it (several for keys of inline embedded structs)."""
        routes = self._routes.get(descriptor.full_name)
        if routes is not None:
            return routes
        inline: dict[str, tuple[Field, ...]] = {}
        direct: dict[str, tuple[Field, ...]] = {}
        for field in descriptor.fields:
            info = self.field_info(descriptor.full_name, field.name)
            if info.json == "-":
                continue
            if info.json == "" and field.message_type is not None and not field.is_repeated:
                for key, route in self.json_routes(field.message_type).items():
                    inline.setdefault(key, (field, *route))
            else:
                direct[info.json or field.name] = (field,)
        routes = {**inline, **direct}
        self._routes[descriptor.full_name] = routes
        return routes


# -- the types with their own JSON forms ----------------------------------------------------


def _quantity_to_json(_: Catalog, message: Any) -> Any:
    # The zero Quantity marshals as "0".
    return str(message.string) if message.HasField("string") else "0"


def _quantity_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    # Go's Quantity accepts a JSON number too, parsing its literal text.
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ProtobufError(f"{path}: a quantity must be a string or a number")
    message.string = value if isinstance(value, str) else json.dumps(value)


def _int_or_string_to_json(_: Catalog, message: Any) -> Any:
    return str(message.strVal) if message.type == 1 else int(message.intVal)


def _int_or_string_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    if isinstance(value, str):
        message.type, message.intVal, message.strVal = 1, 0, value
    else:
        message.type, message.intVal, message.strVal = 0, _integer(value, path), ""


def _time_to_json(_: Catalog, message: Any) -> Any:
    # An empty message is the zero time (Go writes nothing for it), which marshals as null;
    # metav1.Time keeps only seconds, as its Unmarshal does.
    if not message.ListFields():
        return None
    return _format_time(int(message.seconds), 0, micro=False)


def _micro_time_to_json(_: Catalog, message: Any) -> Any:
    if not message.ListFields():
        return None
    return _format_time(int(message.seconds), int(message.nanos), micro=True)


def _time_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    seconds, nanos = _parse_time(value, path)
    message.seconds, message.nanos = seconds, nanos


def _duration_to_json(_: Catalog, message: Any) -> Any:
    return go_duration(int(message.duration))


def _duration_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    message.duration = parse_go_duration(_string(value, path), path)


def _raw_extension_to_json(catalog: Catalog, message: Any) -> Any:
    raw = bytes(message.raw)
    if not raw:
        return None
    if raw.startswith(MAGIC):
        # An embedded object a Go client encoded with the protobuf serializer.
        return catalog.decode_object(raw)
    return _loads(raw, "runtime.RawExtension")


def _raw_extension_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    message.raw = _dumps(value)


def _fields_v1_to_json(_: Catalog, message: Any) -> Any:
    raw = bytes(message.Raw)
    return _loads(raw, "metav1.FieldsV1") if raw else None


def _fields_v1_from_json(_: Catalog, message: Any, value: Any, path: str) -> None:
    message.Raw = _dumps(_object(value, path))


_SPECIAL_TO_JSON: dict[str, Callable[[Catalog, Any], Any]] = {
    _QUANTITY: _quantity_to_json,
    _INT_OR_STRING: _int_or_string_to_json,
    _TIME: _time_to_json,
    _MICRO_TIME: _micro_time_to_json,
    _DURATION: _duration_to_json,
    _RAW_EXTENSION: _raw_extension_to_json,
    _FIELDS_V1: _fields_v1_to_json,
}
_SPECIAL_FROM_JSON: dict[str, Callable[[Catalog, Any, Any, str], None]] = {
    _QUANTITY: _quantity_from_json,
    _INT_OR_STRING: _int_or_string_from_json,
    _TIME: _time_from_json,
    _MICRO_TIME: _time_from_json,
    _DURATION: _duration_from_json,
    _RAW_EXTENSION: _raw_extension_from_json,
    _FIELDS_V1: _fields_v1_from_json,
}


def _format_time(seconds: int, nanos: int, *, micro: bool) -> str:
    """RFC3339 in UTC (``metav1.Time``), or with microseconds (``metav1.MicroTime``)."""
    moment = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    return text + (f".{moment.microsecond:06d}Z" if micro else "Z")


_TIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def _parse_time(value: Any, path: str) -> tuple[int, int]:
    """``(seconds, nanos)`` since the epoch of an RFC3339 time (Go's ``time.RFC3339`` layout)."""
    match = _TIME_RE.match(_string(value, path))
    if match is None:
        raise ProtobufError(f"{path}: {value!r} is not an RFC3339 time")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = (match.group(7) or "").ljust(9, "0")
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise ProtobufError(f"{path}: {value!r}: {exc}") from None
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        moment -= offset if match.group(9) == "+" else -offset
    delta = moment - _EPOCH
    return delta.days * 86400 + delta.seconds, int(fraction)


_DURATION_UNITS = {
    "ns": 1,
    "us": 1000,
    "µs": 1000,  # U+00B5
    "μs": 1000,  # U+03BC
    "ms": 1000_000,
    "s": 1000_000_000,
    "m": 60 * 1000_000_000,
    "h": 3600 * 1000_000_000,
}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]+)")


def go_duration(nanoseconds: int) -> str:
    """Go's ``time.Duration.String()``: ``1h2m3.5s``, ``1.5µs``, ``0s``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    u = abs(nanoseconds)
    if u < 1000_000_000:
        for unit, scale in (("ns", 1), ("µs", 1000), ("ms", 1000_000)):
            if u < scale * 1000:
                return sign + _fraction_text(u, scale) + unit
    seconds, rest = divmod(u, 1000_000_000)
    text = _fraction_text(seconds % 60 * 1000_000_000 + rest, 1000_000_000) + "s"
    minutes, hours = seconds // 60 % 60, seconds // 3600
    if hours:
        text = f"{hours}h{minutes}m{text}"
    elif minutes:
        text = f"{minutes}m{text}"
    return sign + text


def _fraction_text(value: int, scale: int) -> str:
    whole, part = divmod(value, scale)
    if not part:
        return str(whole)
    digits = str(part).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def parse_go_duration(text: str, path: str = "") -> int:
    """Go's ``time.ParseDuration`` in nanoseconds (``"1h30m"``, ``"-1.5s"``, ``"0"``)."""
    body = text[1:] if text[:1] in "+-" else text
    negative = text.startswith("-")
    if body == "0":
        return 0
    if not body:
        raise ProtobufError(f"{path}: time: invalid duration {json.dumps(text)}")
    total = Fraction(0)
    position = 0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None or not (match.group(1) or match.group(2)):
            raise ProtobufError(f"{path}: time: invalid duration {json.dumps(text)}")
        unit = _DURATION_UNITS.get(match.group(3))
        if unit is None:
            raise ProtobufError(
                f"{path}: time: unknown unit {json.dumps(match.group(3))} in duration "
                f"{json.dumps(text)}"
            )
        number = Fraction(int(match.group(1) or "0"))
        if match.group(2):
            number += Fraction(int(match.group(2)), 10 ** len(match.group(2)))
        total += number * unit
        position = match.end()
    nanoseconds = int(total)  # Go truncates the fraction of a nanosecond
    return -nanoseconds if negative else nanoseconds


# -- scalars and JSON shapes ----------------------------------------------------------------


def _scalar(field: Field, value: Any, path: str) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return _string(value, path)
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise ProtobufError(f"{path}: expected a boolean, got {_json_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_BYTES:
        try:
            return base64.b64decode(_string(value, path), validate=True)
        except binascii.Error:
            raise ProtobufError(f"{path}: illegal base64 data") from None
    if kind in _INT_TYPES:
        return _integer(value, path)
    if kind in _FLOAT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ProtobufError(f"{path}: expected a number, got {_json_kind(value)}")
        return float(value)
    raise ProtobufError(f"{path}: unsupported protobuf field type {kind}")


def _is_zero_scalar(value: Any) -> bool:
    return value in ("", b"", 0, False)


def _zero(field: Field) -> Any:
    return field.default_value


def _integer(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtobufError(f"{path}: expected an integer, got {_json_kind(value)}")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ProtobufError(f"{path}: expected a string, got {_json_kind(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProtobufError(f"{path}: expected an array, got {_json_kind(value)}")
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtobufError(f"{path}: expected an object, got {_json_kind(value)}")
    return value


def _is_map(field: Field) -> bool:
    message_type = field.message_type
    return field.is_repeated and message_type is not None and message_type.GetOptions().map_entry


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ProtobufError(f"{what} does not hold JSON: {exc}") from None


def _typed(api_version: str, kind: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ProtobufError(f"the {kind} is not an object")
    return {"apiVersion": api_version, "kind": kind, **body}
