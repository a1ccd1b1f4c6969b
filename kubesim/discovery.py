"""Discovery documents: ``/version``, legacy and aggregated discovery, the OpenAPI stubs (§2.2-2.5).

Table rendering (``to_table``) lives in :mod:`kubesim.tables` and is re-exported here.

Shapes follow the real API server (v1.37): resources and built-in subresources sorted by name, the
``responseKind`` of a built-in resource without group and version (they are the ones of the
group version being listed), custom resources listing their verbs in the order the apiextensions
server does. ``/openapi/v2`` is an empty but valid document (kubectl reads it only as protobuf, to
validate the items of a ``kind: List`` client-side; with no definitions it validates nothing and
leaves validation to the server's ``fieldValidation``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from kubesim.resource_type import SUBRESOURCE_VERBS, ResourceType
from kubesim.resources import Registry
from kubesim.tables import to_table

__all__ = [
    "AGGREGATED_DISCOVERY_CONTENT_TYPE",
    "aggregated_discovery",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "openapi_v2_document",
    "openapi_v2_protobuf",
    "openapi_v3_document",
    "openapi_v3_index",
    "to_table",
    "version_info",
]

AGGREGATED_DISCOVERY_CONTENT_TYPE = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)
KUBE_MAJOR = "1"
KUBE_MINOR = "37"
GIT_VERSION = "v1.37.0-kubesim"
#: The oldest minor version this one can interoperate with (compatibility version, KEP-4330).
MIN_COMPATIBILITY_MINOR = "36"
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_SCALE_KIND = {"group": "autoscaling", "version": "v1", "kind": "Scale"}


def version_info() -> dict[str, str]:
    """The ``/version`` body (key order as the real server writes it)."""
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": MIN_COMPATIBILITY_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """The legacy ``/api`` body (``APIVersions``)."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _api_group_body(group: str, versions: list[str]) -> dict[str, Any]:
    return {
        "name": group,
        "versions": [_group_version(group, v) for v in versions],
        "preferredVersion": _group_version(group, versions[0]),
    }


