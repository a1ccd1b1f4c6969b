"""Addresses and names: each Pod's loopback IP and the hosts file that stands in for cluster DNS."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Pod IPs are taken from here: inside 127.0.0.0/8, clear of 127.0.0.1 and Debian's 127.0.1.1.
POD_NETWORK = ipaddress.IPv4Network("127.1.0.0/16")
CLUSTER_DOMAIN = "cluster.local"


def allocate_ip(
    in_use: Iterable[str],
    network: ipaddress.IPv4Network = POD_NETWORK,
    *,
    free: Callable[[str], bool] = lambda address: True,
) -> str:
    """The lowest address of ``network`` that this runner does not use (``in_use``) and that
    ``free`` says nothing else on the machine holds (another runner's node, say); its first
    address is kept back, like a gateway."""
    taken = set(in_use)
    for index, address in enumerate(network.hosts()):
        if index < 1:
            continue
        if str(address) not in taken and free(str(address)):
            return str(address)
    raise RuntimeError(f"no free Pod IP left in {network}")


#: The ports a node binds on its Pod IP: HTTP, transport, remote cluster server.
NODE_PORTS = (9200, 9300, 9443)


def address_unbound(address: str, ports: Iterable[int] = NODE_PORTS) -> bool:
    """Whether no process on the machine listens on ``address`` at any of ``ports``."""
    for port in ports:
        with socket.socket() as probe:
            try:
                probe.bind((address, port))
            except OSError:
                return False
    return True


@dataclass(frozen=True)
class RunningPod:
    """What the hosts file needs of a Pod this runner runs."""

    namespace: str
    name: str
    ip: str
    labels: Mapping[str, str]
    subdomain: str
    ready: bool


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in (selector or {}).items())


def _names(name: str, namespace: str) -> list[str]:
    return [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}"]


def hosts_file(pods: Iterable[RunningPod], services: Iterable[Mapping[str, Any]]) -> str:
    """``/etc/hosts`` for every container: each Pod's DNS name (``<pod>.<subdomain>.<ns>.svc``)
    and each Service that selects these Pods, at the address cluster DNS would give.

    A Service resolves to one of its Pods (a ready one first, or any when it publishes not-ready
    addresses); there is no virtual IP here, so a ClusterIP Service is resolved like a headless one.
    """
    pods = sorted(pods, key=lambda pod: (pod.namespace, pod.name))
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    for pod in pods:
        names = [pod.name]
        if pod.subdomain:
            names = _names(f"{pod.name}.{pod.subdomain}", pod.namespace) + names
        lines.append(f"{pod.ip}\t{' '.join(names)}")
    for service in sorted(
        services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])
    ):
        metadata, spec = service["metadata"], service.get("spec") or {}
        selected = [
            pod
            for pod in pods
            if pod.namespace == metadata["namespace"] and _selects(spec.get("selector"), pod.labels)
        ]
        usable = [pod for pod in selected if pod.ready or spec.get("publishNotReadyAddresses")]
        if usable:
            lines.append(
                f"{usable[0].ip}\t{' '.join(_names(metadata['name'], metadata['namespace']))}"
            )
    return "\n".join(lines) + "\n"
