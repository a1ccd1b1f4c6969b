"""The application controllers: one row per ECK application kind, from one builder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stackflow.api.kinds import kind_info
from stackflow.controllers.table import ChildWatch, Controller, Gate, owners_by_labels
from stackflow.models.engine import ObjectKey
from stackflow.models.kinds import (
    CONFIGMAPS,
    DAEMONSETS,
    DEPLOYMENTS,
    PODS,
    SECRETS,
    SERVICES,
    STATEFULSETS,
)
from stackflow.models.objects import view
from stackflow.stack.apps import APP_KINDS, AppKind
from stackflow.stack.apps.associations import (
    confs_from_annotations,
    parse_confs,
    referenced_secret_names,
)
from stackflow.stack.apps.fleet import fleet_server_reference, kibana_reference

__all__ = ["APP_CONTROLLERS", "APP_CONTROLLER_NAMES", "app_controller", "app_references"]

_KIBANA = kind_info("Kibana").resource
_AGENT = kind_info("Agent").resource
_CHILD_KINDS = (DEPLOYMENTS, DAEMONSETS, STATEFULSETS, SERVICES, CONFIGMAPS, SECRETS, PODS)
#: Controller names: ECK's short kind names.
APP_CONTROLLER_NAMES: Mapping[str, str] = {
    "Kibana": "kibana",
    "ApmServer": "apmserver",
    "EnterpriseSearch": "enterprisesearch",
    "Beat": "beat",
    "Agent": "agent",
    "Logstash": "logstash",
    "ElasticMapsServer": "maps",
    "PackageRegistry": "packageregistry",
}


def _spec_secret_names(spec: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for field in ("configRef", "pipelinesRef"):
        value = (spec.get(field) or {}).get("secretName")
        if value:
            names.add(str(value))
    certificate = (((spec.get("http") or {}).get("tls") or {}).get("certificate") or {}).get(
        "secretName"
    )
    if certificate:
        names.add(str(certificate))
    for entry in spec.get("secureSettings") or []:
        if isinstance(entry, Mapping) and entry.get("secretName"):
            names.add(str(entry["secretName"]))
    return names


def app_references(obj: Mapping[str, Any]) -> list[ObjectKey]:
    """The Secrets an application depends on: spec references and its association Secrets (pure).

    Association Secrets (credentials, CA copies, external targets' Secrets) are read from the conf
    annotations: their content goes into the config hash, so a change must roll the pods.
    """
    namespace = view(obj).namespace
    names = _spec_secret_names(obj.get("spec") or {})
    names.update(referenced_secret_names(parse_confs(confs_from_annotations(obj))))
    keys = [ObjectKey(kind="Secret", namespace=namespace, name=name) for name in sorted(names)]
    # A Fleet-mode Agent waits for its Kibana's health and its Fleet Server's version (the Fleet
    # gate): a change of either reconciles it again at once.
    kibana = kibana_reference(obj)
    if kibana is not None:
        keys.append(ObjectKey.of(_KIBANA, namespace=kibana[0], name=kibana[1]))
    fleet_server = fleet_server_reference(obj)
    if fleet_server is not None:
        keys.append(ObjectKey.of(_AGENT, namespace=fleet_server[0], name=fleet_server[1]))
    return keys


def app_controller(app: AppKind) -> Controller:
    """One application controller: the generic app reconcile, children found by the name label."""
    owners = owners_by_labels(namespace_label=None, name_label=app.name_label)
    return Controller(
        name=APP_CONTROLLER_NAMES[app.kind],
        primary=kind_info(app.kind).resource,
        gate=Gate.DYNAMIC_SCOPE,
        children=tuple(
            ChildWatch(kind=kind, owners=owners, label_selector=app.name_label)
            for kind in _CHILD_KINDS
        ),
        references=app_references,
        reference_kinds=((SECRETS, _KIBANA, _AGENT) if app.kind == "Agent" else (SECRETS,)),
    )


APP_CONTROLLERS: tuple[Controller, ...] = tuple(app_controller(app) for app in APP_KINDS.values())
