"""Pure request decoding for the HTTP layer: paths, query options, bodies, continue tokens.

Nothing here does I/O (but for loading the generated protobuf classes once, on the first protobuf
body: :mod:`kubesim.protobuf`); :mod:`kubesim.server` and :mod:`kubesim.handlers` call these
functions with what aiohttp gives them and turn the :class:`~kubesim.errors.StatusError` they raise
into responses.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kubesim import errors, protobuf
from kubesim.errors import Cause, StatusError

# Go's strconv.ParseBool accepts exactly these spellings (§1.3).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

JSON = "application/json"
YAML = "application/yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PROTOBUF = protobuf.PROTOBUF

BUILTIN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
CUSTOM_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
BODY_TYPES = (JSON, YAML)


def parse_bool(value: str | None, *, name: str, default: bool = False) -> bool:
    """A query boolean with Go ``strconv.ParseBool`` spelling; anything else is a 400."""
    if value is None or value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise errors.bad_request(
        f'invalid value for {name}: strconv.ParseBool: parsing "{value}": invalid syntax'
    )


def parse_int(value: str | None, *, name: str, signed: bool = False) -> int | None:
    """A query integer, non-negative unless ``signed`` (``limit``, ``timeoutSeconds``,
    ``gracePeriodSeconds``); a bad one is a 400."""
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise errors.bad_request(
            f'invalid value for {name}: strconv.ParseInt: parsing "{value}": invalid syntax'
        ) from None
    return number if signed else max(number, 0)


def media_type(content_type: str | None) -> str:
    """The bare media type of a Content-Type header (parameters and case dropped)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def wants_table(accept: str | None) -> bool:
    """Whether the Accept header asks for server-side printing (``as=Table``)."""
    if not accept:
        return False
    for part in accept.split(","):
        params = {
            p.strip().split("=", 1)[0]: p.strip().split("=", 1)[-1] for p in part.split(";")[1:]
        }
        if params.get("as") == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return True
    return False


def wants_aggregated_discovery(accept: str | None) -> bool:
    """Whether the Accept header offers the v2 aggregated discovery format (§2.3)."""
    if not accept:
        return False
    for part in accept.split(","):
        params = {
            p.strip().split("=", 1)[0]: p.strip().split("=", 1)[-1] for p in part.split(";")[1:]
        }
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            return True
    return False


@dataclass(frozen=True)
class ResourcePath:
    """A resource URL split into its parts (§2.1)."""

    group: str
    version: str
    namespace: str | None
    plural: str
    name: str | None
    subresource: str | None
    watch: bool  # the deprecated ``/watch/`` path form


def parse_resource_path(path: str) -> ResourcePath | None:
    """Split ``/api/v1/...`` or ``/apis/g/v/...`` into a :class:`ResourcePath`; ``None`` if not one."""
    segments = [s for s in path.split("/") if s]
    if len(segments) >= 3 and segments[0] == "api":
        group, version, rest = "", segments[1], segments[2:]
    elif len(segments) >= 4 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    watch = False
    if rest and rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace: str | None = None
    # Core's namespaces/{name}/status|finalize is the Namespace object's subresource, not a collection.
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return ResourcePath(
        group=group,
        version=version,
        namespace=namespace,
        plural=rest[0],
        name=rest[1] if len(rest) >= 2 else None,
        subresource=rest[2] if len(rest) == 3 else None,
        watch=watch,
    )


def decode_object_body(raw: bytes, content_type: str | None) -> Any:
    """Decode a POST/PUT body: JSON, YAML or (for built-in kinds) Kubernetes protobuf.

    Unknown media types are a 415; so is protobuf when the generated classes are missing.
    """
    kind = media_type(content_type)
    if kind == PROTOBUF or raw.startswith(protobuf.MAGIC):
        return decode_protobuf_body(raw, content_type or PROTOBUF)
    if kind not in ("", JSON, YAML, "*/*"):
        raise errors.unsupported_media_type(kind, [JSON, YAML])
    return decode_document(raw, yaml_allowed=kind == YAML)


