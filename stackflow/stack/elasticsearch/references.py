"""The Secrets an Elasticsearch spec references (a change to one of them triggers a reconcile)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.objects import view


@dataclass(frozen=True, order=True)
class ReferencedObject:
    """A Secret or ConfigMap named by the spec, in the cluster's namespace unless stated."""

    kind: str
    namespace: str
    name: str


def _secret_names(spec: Mapping[str, Any]) -> list[str]:
    http_tls = (spec.get("http") or {}).get("tls") or {}
    transport_tls = (spec.get("transport") or {}).get("tls") or {}
    auth = spec.get("auth") or {}
    candidates = [
        *(source.get("secretName") for source in spec.get("secureSettings") or []),
        (http_tls.get("certificate") or {}).get("secretName"),
        (transport_tls.get("certificate") or {}).get("secretName"),
        *(source.get("secretName") for source in auth.get("fileRealm") or []),
        *(source.get("secretName") for source in auth.get("roles") or []),
    ]
    return [str(name) for name in candidates if name]


def referenced_objects(es: Mapping[str, Any]) -> list[ReferencedObject]:
    """Return the Secrets and ConfigMaps ``es``'s spec references, sorted and without duplicates."""
    namespace = view(es).namespace or "default"
    spec: Mapping[str, Any] = es.get("spec") or {}
    found = {ReferencedObject("Secret", namespace, name) for name in _secret_names(spec)}
    transport_tls = (spec.get("transport") or {}).get("tls") or {}
    ca_config_map = (transport_tls.get("certificateAuthorities") or {}).get("configMapName")
    if ca_config_map:
        found.add(ReferencedObject("ConfigMap", namespace, str(ca_config_map)))
    return sorted(found)
