"""Where to dial a cluster's HTTP API from outside its network: a ready Pod of its Service (pure).

ECK dials ``https://<es>-es-internal-http.<ns>.svc:9200``, a name only the cluster's DNS resolves.
An operator outside the cluster (``elasticsearch-dial: endpoints``) dials that Service's ready Pod
addresses instead, and computes them from the Service and the Pods it selects exactly as the
kube-controller-manager's EndpointSlice controller does (``k8s.io/endpointslice``,
``reconciler.go``, ``utils.go``), rather than reading the slices the controller writes: the API
server refuses loopback addresses in EndpointSlices and Endpoints ("may not be in the loopback
range"), so the slices of Pods run on this machine's 127.x addresses never list them. The operator
dials the ready addresses one after the other and still checks that the certificate names the
Service, as a client inside the cluster would: the HTTP certificate carries the Service's names,
never a Pod's address.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names

#: A Pod that has finished keeps its address in its status but serves nothing.
_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
#: ``spec.ipFamilies`` values, by IP version.
_FAMILIES = {"IPv4": 4, "IPv6": 6}

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class DialPlan:
    """The URLs to dial in turn, and the name the server's certificate must carry."""

    urls: tuple[str, ...]
    server_hostname: str


def internal_service_host(namespace: str, name: str) -> str:
    """The internal HTTP Service's DNS name, ``<es>-es-internal-http.<ns>.svc``."""
    return f"{names.internal_http_service_name(name)}.{namespace}.svc"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def pod_selector(service: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The labels ``service`` selects its Pods by; None when it selects none, so its endpoints
    are not computed from Pods: no Service, no selector (the API server drops an empty one, and
    the controller leaves a selector-less Service's endpoints to whoever wrote them), or an
    ``ExternalName`` Service. Listing Pods without a selector would list every Pod."""
    if service is None:
        return None
    spec = _spec(service)
    selector = spec.get("selector")
    if spec.get("type") == "ExternalName" or not isinstance(selector, Mapping) or not selector:
        return None
    return {str(key): str(value) for key, value in selector.items()}


def _service_port(service: Mapping[str, Any], scheme: str) -> Mapping[str, Any] | None:
    """The Service's HTTP port: the one named after the scheme (ECK names it ``https`` or
    ``http``), else its only port; None when neither says."""
    ports = [
        port
        for port in _spec(service).get("ports") or []
        if isinstance(port, Mapping) and port.get("port")
    ]
    named = [port for port in ports if port.get("name") == scheme]
    chosen = named or (ports if len(ports) == 1 else [])
    return chosen[0] if chosen else None


def _target_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """``FindPort``: a numbered target port as it is, a named one resolved against the Pod's
    container ports of the same protocol (sidecar init containers included); None when the Pod
    has no port of that name, which the controller then leaves out for this Pod."""
    # The API server defaults an unset targetPort to the port.
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if not isinstance(target, str):
        return None
    protocol = service_port.get("protocol") or "TCP"
    spec = _spec(pod)
    sidecars = [
        container
        for container in spec.get("initContainers") or []
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always"
    ]
    for container in [*(spec.get("containers") or []), *sidecars]:
        ports = container.get("ports") if isinstance(container, Mapping) else None
        for port in ports or []:
            if (
                isinstance(port, Mapping)
                and port.get("name") == target
                and (port.get("protocol") or "TCP") == protocol
                and isinstance(port.get("containerPort"), int)
            ):
                return int(port["containerPort"])
    return None


def _address_families(service: Mapping[str, Any]) -> frozenset[int]:
    """``getAddressTypesForService``: the Service's ``ipFamilies``; without them (an API server
    that does not default them), the family of its cluster IP; a headless Service, both."""
    spec = _spec(service)
    families = frozenset(
        _FAMILIES[family] for family in spec.get("ipFamilies") or [] if family in _FAMILIES
    )
    if families:
        return families
    cluster_ip = spec.get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        try:
            return frozenset({ipaddress.ip_address(str(cluster_ip)).version})
        except ValueError:
            pass
    return frozenset(_FAMILIES.values())


def _pod_addresses(pod: Mapping[str, Any]) -> list[_Address]:
    """The Pod's IPs, ``status.podIPs`` (the controller reads those; the API server keeps the
    first equal to ``status.podIP``), else ``status.podIP``; unparsable ones left out."""
    status = _status(pod)
    texts = [
        str(entry.get("ip"))
        for entry in status.get("podIPs") or []
        if isinstance(entry, Mapping) and entry.get("ip")
    ]
    if not texts and status.get("podIP"):
        texts = [str(status["podIP"])]
    found: list[_Address] = []
    for text in texts:
        try:
            found.append(ipaddress.ip_address(text))
        except ValueError:
            continue
    return found


def _is_ready_endpoint(pod: Mapping[str, Any], *, publish_not_ready: bool) -> bool:
    """Whether the controller lists ``pod`` as a ready endpoint: not finished
    (``ShouldPodBeInEndpoints``), not being deleted unless the Service publishes not-ready
    addresses (which then includes terminating Pods too), and Ready=True or published anyway
    (``podToEndpoint``: ``ready = publishNotReadyAddresses || (serving && !terminating)``)."""
    if _status(pod).get("phase") in _TERMINAL_PHASES:
        return False
    if publish_not_ready:
        return True
    if view(pod).deletion_timestamp:
        return False
    conditions = _status(pod).get("conditions") or []
    return any(
        isinstance(condition, Mapping)
        and condition.get("type") == "Ready"
        and condition.get("status") == "True"
        for condition in conditions
    )


def _selects(selector: Mapping[str, str], pod: Mapping[str, Any]) -> bool:
    labels = view(pod).labels
    return all(labels.get(key) == value for key, value in selector.items())


def _url(scheme: str, address: _Address, port: int) -> str:
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"{scheme}://{host}:{port}"


def dial_plan(
    *,
    namespace: str,
    name: str,
    scheme: str,
    service: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]],
) -> DialPlan:
    """Where to dial the cluster ``namespace``/``name`` over ``scheme`` (``https`` or ``http``):
    the ready endpoints the EndpointSlice controller would list for its internal HTTP Service
    ``service`` (None: there is none) from ``pods``, each address of a family the Service
    serves at the Service port named after the scheme (else its only port) resolved on the Pod;
    each once, in address order (IPv4 before IPv6), so every call tries them in the same order;
    and the name the certificate must carry. No ready endpoint gives no URL (the cluster is not
    reachable)."""
    plan = DialPlan(urls=(), server_hostname=internal_service_host(namespace, name))
    selector = pod_selector(service)
    if service is None or selector is None:
        return plan
    service_port = _service_port(service, scheme)
    if service_port is None:
        return plan
    publish_not_ready = _spec(service).get("publishNotReadyAddresses") is True
    families = _address_families(service)
    found: dict[tuple[_Address, int], str] = {}
    for pod in pods:
        if view(pod).namespace != view(service).namespace or not _selects(selector, pod):
            continue
        if not _is_ready_endpoint(pod, publish_not_ready=publish_not_ready):
            continue
        port = _target_port(pod, service_port)
        if port is None:
            continue
        for family in families:
            # One endpoint per address family, at the Pod's first IP of that family.
            address = next((ip for ip in _pod_addresses(pod) if ip.version == family), None)
            if address is not None:
                found[(address, port)] = _url(scheme, address, port)
    ordered = sorted(found, key=lambda key: (key[0].version, int(key[0]), key[1]))
    return dataclasses.replace(plan, urls=tuple(found[key] for key in ordered))
