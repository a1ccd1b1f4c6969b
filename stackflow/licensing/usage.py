"""ECK's licensing usage report, as a pure function: managed memory in, license level and ERU out.

ECK's leader computes, every two minutes, the memory its managed applications may use and turns it
into enterprise resource units: one unit per started 64 GiB of the total (``ceil(total / 64 GiB)``).
An application's memory is its main container's memory limit (else its request, else the
default limit ECK gives that container) times its replicas; the report names each application's
memory as ``"%.2fGiB"`` and in bytes, plus the total (``total_managed``). The license level is
``basic`` without a current operator license, else the license's type.

Objects go in as the dicts read from the API server; nothing here reads or writes anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stackflow.licensing.model import LicenseSpec
from stackflow.models.quantity import parse_quantity

__all__ = [
    "BASIC_LEVEL",
    "DEFAULT_MEMORY_BYTES",
    "ERU_BYTES",
    "GIB",
    "USAGE_APPS",
    "LicenseUsage",
    "ManagedApp",
    "app_memory_bytes",
    "enterprise_resource_units",
    "license_usage",
    "max_enterprise_resource_units",
]

GIB = 1024**3
#: The memory one enterprise resource unit covers.
ERU_BYTES = 64 * GIB
#: The level reported while no operator license is current.
BASIC_LEVEL = "basic"

#: The applications the report accounts, by their report name: (kind, main container name).
USAGE_APPS: Mapping[str, tuple[str, str]] = {
    "elasticsearch": ("Elasticsearch", "elasticsearch"),
    "kibana": ("Kibana", "kibana"),
    "apm": ("ApmServer", "apm-server"),
    "enterprise_search": ("EnterpriseSearch", "enterprise-search"),
    "logstash": ("Logstash", "logstash"),
}

#: The memory limit ECK sets on each application's main container when the spec sets none.
DEFAULT_MEMORY_BYTES: Mapping[str, int] = {
    "Elasticsearch": 2 * GIB,
    "Kibana": 1 * GIB,
    "ApmServer": 512 * 1024**2,
    "EnterpriseSearch": 4 * GIB,
    "Logstash": 2 * GIB,
}


@dataclass(frozen=True)
class ManagedApp:
    """One managed application object: its kind and its manifest (spec as read)."""

    kind: str
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class LicenseUsage:
    """The figures of ECK's ``elastic-licensing`` report (without its timestamp)."""

    level: str
    expiry: datetime | None
    enterprise_resource_units: int
    max_enterprise_resource_units: int
    #: Memory in bytes per report name (``USAGE_APPS``) and ``total_managed``.
    memory_bytes: Mapping[str, int]

    def report(self) -> dict[str, str]:
        """The report's data as ECK writes it (strings), minus ``timestamp``."""
        data = {
            "eck_license_level": self.level,
            "enterprise_resource_units": str(self.enterprise_resource_units),
        }
        if self.expiry is not None:
            data["eck_license_expiry_date"] = self.expiry.isoformat().replace("+00:00", "Z")
        if self.max_enterprise_resource_units:
            data["max_enterprise_resource_units"] = str(self.max_enterprise_resource_units)
        for name, amount in self.memory_bytes.items():
            data[f"{name}_memory"] = f"{amount / GIB:.2f}GiB"
            data[f"{name}_memory_bytes"] = str(amount)
        return data


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _container_memory(pod_template: object, container_name: str) -> int | None:
    """The memory limit (else request) of the named container of a pod template, if set."""
    spec = _mapping(_mapping(pod_template).get("spec"))
    for container in _sequence(spec.get("containers")):
        container = _mapping(container)
        if container.get("name") != container_name:
            continue
        resources = _mapping(container.get("resources"))
        for field in ("limits", "requests"):
            amount = parse_quantity(_mapping(resources.get(field)).get("memory"))
            if amount is not None and amount > 0:
                return int(amount)
    return None


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def app_memory_bytes(app: ManagedApp) -> int:
    """The memory `app` may use: per-Pod memory times replicas (summed over ES node sets)."""
    spec = _mapping(app.manifest.get("spec"))
    default = DEFAULT_MEMORY_BYTES[app.kind]
    container = next(name for kind, name in USAGE_APPS.values() if kind == app.kind)
    if app.kind == "Elasticsearch":
        total = 0
        for node_set in _sequence(spec.get("nodeSets")):
            node_set = _mapping(node_set)
            per_pod = _container_memory(node_set.get("podTemplate"), container) or default
            total += per_pod * _count(node_set.get("count"), 0)
        return total
    per_pod = _container_memory(spec.get("podTemplate"), container) or default
    return per_pod * _count(spec.get("count"), 1)


def enterprise_resource_units(total_bytes: int) -> int:
    """ERU for `total_bytes` of managed memory: one per started 64 GiB."""
    return math.ceil(total_bytes / ERU_BYTES) if total_bytes > 0 else 0


def max_enterprise_resource_units(license: LicenseSpec | None) -> int:
    """The ERU a license allows: ``max_resource_units``, else half its ``max_instances``."""
    if license is None:
        return 0
    return license.max_resource_units or license.max_instances // 2


def license_usage(apps: Iterable[ManagedApp], license: LicenseSpec | None) -> LicenseUsage:
    """The licensing usage report of `apps` under the current operator `license` (None: basic)."""
    memory = dict.fromkeys(USAGE_APPS, 0)
    report_name = {kind: name for name, (kind, _) in USAGE_APPS.items()}
    for app in apps:
        name = report_name.get(app.kind)
        if name is not None:
            memory[name] += app_memory_bytes(app)
    total = sum(memory.values())
    memory["total_managed"] = total
    return LicenseUsage(
        level=BASIC_LEVEL if license is None else license.type,
        expiry=None if license is None else license.expiry_time(),
        enterprise_resource_units=enterprise_resource_units(total),
        max_enterprise_resource_units=max_enterprise_resource_units(license),
        memory_bytes=memory,
    )
