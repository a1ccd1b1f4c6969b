"""Pure object-metadata rules of the store (reference §3): names, generation, finalizers, ownerRefs.

Everything here decides from plain dicts and raises :class:`~kubesim.errors.StatusError`; the store
(``store.py``) calls these functions around each write. :func:`with_type_meta` and
:func:`typed_view` give stored objects the apiVersion/kind they are served with.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from kubesim import errors
from kubesim.errors import Cause
from kubesim.selector_text import go_quote, label_value_errors, qualified_name_errors

GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_SUFFIX_LENGTH = 5
GENERATE_NAME_PREFIX_MAX = 58

_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = _DNS_LABEL + r"(\." + _DNS_LABEL + ")*"
_DNS_LABEL_RE = re.compile(f"^{_DNS_LABEL}$")
_DNS_SUBDOMAIN_RE = re.compile(f"^{_DNS_SUBDOMAIN}$")

# Reported as metav1.Status.details when validation fails (messages copied from apimachinery).
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS_SUBDOMAIN}')"
)
_LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    f"for validation is '{_DNS_LABEL}')"
)


class ResourceTypeLike(Protocol):
    """The part of :class:`kubesim.resource_type.ResourceType` the store reads."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def has_status(self) -> bool: ...
    @property
    def generation(self) -> str: ...
    @property
    def custom(self) -> bool: ...
    @property
    def returns_deleted_object(self) -> bool: ...
    @property
    def api_version(self) -> str: ...
    @property
    def schema(self) -> Mapping[str, Any] | None: ...


def now_rfc3339() -> str:
    """The current UTC time in RFC3339 with second precision, as metav1.Time serializes."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The ``metadata`` dict of ``obj``, created when missing (400 when it is not an object)."""
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
        obj["metadata"] = meta
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return meta


_ATOMIC_TYPES = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), about 4x faster than deepcopy.

    Other values (never found in decoded JSON) fall back to :func:`copy.deepcopy`.
    """
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind in _ATOMIC_TYPES:
        return value
    return copy.deepcopy(value)


def with_type_meta(rt: ResourceTypeLike, obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a stored object carrying ``rt``'s apiVersion/kind first, as served."""
    body = {"apiVersion": rt.api_version, "kind": rt.kind}
    for key, value in obj.items():
        if key != "apiVersion" and key != "kind":
            body[key] = json_copy(value)
    return body