def decode_protobuf_body(raw: bytes, content_type: str) -> dict[str, Any]:
    """A protobuf body as its JSON object, TypeMeta from the envelope (later checked as JSON's is).

    415 without the generated classes and for a kind without a message (custom resources, as on
    a real API server); 400 for a body that does not decode, as the real server's decode errors.
    """
    try:
        return protobuf.decode_body(raw)
    except protobuf.UnavailableError as exc:
        raise protobuf_unsupported(content_type, reason=str(exc)) from None
    except protobuf.UnknownKindError:
        raise errors.unsupported_media_type(content_type, [JSON, YAML]) from None
    except protobuf.ProtobufError as exc:
        raise errors.bad_request(f"error decoding request body: {exc}") from None


def protobuf_unsupported(content_type: str, *, reason: str) -> StatusError:
    """415 for a protobuf body kubesim cannot decode, saying why and to send JSON meanwhile."""
    err = errors.unsupported_media_type(content_type, [JSON, YAML, *BUILTIN_PATCH_TYPES])
    err.message += f" ({reason}; or send JSON, e.g. kubectl create -f / apply -f)"
    return err


def decode_document(raw: bytes, *, yaml_allowed: bool) -> Any:
    """Parse JSON (or YAML when allowed); malformed input is a 400 BadRequest Status."""
    if not raw.strip():
        raise errors.bad_request("the request body is empty; an object is required")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.bad_request("the request body is not valid UTF-8") from None
    if yaml_allowed:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            first_line = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
            raise errors.bad_request(f"error converting YAML to JSON: {first_line}") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise errors.bad_request(f"error decoding request body: {exc}") from None


def check_type_meta(body: Any, *, api_version: str, kind: str, custom: bool) -> dict[str, Any]:
    """Default or check ``apiVersion``/``kind`` of a write body against the endpoint (§3 TypeMeta)."""
    if not isinstance(body, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {_go_type_name(body)} into Go value of type {kind}"
        )
    body_kind = body.get("kind")
    body_version = body.get("apiVersion")
    if custom and not body_kind:
        raise errors.bad_request("Object 'Kind' is missing in '" + json.dumps(body)[:200] + "'")
    if body_kind not in (None, "") and body_kind != kind:
        raise errors.bad_request(
            f"the API version in the data ({body_version}) does not match the expected API version "
            f"({api_version})"
            if body_version not in (None, "", api_version)
            else f"the kind in the data ({body_kind}) does not match the expected kind ({kind})"
        )
    if body_version not in (None, "") and body_version != api_version:
        raise errors.bad_request(
            f"the API version in the data ({body_version}) does not match the expected API version "
            f"({api_version})"
        )
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {_go_type_name(metadata)} into Go struct field "
            f"{kind}.metadata of type v1.ObjectMeta"
        )
    out = dict(body)
    out["apiVersion"] = api_version
    out["kind"] = kind
    return out


def _go_type_name(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    return "object"


def encode_continue(*, resource_version: int, namespace: str, name: str) -> str:
    """An opaque continue token shaped like the real server's (§4.2)."""
    payload = {"v": "meta.k8s.io/v1", "rv": resource_version, "start": f"{namespace}/{name}\u0000"}
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    """``(snapshot rv, (namespace, name) of the last item served)``; a malformed token is a 400."""
    try:
        padded = token + "=" * (-len(token) % 4)
        payload = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        if not isinstance(payload, dict) or payload.get("v") != "meta.k8s.io/v1":
            raise ValueError("bad version")
        rv = payload["rv"]
        start = payload["start"]
        if not isinstance(rv, int) or not isinstance(start, str) or not start.endswith("\u0000"):
            raise ValueError("bad fields")
        namespace, _, name = start[:-1].partition("/")
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError):
        raise errors.bad_request(
            "continue key is not valid: the continue token could not be decoded"
        ) from None
    return rv, (namespace, name)


