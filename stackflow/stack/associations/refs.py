"""Parse an associated object's references into :class:`AssociationRef` values (pure).

A reference names a managed target (``name``, optional ``namespace``/``serviceName``) or an
external one (``secretName``). The namespace defaults to the associated object's, for external
refs too (the Secret lives there), exactly as ECK's ``ObjectSelector.WithDefaultNamespace``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.associations.table import (
    Association,
    UnknownAssociationError,
    associations_of,
    find_association,
)
from stackflow.stack.naming import GoStruct, hash_object, object_selector

DEFAULT_OUTPUT_NAME = "default"


@dataclass(frozen=True)
class AssociationRef:
    """One reference of an associated object, its namespace defaulted."""

    association: str
    target_kind: str
    namespace: str
    name: str = ""
    service_name: str = ""
    secret_name: str = ""
    client_certificate_secret_name: str = ""
    output_name: str = ""
    cluster_name: str = ""

    @property
    def is_external(self) -> bool:
        """True when the target is an unmanaged cluster described by a Secret."""
        return bool(self.secret_name)

    @property
    def name_or_secret_name(self) -> str:
        """The target's name, or the Secret's for an external ref."""
        return self.name or self.secret_name

    @property
    def key(self) -> str:
        """``"<namespace>/<name>"``: the key of status maps and of ECK's NamespacedName."""
        return f"{self.namespace}/{self.name_or_secret_name}"

    def object_selector(self) -> GoStruct:
        """The Go ``commonv1.ObjectSelector`` of this ref, for ``HashObject``."""
        return object_selector(
            namespace=self.namespace,
            name=self.name,
            service_name=self.service_name,
            secret_name=self.secret_name,
        )

    def hash(self) -> str:
        """``HashObject`` of the (namespace-defaulted) ObjectSelector."""
        return hash_object(self.object_selector())


@dataclass(frozen=True)
class ParsedRefs:
    """The refs of one object and the problems found (``"spec.field: message"``)."""

    refs: tuple[AssociationRef, ...]
    errors: tuple[str, ...]


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _namespace_of(associated: Mapping[str, Any]) -> str:
    return view(associated).namespace