def typed_view(rt: ResourceTypeLike, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with ``rt``'s apiVersion/kind first, sharing (not copying) its other values.

    Serializes exactly as :func:`with_type_meta`; for read-only use only.
    """
    body = {"apiVersion": rt.api_version, "kind": rt.kind}
    for key, value in obj.items():
        if key != "apiVersion" and key != "kind":
            body[key] = value
    return body


def strip_type_meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object without apiVersion/kind: stored objects are version-independent."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def generate_name(prefix: str) -> str:
    """``generateName`` expansion: the prefix (cut to 58 chars) plus 5 random consonants/digits."""
    suffix = "".join(
        secrets.choice(GENERATE_NAME_ALPHABET) for _ in range(GENERATE_NAME_SUFFIX_LENGTH)
    )
    return prefix[:GENERATE_NAME_PREFIX_MAX] + suffix


def name_causes(name: str, *, label: bool) -> list[Cause]:
    """Causes for an invalid ``metadata.name`` (DNS-1123 label for namespaces, subdomain otherwise)."""
    causes: list[Cause] = []
    limit = 63 if label else 253
    pattern = _DNS_LABEL_RE if label else _DNS_SUBDOMAIN_RE
    if len(name) > limit:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be no more than {limit} characters',
                "metadata.name",
            )
        )
    if not pattern.match(name):
        if label and _DNS_SUBDOMAIN_RE.match(name):
            # apimachinery's IsDNS1123Label: a valid subdomain within the length must have dots.
            message = "must not contain dots"
        else:
            message = _LABEL_MESSAGE if label else _SUBDOMAIN_MESSAGE
        causes.append(
            Cause("FieldValueInvalid", f'Invalid value: "{name}": {message}', "metadata.name")
        )
    return causes


_LABEL_KEY_FORMAT_MESSAGE = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
    "subdomain prefix and '/' (e.g. 'example.com/MyName')"
)


def _key_errors(key: str, *, label: bool) -> list[str]:
    if label and key.count("/") > 1:
        return [_LABEL_KEY_FORMAT_MESSAGE]
    return qualified_name_errors(key)


def label_causes(meta: Mapping[str, Any]) -> list[Cause]:
    """Causes for invalid ``metadata.labels`` (keys, then values, label by label) and
    ``metadata.annotations`` keys, in the order ValidateObjectMeta reports them."""
    causes: list[Cause] = []
    labels = meta.get("labels")
    if isinstance(labels, Mapping):
        for key, value in labels.items():
            for message in _key_errors(str(key), label=True):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {go_quote(str(key))}: {message}",
                        "metadata.labels",
                    )
                )
            for message in label_value_errors(str(value)):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {go_quote(str(value))}: {message}",
                        "metadata.labels",
                    )
                )
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        for key in annotations:
            for message in _key_errors(str(key).lower(), label=False):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {go_quote(str(key))}: {message}",
                        "metadata.annotations",
                    )
                )
    return causes


_CONFIG_KEY = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(f"^{_CONFIG_KEY}$")
_CONFIG_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    f"'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '{_CONFIG_KEY}')"
)


def config_key_errors(key: str) -> list[str]:
    """apimachinery's IsConfigMapKey (the keys of ConfigMap and Secret data)."""
    found: list[str] = []
    if len(key) > 253:
        found.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.match(key):
        found.append(_CONFIG_KEY_MESSAGE)
    if key in (".", ".."):
        found.append(f"must not be '{key}'")
    elif key.startswith(".."):
        found.append("must not start with '..'")
    return found


def data_key_causes(obj: Mapping[str, Any], *, binary_field: str | None) -> list[Cause]:
    """Causes for invalid keys of ``data`` (and of ``binary_field``, ConfigMap's ``binaryData``)."""
    causes: list[Cause] = []
    data = obj.get("data")
    binary = obj.get(binary_field) if binary_field else None
    for field_name, values in (("data", data), (binary_field, binary)):
        if not field_name or not isinstance(values, Mapping):
            continue
        for key in values:
            for message in config_key_errors(str(key)):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {go_quote(str(key))}: {message}",
                        f"{field_name}[{key}]",
                    )
                )
            if field_name == "data" and isinstance(binary, Mapping) and key in binary:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {go_quote(str(key))}: duplicate of key present in "
                        f"{binary_field}",
                        f"data[{key}]",
                    )
                )
    return causes


def owner_reference_causes(meta: Mapping[str, Any]) -> list[Cause]:
    """Causes for malformed ``metadata.ownerReferences`` (required fields, one controller)."""
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list):
        return [Cause("FieldValueInvalid", "must be a list", "metadata.ownerReferences")]
    causes: list[Cause] = []
    controller_names: list[str] = []
    for index, ref in enumerate(refs):
        if not isinstance(ref, dict):
            causes.append(
                Cause("FieldValueInvalid", "must be an object", "metadata.ownerReferences")
            )
            continue
        for field_name in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field_name):
                causes.append(
                    Cause(
                        "FieldValueRequired",
                        "Required value: must not be empty",
                        f"metadata.ownerReferences[{index}].{field_name}",
                    )
                )
        if ref.get("controller") is True:
            controller_names.append(f"{ref.get('kind', '')}/{ref.get('name', '')}")
    if len(controller_names) > 1:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {_owner_references_json(refs)}: Only one reference can have "
                f'Controller set to true. Found "true" in references for '
                f"{' and '.join(controller_names)}",
                "metadata.ownerReferences",
            )
        )
    return causes


def _owner_references_json(refs: list[Any]) -> str:
    """The references as the Go struct marshals them (field order, ``omitempty`` pointers)."""
    rendered = []
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        out = {key: ref.get(key, "") for key in ("apiVersion", "kind", "name", "uid")}
        for flag in ("controller", "blockOwnerDeletion"):
            if flag in ref and ref[flag] is not None:
                out[flag] = ref[flag]
        rendered.append(out)
    return json.dumps(rendered, separators=(",", ":"))


def go_string_slice(values: list[str]) -> str:
    """Go's ``%#v`` rendering of a ``[]string`` (used in the finalizer message)."""
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def new_finalizer_causes(old_meta: Mapping[str, Any], new_meta: Mapping[str, Any]) -> list[Cause]:
    """The 422 cause when finalizers are added to an object that is being deleted."""
    if not old_meta.get("deletionTimestamp"):
        return []
    old = set(old_meta.get("finalizers") or [])
    added = [f for f in new_meta.get("finalizers") or [] if f not in old]
    if not added:
        return []
    return [
        Cause(
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new "
            f"finalizers {go_string_slice(added)}",
            "metadata.finalizers",
        )
    ]