@dataclass(frozen=True)
class ListOptions:
    """The read-side query parameters of a LIST or WATCH (§4.2, §4.3)."""

    label_selector: str
    field_selector: str
    limit: int | None
    continue_token: str | None
    resource_version: str | None
    resource_version_match: str | None
    watch: bool
    allow_bookmarks: bool
    send_initial_events: bool | None
    timeout_seconds: int | None


def parse_list_options(query: Mapping[str, str], *, watch_path: bool) -> ListOptions:
    """Read and validate LIST/WATCH parameters (the 422s of §4.2/§4.3 are raised here)."""
    watch = watch_path or parse_bool(query.get("watch"), name="watch")
    send_initial_raw = query.get("sendInitialEvents")
    send_initial = (
        None
        if send_initial_raw in (None, "")
        else parse_bool(send_initial_raw, name="sendInitialEvents")
    )
    options = ListOptions(
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        limit=parse_int(query.get("limit"), name="limit") or None,
        continue_token=query.get("continue") or None,
        resource_version=query.get("resourceVersion") or None,
        resource_version_match=query.get("resourceVersionMatch") or None,
        watch=watch,
        allow_bookmarks=parse_bool(query.get("allowWatchBookmarks"), name="allowWatchBookmarks"),
        send_initial_events=send_initial,
        timeout_seconds=parse_int(query.get("timeoutSeconds"), name="timeoutSeconds"),
    )
    causes = list_option_causes(options)
    if causes:
        raise errors.invalid(group="meta.k8s.io", kind="ListOptions", name="", causes=causes)
    return options


def list_option_causes(options: ListOptions) -> list[Cause]:
    """Validation failures of a ListOptions, as the real server reports them."""
    causes: list[Cause] = []
    match = options.resource_version_match
    if match is not None and match not in ("NotOlderThan", "Exact"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
                "resourceVersionMatch",
            )
        )
    if options.watch:
        if options.send_initial_events is not None and match != "NotOlderThan":
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for watch unless "
                    "resourceVersionMatch is set to NotOlderThan",
                    "sendInitialEvents",
                )
            )
        if match is not None and options.send_initial_events is None:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                    "resourceVersionMatch",
                )
            )
    else:
        if options.send_initial_events is not None:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for list",
                    "sendInitialEvents",
                )
            )
        if match is not None and options.resource_version is None:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                    "resourceVersionMatch",
                )
            )
        if options.continue_token and options.resource_version not in (None, "0"):
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: specifying resource version is not allowed when using continue",
                    "resourceVersion",
                )
            )
    return causes


def parse_resource_version(value: str | None) -> int | None:
    """A query resourceVersion as an integer (``None`` when unset); garbage is a 400."""
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise errors.bad_request(f'invalid resource version "{value}"') from None
    if number < 0:
        raise errors.bad_request(f'invalid resource version "{value}"')
    return number


def parse_dry_run(values: list[str]) -> bool:
    """``dryRun=All`` → True; absent → False; any other value is a 422 (§4.9)."""
    if not values:
        return False
    for value in values:
        if value != "All":
            raise errors.invalid(
                group="meta.k8s.io",
                kind="CreateOptions",
                name="",
                causes=[
                    Cause(
                        "FieldValueNotSupported",
                        f'Unsupported value: "{value}": supported values: "All"',
                        "dryRun",
                    )
                ],
            )
    return True


def parse_field_validation(value: str | None) -> str:
    """``Strict`` / ``Warn`` (server default) / ``Ignore``; anything else is a 400."""
    if value is None or value == "":
        return "Warn"
    if value not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(
            f"fieldValidation must be one of Ignore, Warn, or Strict, got: {value}"
        )
    return value


def go_quote(text: str) -> str:
    """Quote like Go's ``%q`` for the ASCII we produce (used in warnings and messages)."""
    return json.dumps(text)