def _spec_of(associated: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = associated.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _is_empty(raw: Mapping[str, Any]) -> bool:
    return not any(
        _string(raw.get(key)) for key in ("name", "namespace", "serviceName", "secretName")
    )


def _parse_one(
    raw: object, *, association: Association, default_namespace: str, path: str
) -> tuple[AssociationRef | None, list[str]]:
    if not isinstance(raw, Mapping):
        return None, [f"{path}: must be an object"]
    name, secret_name = _string(raw.get("name")), _string(raw.get("secretName"))
    namespace, service_name = _string(raw.get("namespace")), _string(raw.get("serviceName"))
    client_cert = _string(raw.get("clientCertificateSecretName"))
    errors: list[str] = []
    if secret_name and not association.secret_name_allowed:
        errors.append(f"{path}.secretName: not supported for a {association.target.kind} reference")
    if name and secret_name:
        errors.append(f"{path}: specify name or secretName, not both")
    elif not name and not secret_name:
        errors.append(f"{path}: name or secretName is required")
    elif secret_name:
        errors.extend(
            f"{path}.{field}: only allowed with name, not with secretName"
            for field, value in (
                ("namespace", namespace),
                ("serviceName", service_name),
                ("clientCertificateSecretName", client_cert),
            )
            if value
        )
    if association.ref_extra_field == "clusterName" and not _string(raw.get("clusterName")):
        errors.append(f"{path}.clusterName: required")
    if errors:
        return None, errors
    ref = AssociationRef(
        association=association.name,
        target_kind=association.target.kind,
        namespace=namespace or default_namespace,
        name=name,
        service_name=service_name,
        secret_name=secret_name,
        client_certificate_secret_name=client_cert,
        output_name=_string(raw.get("outputName")),
        cluster_name=_string(raw.get("clusterName")),
    )
    return ref, []


def _multi_ref_errors(association: Association, refs: list[AssociationRef], path: str) -> list[str]:
    errors: list[str] = []
    keys = [ref.key for ref in refs]
    errors.extend(
        f"{path}: {key} is referenced more than once"
        for key in sorted({k for k in keys if keys.count(k) > 1})
    )
    if association.ref_extra_field == "outputName":
        outputs = [ref.output_name or DEFAULT_OUTPUT_NAME for ref in refs]
        if len(refs) > 1 and any(not ref.output_name for ref in refs):
            errors.append(f"{path}: every reference needs an outputName when there are several")
        errors.extend(
            f"{path}: outputName {output!r} is used more than once"
            for output in sorted({o for o in outputs if outputs.count(o) > 1})
        )
    if association.ref_extra_field == "clusterName":
        names = [ref.cluster_name for ref in refs]
        errors.extend(
            f"{path}: clusterName {name!r} is used more than once"
            for name in sorted({n for n in names if names.count(n) > 1})
        )
    return errors


def parse_refs(associated: Mapping[str, Any], association: Association) -> ParsedRefs:
    """Return the refs of ``association`` in ``associated`` (a manifest) and their problems.

    An absent or all-empty single ref is no association (as ECK's ``IsDefined``); a malformed ref is
    reported and left out, so the valid ones can still be reconciled.
    """
    kind = _string(associated.get("kind"))
    if kind and kind != association.associated_kind:
        return ParsedRefs((), (f"kind: a {kind} has no {association.name} association",))
    namespace = _namespace_of(associated)
    raw = _spec_of(associated).get(association.ref_field)
    path = f"spec.{association.ref_field}"
    if raw is None:
        return ParsedRefs((), ())
    if association.multi_ref:
        if not isinstance(raw, list):
            return ParsedRefs((), (f"{path}: must be a list",))
        refs: list[AssociationRef] = []
        errors: list[str] = []
        for index, item in enumerate(raw):
            ref, item_errors = _parse_one(
                item, association=association, default_namespace=namespace, path=f"{path}[{index}]"
            )
            errors.extend(item_errors)
            if ref is not None:
                refs.append(ref)
        errors.extend(_multi_ref_errors(association, refs, path))
        return ParsedRefs(tuple(refs), tuple(errors))
    if isinstance(raw, Mapping) and _is_empty(raw):
        return ParsedRefs((), ())
    ref, single_errors = _parse_one(
        raw, association=association, default_namespace=namespace, path=path
    )
    return ParsedRefs((ref,) if ref else (), tuple(single_errors))


def parse_all_refs(associated: Mapping[str, Any]) -> ParsedRefs:
    """Return the refs of every association of ``associated``'s kind, and all problems found."""
    kind = _string(associated.get("kind"))
    associations = associations_of(kind)
    if not associations:
        return ParsedRefs((), (f"kind: {kind or 'an object without kind'} has no associations",))
    refs: list[AssociationRef] = []
    errors: list[str] = []
    for association in associations:
        parsed = parse_refs(associated, association)
        refs.extend(parsed.refs)
        errors.extend(parsed.errors)
    return ParsedRefs(tuple(refs), tuple(errors))


def ref_to(
    *, associated_kind: str, target_kind: str, namespace: str, name: str = "", secret_name: str = ""
) -> AssociationRef:
    """Build the ref from ``associated_kind`` to a ``target_kind`` (raises if they cannot associate)."""
    association = find_association(associated_kind, target_kind)
    if not name and not secret_name:
        raise UnknownAssociationError("a reference needs a name or a secretName")
    return AssociationRef(
        association=association.name,
        target_kind=target_kind,
        namespace=namespace,
        name=name,
        secret_name=secret_name,
    )


def association_id(association: Association, ref: AssociationRef) -> str:
    """ECK's ``AssociationID``: ``""`` for single-ref kinds, ``<ns>-<name or secretName>`` otherwise."""
    return f"{ref.namespace}-{ref.name_or_secret_name}" if association.multi_ref else ""


def with_id(head: str, identifier: str, *, tail: str = "") -> str:
    """ECK's ``FormatNameWithID``: ``head`` + ``-<id>`` when the id is not empty + ``tail``."""
    return f"{head}-{identifier}{tail}" if identifier else f"{head}{tail}"
