"""The workload of an application: its pod template (user template over operator defaults) and the
Deployment, DaemonSet or StatefulSet around it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.apps.associations import ca_volumes
from stackflow.stack.apps.context import (
    DAEMON_SET,
    DEPLOYMENT,
    HTTP_CERTS_DIR,
    STATEFUL_SET,
    AppContext,
    AppParts,
)
from stackflow.stack.labels import TEMPLATE_HASH_LABEL
from stackflow.stack.objects import Manifest, deep_merge, merge_named_lists
from stackflow.stack.pods import content_hash, merge_containers
from stackflow.stack.version import parse_version

CONFIG_VOLUME = "elastic-internal-config"
HTTP_CERTS_VOLUME = "elastic-internal-http-certificates"
#: Filebeat's autodiscover hint naming the module that parses a Pod's logs.
LOG_MODULE_ANNOTATION = "co.elastic.logs/module"


def workload_choice(context: AppContext) -> tuple[str, Mapping[str, Any]]:
    """Return the workload kind and the spec section holding ``podTemplate`` (and replicas).

    Kinds with a fixed workload read ``spec.podTemplate``/``spec.count``; Beat and Agent read the one
    section that is set (validation rejects zero or several; the first listed is the fallback).
    """
    sections = context.kind.workload_sections
    if not sections:
        return context.kind.workload_kind, context.spec
    for key, workload_kind in sections.items():
        if context.spec.get(key) is not None:
            return workload_kind, context.spec.get(key) or {}
    first = next(iter(sections))
    return sections[first], {}


def replicas(context: AppContext, section: Mapping[str, Any]) -> int:
    """Return the desired replicas: ``count`` (fixed kinds) or the section's ``replicas``; default 1."""
    key = "replicas" if context.kind.workload_sections else "count"
    value = section.get(key)
    return 1 if value is None else int(value)


