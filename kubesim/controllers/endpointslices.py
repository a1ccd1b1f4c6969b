"""The kube-controller-manager's EndpointSlice controller: each Service's Pods as EndpointSlices.

For every Service with a selector (not ``ExternalName``) it keeps ``discovery.k8s.io/v1``
EndpointSlices named ``<service>-<random>``, owned by the Service and labelled
``kubernetes.io/service-name: <service>`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io`` (plus the Service's own labels), listing every selected Pod
that has an IP and has not finished: its address, ``ready`` (Ready and not terminating, or the
Service publishes not-ready addresses), ``serving`` (Ready), ``terminating`` (being deleted),
its node and a ``targetRef``. Pods whose Service ports resolve to the same numbers share a slice;
a Service without any such Pod keeps one empty placeholder slice, as the real controller does
(``k8s.io/endpointslice``, ``reconciler.go``, ``utils.go``).

Not simulated: IPv6 slices (kubesim's Pods and Services are IPv4), the 100-endpoint cap per slice,
topology (zones and hints) and the ``endpoints.kubernetes.io/last-change-trigger-time`` annotation.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from kubesim.controllers.base import (
    EventLike,
    condition,
    is_deleting,
    meta,
    name_of,
    namespace_of,
    owner_reference,
    uid_of,
)
from kubesim.controllers.store_access import get_or_none, list_objects, type_for
from kubesim.controllers.workload_rules import spec_of
from kubesim.errors import StatusError
from kubesim.resources import Registry
from kubesim.store import Store

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
_RESERVED_LABELS = frozenset({SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL})

ServiceKey = tuple[str, str]


def _selector(service: Mapping[str, Any]) -> dict[str, str] | None:
    """The Service's Pod selector; None when it manages no endpoints (no selector, ExternalName)."""
    spec = spec_of(service)
    selector = spec.get("selector")
    if spec.get("type") == "ExternalName" or not isinstance(selector, dict):
        return None
    return {str(key): str(value) for key, value in selector.items()}


def _selects(selector: Mapping[str, str], pod: Mapping[str, Any]) -> bool:
    labels = meta(pod).get("labels") or {}
    return all(labels.get(key) == value for key, value in selector.items())


def _pod_ipv4s(pod: Mapping[str, Any]) -> list[str]:
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    assert isinstance(status, dict)
    ips = [str(entry.get("ip")) for entry in status.get("podIPs") or [] if isinstance(entry, dict)]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    found = []
    for ip in ips:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            continue
        if address.version == 4:
            found.append(str(address))
    return found


def _in_endpoints(pod: Mapping[str, Any]) -> bool:
    """``ShouldPodBeInEndpoints(pod, includeTerminating=true)``: not finished, and an IP."""
    status = pod.get("status") if isinstance(pod.get("status"), dict) else {}
    assert isinstance(status, dict)
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    return bool(status.get("podIP") or status.get("podIPs"))