def immutable_causes(old_meta: Mapping[str, Any], new_meta: Mapping[str, Any]) -> list[Cause]:
    """Causes for a change of ``deletionTimestamp`` that an update may not make (a changed uid is
    a 409, see :func:`uid_precondition_error`)."""
    causes: list[Cause] = []
    for field_name in ("deletionTimestamp",):
        new_value = new_meta.get(field_name)
        if new_value and new_value != old_meta.get(field_name):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{new_value}": field is immutable',
                    f"metadata.{field_name}",
                )
            )
    return causes


def _without(obj: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def generation_changed(
    rt: ResourceTypeLike, old: Mapping[str, Any], new: Mapping[str, Any]
) -> bool:
    """Whether an update from ``old`` to ``new`` bumps ``metadata.generation`` for ``rt``."""
    rule = rt.generation
    if rule == "spec":
        return old.get("spec") != new.get("spec")
    if rule == "spec_or_annotations":
        old_annotations = (old.get("metadata") or {}).get("annotations") or {}
        new_annotations = (new.get("metadata") or {}).get("annotations") or {}
        return old.get("spec") != new.get("spec") or old_annotations != new_annotations
    if rule == "non_metadata":
        ignored: tuple[str, ...] = ("apiVersion", "kind", "metadata")
        if rt.has_status:
            ignored += ("status",)
        return _without(old, ignored) != _without(new, ignored)
    return False


def mark_deleting(meta: dict[str, Any]) -> None:
    """Set ``deletionTimestamp`` (first time only, bumping a positive generation) as DELETE does."""
    if meta.get("deletionTimestamp"):
        return
    meta["deletionTimestamp"] = now_rfc3339()
    meta["deletionGracePeriodSeconds"] = 0
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def gc_finalizers(finalizers: list[str], propagation: str | None) -> list[str]:
    """The finalizer list after a DELETE with ``propagation`` (§4.7, §10.2).

    An explicit policy replaces the garbage-collector finalizers; no policy keeps what is there.
    """
    if propagation is None:
        return list(finalizers)
    kept = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
    if propagation == "Foreground":
        kept.append("foregroundDeletion")
    elif propagation == "Orphan":
        kept.append("orphan")
    return kept


def precondition_error(
    rt: ResourceTypeLike, name: str, meta: Mapping[str, Any], preconditions: Mapping[str, Any]
) -> errors.StatusError | None:
    """409 when DeleteOptions preconditions (uid / resourceVersion) do not match the object.

    The storage layer reports these on the Kind (``Operation cannot be fulfilled on ConfigMap``).
    """
    uid = preconditions.get("uid")
    if uid and uid != meta.get("uid"):
        return errors.conflict(
            group=rt.group,
            plural=rt.kind,
            name=name,
            why=(
                f"the UID in the precondition ({uid}) does not match the UID in record "
                f"({meta.get('uid', '')}). The object might have been deleted and then recreated"
            ),
        )
    rv = preconditions.get("resourceVersion")
    if rv and rv != meta.get("resourceVersion"):
        return errors.conflict(
            group=rt.group,
            plural=rt.kind,
            name=name,
            why=(
                f"the ResourceVersion in the precondition ({rv}) does not match the "
                f"ResourceVersion in record ({meta.get('resourceVersion', '')}). The object might "
                "have been modified"
            ),
        )
    return None


#: Where the real API server keeps a built-in resource in etcd, when not ``/registry/<plural>``.
_STORAGE_PREFIXES = {
    ("", "services"): "services/specs",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        "apiextensions.k8s.io/customresourcedefinitions"
    ),
}


def storage_path(rt: ResourceTypeLike, namespace: str, name: str) -> str:
    """The etcd key of an object on the real server (it shows in storage errors)."""
    if rt.custom:
        prefix = f"{rt.group}/{rt.plural}"
    else:
        prefix = _STORAGE_PREFIXES.get((rt.group, rt.plural), rt.plural)
    return f"/registry/{prefix}/{namespace}/{name}" if namespace else f"/registry/{prefix}/{name}"


def uid_precondition_error(
    rt: ResourceTypeLike, namespace: str, name: str, *, sent: str, stored: str
) -> errors.StatusError:
    """409 for an update whose body carries another uid (the storage's uid precondition)."""
    return errors.conflict(
        group=rt.group,
        plural=rt.plural,
        name=name,
        why=(
            f"StorageError: invalid object, Code: 4, Key: {storage_path(rt, namespace, name)}, "
            f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: "
            f"{sent}, UID in object meta: {stored}"
        ),
    )