def api_group_list(reg: Registry) -> dict[str, Any]:
    """The legacy ``/apis`` body (``APIGroupList``), core excluded."""
    groups = [_api_group_body(g, versions) for g, versions in reg.group_versions() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(reg: Registry, group: str) -> dict[str, Any] | None:
    """The ``/apis/{group}`` body (``APIGroup``), or None for an unknown group."""
    for name, versions in reg.group_versions():
        if name == group and name:
            return {"kind": "APIGroup", "apiVersion": "v1", **_api_group_body(name, versions)}
    return None


def _resources_of(reg: Registry, group: str, version: str) -> list[ResourceType]:
    # Only what lookup() serves: a CRD can never shadow a built-in resource.
    return sorted(
        (
            rt
            for rt in reg.all()
            if rt.group == group
            and rt.version == version
            and reg.lookup(group, version, rt.plural) is rt
        ),
        key=lambda rt: rt.plural,
    )


def _storage_version_hash(rt: ResourceType) -> str:
    digest = hashlib.sha256(f"{rt.group}/{rt.version}/{rt.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _extra_subresources(rt: ResourceType) -> list[tuple[str, list[str]]]:
    """Subresources beyond status/scale that discovery lists (namespace finalize)."""
    if rt.group == "" and rt.plural == "namespaces":
        return [("finalize", ["update"])]
    return []


def _subresources(rt: ResourceType) -> list[tuple[str, list[str]]]:
    """Every subresource with its verbs: sorted by name for built-in resources, status before
    scale for a custom resource (the apiextensions server adds them in that order)."""
    subresources = [(name, list(SUBRESOURCE_VERBS)) for name in rt.subresources]
    listed = [*subresources, *_extra_subresources(rt)]
    return listed if rt.custom else sorted(listed)


def _legacy_entries(rt: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    entry["storageVersionHash"] = _storage_version_hash(rt)
    entries = [entry]
    for name, verbs in _subresources(rt):
        sub: dict[str, Any] = {
            "name": f"{rt.plural}/{name}",
            "singularName": "",
            "namespaced": rt.namespaced,
        }
        if name == "scale":
            sub.update(_SCALE_KIND)
        else:
            sub["kind"] = rt.kind
        sub["verbs"] = verbs
        entries.append(sub)
    return entries


def api_resource_list(reg: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The ``/api/v1`` or ``/apis/{g}/{v}`` body (``APIResourceList``), or None when not served."""
    resources = _resources_of(reg, group, version)
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for rt in resources for entry in _legacy_entries(rt)],
    }


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    # Built-in resources leave out the group version they are listed under; a CRD's resources
    # name it in full.
    if rt.custom:
        response_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    else:
        response_kind = {"group": "", "version": "", "kind": rt.kind}
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": response_kind,
        "scope": rt.scope,
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    rendered = [
        {
            "subresource": name,
            "responseKind": dict(_SCALE_KIND) if name == "scale" else dict(response_kind),
            "verbs": verbs,
        }
        for name, verbs in _subresources(rt)
    ]
    if rendered:
        entry["subresources"] = rendered
    return entry


def aggregated_discovery(reg: Registry, *, core: bool) -> dict[str, Any]:
    """The aggregated ``/api`` (core=True) or ``/apis`` body, served as
    :data:`AGGREGATED_DISCOVERY_CONTENT_TYPE`."""
    items: list[dict[str, Any]] = []
    for group, versions in reg.group_versions():
        if (group == "") != core:
            continue
        items.append(
            {
                "metadata": {"name": group},
                "versions": [
                    {
                        "version": version,
                        "resources": [
                            _aggregated_resource(rt) for rt in _resources_of(reg, group, version)
                        ],
                        "freshness": "Current",
                    }
                    for version in versions
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def _openapi_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _document_hash(document: dict[str, Any]) -> str:
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest().upper()


def openapi_v3_index(reg: Registry) -> dict[str, Any]:
    """The ``/openapi/v3`` body: one ``serverRelativeURL`` (with a content hash) per group version."""
    paths: dict[str, Any] = {}
    for group, versions in reg.group_versions():
        for version in versions:
            key = _openapi_key(group, version)
            document = openapi_v3_document(reg, key)
            if document is not None:
                url = f"/openapi/v3/{key}?hash={_document_hash(document)}"
                paths[key] = {"serverRelativeURL": url}
    return {"paths": paths}


def _patch_operation(gvk: dict[str, str]) -> dict[str, Any]:
    # No requestBody: kubectl then falls back to its compiled-in types for strategic merge.
    return {
        "patch": {
            "x-kubernetes-group-version-kind": dict(gvk),
            "parameters": [
                {"name": name, "in": "query", "schema": {"type": "string"}}
                for name in ("dryRun", "fieldManager", "fieldValidation", "force")
            ],
            "responses": {"200": {"description": "OK"}},
        }
    }


def _object_path(rt: ResourceType) -> str:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    namespace = "/namespaces/{namespace}" if rt.namespaced else ""
    return f"{prefix}{namespace}/{rt.plural}/{{name}}"


def openapi_v3_document(reg: Registry, path: str) -> dict[str, Any] | None:
    """The stub ``/openapi/v3/<api/v1 | apis/g/v>`` document, or None for an unknown group version.

    Every resource's PATCH operation lists ``fieldValidation`` so kubectl delegates validation to
    the server.
    """
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[:1] == ["apis"] and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    resources = _resources_of(reg, group, version)
    if not resources:
        return None
    paths: dict[str, Any] = {}
    for rt in resources:
        if "patch" not in rt.verbs:
            continue
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        object_path = _object_path(rt)
        paths[object_path] = _patch_operation(gvk)
        for sub in rt.subresources:
            paths[f"{object_path}/{sub}"] = _patch_operation(_SCALE_KIND if sub == "scale" else gvk)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _protobuf_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def openapi_v2_document() -> dict[str, Any]:
    """The ``/openapi/v2`` document as JSON: no paths, no definitions."""
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": {},
    }


def openapi_v2_protobuf() -> bytes:
    """:func:`openapi_v2_document` as an ``openapi_v2.Document`` protobuf (gnostic's message:
    ``swagger`` = 1, ``info`` = 2 with ``title`` = 1 and ``version`` = 2, ``paths`` = 8), what
    kubectl asks for with :data:`OPENAPI_V2_PROTOBUF`."""
    info = _protobuf_field(1, b"Kubernetes") + _protobuf_field(2, GIT_VERSION.encode())
    return _protobuf_field(1, b"2.0") + _protobuf_field(2, info) + _protobuf_field(8, b"")