def _volumes(
    context: AppContext, parts: AppParts
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the operator's volumes and the main container's mounts."""
    config_secret = context.child_name(*context.kind.config_secret_parts)
    config_file = context.render(context.kind.config_file)
    volumes: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME, "secret": {"secretName": config_secret, "optional": False}}
    ]
    mounts: list[dict[str, Any]] = [
        {
            "name": CONFIG_VOLUME,
            "mountPath": context.kind.config_path,
            "subPath": config_file,
            "readOnly": True,
        }
    ]
    if context.http_tls_enabled:
        volumes.append(
            {
                "name": HTTP_CERTS_VOLUME,
                "secret": {"secretName": context.child_name("http", "certs", "internal")},
            }
        )
        mounts.append({"name": HTTP_CERTS_VOLUME, "mountPath": HTTP_CERTS_DIR, "readOnly": True})
    ca_vols, ca_mounts = ca_volumes(context.associations)
    volumes += ca_vols + parts.volumes
    mounts += ca_mounts + parts.mounts
    claim = context.kind.claim_template
    if claim is not None:
        mounts.append({"name": claim.name, "mountPath": claim.mount_path})
    return sorted(volumes, key=lambda v: str(v["name"])), mounts


def _readiness_probe(context: AppContext) -> dict[str, Any] | None:
    if context.kind.readiness_path is None or not context.serves_http:
        return None
    return {
        "httpGet": {
            "path": context.kind.readiness_path,
            "port": context.kind.http_port,
            "scheme": context.http_scheme.upper(),
        },
        "failureThreshold": 3,
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "successThreshold": 1,
        "timeoutSeconds": 5,
    }


def http_port_name(context: AppContext) -> str:
    """Return the name of the HTTP port (the scheme unless the kind names it)."""
    return context.kind.http_port_name or context.http_scheme


def image_suffix(kind: str, version: str) -> str:
    """The suffix of the default image's name, as ECK picks it: Elastic Maps Server's images
    before 8.16.0 were published only as UBI builds, ``-ubi`` (``-ubi8`` before 8.12.0 and
    7.17.16); every other image, and a version that does not parse, none."""
    try:
        parsed = parse_version(version)
    except ValueError:
        return ""
    if kind != "ElasticMapsServer" or parsed.at_least(8, 16):
        return ""
    if parsed.major == 8 and not parsed.at_least(8, 12):
        return "-ubi8"
    if parsed.major == 7 and not parsed.at_least(7, 17, 16):
        return "-ubi8"
    return "-ubi"


def default_container(
    context: AppContext, *, parts: AppParts, mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    """Return the operator's main container."""
    kind = context.kind
    memory = kind.default_memory
    container: dict[str, Any] = {
        "name": context.render(kind.container_name),
        "image": context.spec.get("image")
        or f"{context.render(kind.image_repository)}"
        f"{image_suffix(kind.kind, context.version)}:{context.version}",
        "env": list(parts.env),
        "volumeMounts": mounts,
        "resources": {"requests": {"memory": memory}, "limits": {"memory": memory}},
    }
    if context.serves_http:
        container["ports"] = [
            {"name": http_port_name(context), "containerPort": kind.http_port, "protocol": "TCP"}
        ]
    if parts.env_from:
        container["envFrom"] = list(parts.env_from)
    if parts.args is not None:
        container["args"] = list(parts.args)
    probe = _readiness_probe(context)
    if probe is not None:
        container["readinessProbe"] = probe
    return container


def pod_template(
    context: AppContext, section: Mapping[str, Any], *, parts: AppParts, config_hash: str
) -> dict[str, Any]:
    """Return the pod template: the user's ``podTemplate`` merged over the operator's defaults."""
    user: Mapping[str, Any] = section.get("podTemplate") or {}
    user_metadata = view(user)
    user_spec: Mapping[str, Any] = user.get("spec") or {}
    labels = dict(user_metadata.labels)
    labels.update(context.selector_labels())
    labels[context.kind.version_label] = context.version
    annotations = dict(user_metadata.annotations)
    annotations[context.kind.config_hash_annotation] = config_hash
    if context.kind.log_module:
        # A default: the user's podTemplate may name another module.
        annotations.setdefault(LOG_MODULE_ANNOTATION, context.kind.log_module)
    volumes, mounts = _volumes(context, parts)
    container = default_container(context, parts=parts, mounts=mounts)
    containers = merge_containers(container, list(user_spec.get("containers") or []))
    if context.spec.get("resources"):
        # The resources shorthand wins over the pod template (reference §1, Resources).
        containers[0]["resources"] = copy.deepcopy(context.spec["resources"])
    spec_defaults: dict[str, Any] = {}
    if context.kind.automount_service_account_token is not None:
        spec_defaults["automountServiceAccountToken"] = context.kind.automount_service_account_token
    if context.spec.get("serviceAccountName"):
        spec_defaults["serviceAccountName"] = context.spec["serviceAccountName"]
    spec = deep_merge(
        spec_defaults, {k: v for k, v in user_spec.items() if k not in ("containers", "volumes")}
    )
    spec["containers"] = containers
    spec["volumes"] = merge_named_lists(volumes, list(user_spec.get("volumes") or []))
    return {
        "metadata": {
            "labels": dict(sorted(labels.items())),
            "annotations": dict(sorted(annotations.items())),
        },
        "spec": spec,
    }


def _claim_templates(context: AppContext, section: Mapping[str, Any]) -> list[dict[str, Any]]:
    user = [copy.deepcopy(t) for t in section.get("volumeClaimTemplates") or []]
    claim = context.kind.claim_template
    if claim is None or any(view(t).name == claim.name for t in user):
        return user
    default = {
        "metadata": {"name": claim.name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": claim.storage}},
        },
    }
    return [default, *user]


def workload(context: AppContext, *, parts: AppParts, config_hash: str) -> Manifest:
    """Return the Deployment, DaemonSet or StatefulSet running the application's pods."""
    workload_kind, section = workload_choice(context)
    template = pod_template(context, section, parts=parts, config_hash=config_hash)
    spec: dict[str, Any] = {"selector": {"matchLabels": context.selector_labels()}}
    if workload_kind in (DEPLOYMENT, STATEFUL_SET):
        spec["replicas"] = replicas(context, section)
    if workload_kind == DEPLOYMENT and section.get("strategy"):
        spec["strategy"] = copy.deepcopy(section["strategy"])
    if workload_kind == DAEMON_SET and section.get("updateStrategy"):
        spec["updateStrategy"] = copy.deepcopy(section["updateStrategy"])
    if workload_kind == STATEFUL_SET:
        fixed = not context.kind.workload_sections
        update_strategy = (context.spec if fixed else section).get("updateStrategy")
        spec["serviceName"] = section.get("serviceName") or (
            context.child_name(*context.kind.http_service_parts) if fixed else ""
        )
        spec["podManagementPolicy"] = section.get("podManagementPolicy") or "Parallel"
        if update_strategy:
            spec["updateStrategy"] = copy.deepcopy(update_strategy)
        spec["volumeClaimTemplates"] = _claim_templates(context, context.spec if fixed else section)
    if context.spec.get("revisionHistoryLimit") is not None:
        spec["revisionHistoryLimit"] = context.spec["revisionHistoryLimit"]
    spec["template"] = template
    labels = {context.kind.version_label: context.version, TEMPLATE_HASH_LABEL: content_hash(spec)}
    return {
        "apiVersion": "apps/v1",
        "kind": workload_kind,
        "metadata": context.metadata(
            context.child_name(*context.kind.workload_parts), labels=labels
        ),
        "spec": spec,
    }
