"""Where to dial a cluster's HTTP API from outside its network: a ready Pod of its Service (pure).

ECK dials ``https://<es>-es-internal-http.<ns>.svc:9200``, a name only the cluster's DNS resolves.
An operator outside the cluster (``elasticsearch-dial: endpoints``) reads that Service's
EndpointSlices instead: the kube-controller-manager keeps one or more per Service, labelled
``kubernetes.io/service-name``, listing each selected Pod's address and whether it is ready. The
operator dials the ready addresses one after the other and still checks that the certificate names
the Service, as a client inside the cluster would: the HTTP certificate carries the Service's
names, never a Pod's address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import HTTP_PORT

#: The label the EndpointSlice controller puts on every slice of a Service.
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
#: The address types that are Pod addresses; ``FQDN`` slices have no defined meaning.
_IP_ADDRESS_TYPES = frozenset({"IPv4", "IPv6"})

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class DialPlan:
    """The URLs to dial in turn, and the name the server's certificate must carry."""

    urls: tuple[str, ...]
    server_hostname: str


def internal_service_host(namespace: str, name: str) -> str:
    """The internal HTTP Service's DNS name, ``<es>-es-internal-http.<ns>.svc``."""
    return f"{names.internal_http_service_name(name)}.{namespace}.svc"


def _slice_port(endpoint_slice: Mapping[str, Any], scheme: str) -> int | None:
    """The Pods' HTTP port in a slice: the port named after the scheme (ECK names the Service's
    port ``https`` or ``http``), else the slice's only port; None when neither says."""
    ports = endpoint_slice.get("ports")
    if ports is None:
        # No port list means every port: the Pods serve HTTP on Elasticsearch's own.
        return HTTP_PORT
    numbered = [port for port in ports if isinstance(port, Mapping) and port.get("port")]
    named = [port for port in numbered if port.get("name") == scheme]
    chosen = named or (numbered if len(numbered) == 1 else [])
    return int(chosen[0]["port"]) if chosen else None


def _is_ready(endpoint: Mapping[str, Any]) -> bool:
    # The API: an unset ``ready`` means ready. A terminating Pod is never ready here unless the
    # Service publishes not-ready addresses, which ECK's internal HTTP Service does not.
    ready = (endpoint.get("conditions") or {}).get("ready")
    return ready is None or ready is True


def _first_address(endpoint: Mapping[str, Any]) -> _Address | None:
    # The controller writes one address per Pod endpoint; the API says to use the first.
    addresses = endpoint.get("addresses") or []
    try:
        return ipaddress.ip_address(str(addresses[0])) if addresses else None
    except ValueError:
        return None


def _url(scheme: str, address: _Address, port: int) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"{scheme}://{host}:{port}"


def dial_plan(
    *, namespace: str, name: str, scheme: str, slices: Iterable[Mapping[str, Any]]
) -> DialPlan:
    """Where to dial the cluster ``namespace``/``name`` over ``scheme`` (``https`` or ``http``):
    every ready address of its internal HTTP Service's EndpointSlices ``slices``, each once, in
    address order (IPv4 before IPv6), so every call tries them in the same order; and the name
    the certificate must carry. No ready address gives no URL (the cluster is not reachable)."""
    found: dict[tuple[_Address, int], str] = {}
    for endpoint_slice in slices:
        if endpoint_slice.get("addressType") not in _IP_ADDRESS_TYPES:
            continue
        port = _slice_port(endpoint_slice, scheme)
        if port is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            address = _first_address(endpoint)
            if address is not None and _is_ready(endpoint):
                found[(address, port)] = _url(scheme, address, port)
    ordered = sorted(found, key=lambda key: (key[0].version, int(key[0]), key[1]))
    return DialPlan(
        urls=tuple(found[key] for key in ordered),
        server_hostname=internal_service_host(namespace, name),
    )