def _find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """``FindPort``: a numeric target port as is, a named one from the Pod's container ports."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    spec = spec_of(pod)
    sidecars = [
        c
        for c in spec.get("initContainers") or []
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    ]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in (container.get("ports") or []) if isinstance(container, dict) else []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The slice ports of ``pod`` behind ``service`` (a port the Pod does not expose is left out)."""
    ports = []
    for service_port in spec_of(service).get("ports") or []:
        number = _find_port(pod, service_port)
        if number is None:
            continue
        port: dict[str, Any] = {
            "name": str(service_port.get("name") or ""),
            "protocol": str(service_port.get("protocol") or "TCP"),
            "port": number,
        }
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def pod_endpoint(service: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
    """``podToEndpoint``: the Pod's address, conditions, node and reference."""
    serving = (condition(pod, "Ready") or {}).get("status") == "True"
    terminating = is_deleting(pod)
    publish = bool(spec_of(service).get("publishNotReadyAddresses"))
    endpoint: dict[str, Any] = {
        "addresses": _pod_ipv4s(pod),
        "conditions": {
            "ready": publish or (serving and not terminating),
            "serving": serving,
            "terminating": terminating,
        },
    }
    pod_spec = spec_of(pod)
    if pod_spec.get("hostname") and pod_spec.get("subdomain") == name_of(service):
        endpoint["hostname"] = pod_spec["hostname"]
    endpoint["targetRef"] = {
        "kind": "Pod",
        "namespace": namespace_of(pod) or "",
        "name": name_of(pod),
        "uid": uid_of(pod),
    }
    if pod_spec.get("nodeName"):
        endpoint["nodeName"] = pod_spec["nodeName"]
    return endpoint


def desired_groups(
    service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> list[tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]]:
    """The (ports, endpoints) of each slice ``service`` should have, in a stable order: one per
    distinct port list of its selected Pods, or one placeholder (``None``, ``None``: the real
    controller's empty lists, which the server returns as null) when it selects none (pure)."""
    selector = _selector(service)
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    if selector is not None:
        chosen = (
            pod
            for pod in pods
            if namespace_of(pod) == namespace_of(service)
            and _selects(selector, pod)
            and _in_endpoints(pod)
        )
        for pod in sorted(chosen, key=name_of):
            ports = endpoint_ports(service, pod)
            key = json.dumps(ports, sort_keys=True)
            groups.setdefault(key, (ports, []))[1].append(pod_endpoint(service, pod))
    if not groups:
        return [(None, None)]
    return [(ports or None, endpoints) for _, (ports, endpoints) in sorted(groups.items())]


def slice_labels(service: Mapping[str, Any]) -> dict[str, str]:
    """``setEndpointSliceLabels``: the Service's labels, the reserved ones set by the controller."""
    labels = {
        str(key): str(value)
        for key, value in (meta(service).get("labels") or {}).items()
        if key not in _RESERVED_LABELS
    }
    if spec_of(service).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = name_of(service)
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def is_managed_slice_of(endpoint_slice: Mapping[str, Any], service_name: str) -> bool:
    """Whether the controller manages ``endpoint_slice`` for the Service ``service_name``."""
    labels = meta(endpoint_slice).get("labels") or {}
    return (
        labels.get(SERVICE_NAME_LABEL) == service_name
        and labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME
    )


class EndpointSliceController:
    """Reconciler keyed by ``(namespace, service name)``."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self._store = store
        self._registry = registry
        #: The selector of every Service that has one: which Services a Pod event concerns.
        self._selectors: dict[ServiceKey, dict[str, str]] = {}

    def observe(self, event: EventLike) -> Iterable[Hashable]:
        """Services, the Pods they select (before and after the change) and their slices."""
        resource = (event.rt.group, event.rt.plural)
        namespace = namespace_of(event.obj) or ""
        if resource == ("", "services"):
            key = (namespace, name_of(event.obj))
            selector = _selector(event.obj)
            if event.type == "DELETED" or selector is None:
                self._selectors.pop(key, None)
            else:
                self._selectors[key] = selector
            # The garbage collector deletes a deleted Service's slices (they are owned).
            return [] if event.type == "DELETED" else [key]
        if resource == ("", "pods"):
            versions = [obj for obj in (event.obj, event.old) if obj is not None]
            return [
                key
                for key, selector in self._selectors.items()
                if key[0] == namespace and any(_selects(selector, pod) for pod in versions)
            ]
        if resource == ("discovery.k8s.io", "endpointslices"):
            labels = meta(event.obj).get("labels") or {}
            if labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME and labels.get(SERVICE_NAME_LABEL):
                return [(namespace, str(labels[SERVICE_NAME_LABEL]))]
        return []

    def reconcile(self, key: Hashable) -> None:
        """Bring the Service's managed slices in line with the Pods it selects."""
        assert isinstance(key, tuple)
        services = type_for(self._registry, "", "services")
        pods = type_for(self._registry, "", "pods")
        slices = type_for(self._registry, "discovery.k8s.io", "endpointslices")
        if services is None or pods is None or slices is None:
            return
        namespace, name = key
        service = get_or_none(self._store, services, namespace, name)
        if service is None or is_deleting(service) or _selector(service) is None:
            return
        current = [
            item
            for item in list_objects(self._store, slices, namespace)
            if is_managed_slice_of(item, name)
        ]
        wanted = desired_groups(service, list_objects(self._store, pods, namespace))
        labels = slice_labels(service)
        unmatched = list(current)
        for ports, endpoints in wanted:
            match = next(
                (
                    item
                    for item in unmatched
                    if item.get("addressType") == "IPv4" and item.get("ports") == ports
                ),
                None,
            )
            if match is None:
                self._create(slices, service, labels, ports, endpoints)
                continue
            unmatched.remove(match)
            if match.get("endpoints") != endpoints or (meta(match).get("labels") or {}) != labels:
                match["endpoints"] = endpoints
                match.setdefault("metadata", {})["labels"] = labels
                self._store.update(slices, match, namespace=namespace, name=name_of(match))
        for extra in unmatched:
            try:
                self._store.delete(slices, namespace, name_of(extra))
            except StatusError as err:
                if err.code != 404:
                    raise

    def _create(
        self,
        slices: Any,
        service: Mapping[str, Any],
        labels: Mapping[str, str],
        ports: list[dict[str, Any]] | None,
        endpoints: list[dict[str, Any]] | None,
    ) -> None:
        namespace = namespace_of(service)
        body = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": f"{name_of(service)}-",
                "namespace": namespace,
                "labels": dict(labels),
                "ownerReferences": [owner_reference(service, api_version="v1", kind="Service")],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }
        try:
            self._store.create(slices, body, namespace=namespace)
        except StatusError as err:
            # A namespace being deleted refuses new objects; its Services go with it.
            if err.code != 403:
                raise
