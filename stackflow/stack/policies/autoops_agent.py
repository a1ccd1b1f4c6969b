"""What an AutoOps agent runs with, as ECK builds it (pure): the collector configuration of the
agent's ConfigMap, the Deployment around the agent and the hash that rolls its pods.

The configuration is an OpenTelemetry-collector file in layers, merged as ECK's canonical
configs merge (maps deep-merged, lists appended, dotted keys split into paths): a baseline the
user may tune, the user's ``spec.config``, the user's ``spec.configRef`` file, the default
``autoops_es`` modules (only when the user defines none) and the operator's mandatory part, which
wins. Every ``autoops_es`` module then gets the cluster's address and TLS settings.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from stackflow.stack.naming import fnv32a
from stackflow.stack.objects import deep_merge, merge_named_lists
from stackflow.stack.pods import merge_containers

__all__ = [
    "AGENT_CONFIG_FILE",
    "AGENT_CONTAINER_NAME",
    "AGENT_IMAGE_REPOSITORY",
    "API_KEY_SECRET_KEY",
    "CONFIG_MOUNT_PATH",
    "CONFIG_VOLUME_NAME",
    "DEFAULT_RESOURCES",
    "HEALTH_PORT",
    "REF_SECRET_KEYS",
    "agent_config",
    "agent_deployment",
    "agent_env",
    "ca_mount",
    "deployment_config_hash",
    "merge_configs",
    "render_config",
]

AGENT_CONFIG_FILE = "autoops_es.yml"
AGENT_CONTAINER_NAME = "autoops-agent"
#: Where the agent image comes from when ``spec.image`` is not set (tag: ``spec.version``).
AGENT_IMAGE_REPOSITORY = "docker.elastic.co/elastic-agent/elastic-otel-collector"
#: The key of the API-key Secret holding the encoded key.
API_KEY_SECRET_KEY = "api_key"
CONFIG_VOLUME_NAME = "config-volume"
CONFIG_MOUNT_PATH = "/mnt/config"
#: The collector's health-check extension; the readiness probe asks it.
HEALTH_PORT = 13133
HEALTH_PATH = "/health/status"
_CA_MOUNT_ROOT = "/mnt/elastic-internal/es-ca"
_CA_FILE = "ca.crt"

#: The keys of the ``autoOpsRef`` Secret (the last one optional), in the order the hash reads them.
TOKEN_KEY = "autoops-token"
OTEL_URL_KEY = "autoops-otel-url"
CCM_API_KEY_KEY = "cloud-connected-mode-api-key"
CCM_API_URL_KEY = "cloud-connected-mode-api-url"
REF_SECRET_KEYS = (TOKEN_KEY, OTEL_URL_KEY, CCM_API_KEY_KEY, CCM_API_URL_KEY)

#: ECK's defaults for the agent container (those of Elastic Agent), used when neither the pod
#: template nor ``spec.resources`` says anything about cpu or memory.
DEFAULT_RESOURCES: Mapping[str, Mapping[str, str]] = {
    "requests": {"memory": "400Mi", "cpu": "200m"},
    "limits": {"memory": "400Mi", "cpu": "200m"},
}

# The user may override anything here (the export queue's sizing).
_BASELINE: Mapping[str, Any] = {
    "exporters": {
        "otlphttp": {
            "sending_queue": {
                "batch": {
                    "flush_timeout": "11s",
                    "min_size": 1048576,
                    "max_size": 4194304,
                    "sizer": "bytes",
                },
                "block_on_overflow": True,
                "enabled": True,
                "queue_size": 52428800,
                "sizer": "bytes",
            }
        }
    }
}

# What the agent collects unless the user lists an autoops_es module of their own.
_DEFAULT_MODULES: Mapping[str, Any] = {
    "receivers": {
        "metricbeatreceiver": {
            "metricbeat": {
                "modules": [
                    {
                        "module": "autoops_es",
                        "period": "10s",
                        "metricsets": [
                            "cat_shards",
                            "cluster_health",
                            "cluster_settings",
                            "license",
                            "node_stats",
                            "tasks_management",
                        ],
                    },
                    {
                        "module": "autoops_es",
                        "period": "24h",
                        "metricsets": ["cat_template", "component_template", "index_template"],
                    },
                ]
            }
        }
    }
}

# Merged last: the operator's wiring (token, endpoint, pipeline, health check) always wins.
_MANDATORY: Mapping[str, Any] = {
    "receivers": {
        "metricbeatreceiver": {
            "processors": [
                {
                    "add_fields": {
                        "target": "autoops_es",
                        "fields": {"token": "${env:AUTOOPS_TOKEN}"},
                    }
                }
            ],
            "output": {"otelconsumer": {}},
            "telemetry_types": ["logs"],
        }
    },
    "exporters": {
        "otlphttp": {
            "headers": {"Authorization": "AutoOpsToken ${env:AUTOOPS_TOKEN}"},
            "endpoint": "${env:AUTOOPS_OTEL_URL}",
        }
    },
    "service": {
        "extensions": ["healthcheckv2"],
        "pipelines": {"logs": {"receivers": ["metricbeatreceiver"], "exporters": ["otlphttp"]}},
        "telemetry": {"logs": {"encoding": "json"}},
    },
    "extensions": {
        "healthcheckv2": {
            "use_v2": True,
            "component_health": {
                "include_permanent_errors": True,
                "include_recoverable_errors": True,
                "recovery_duration": "5m",
            },
            "http": {
                "endpoint": f"0.0.0.0:{HEALTH_PORT}",
                "status": {"enabled": True, "path": HEALTH_PATH},
                "config": {"enabled": True, "path": "/health/config"},
            },
        }
    },
}


def _expanded(value: Any) -> Any:
    """``value`` with dotted map keys split into nested maps (``a.b: 1`` → ``a: {b: 1}``)."""
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key, item in value.items():
            parts = str(key).split(".")
            nested: Any = _expanded(item)
            for part in reversed(parts[1:]):
                nested = {part: nested}
            result = _merge_two(result, {parts[0]: nested})
        return result
    if isinstance(value, list):
        return [_expanded(item) for item in value]
    return copy.deepcopy(value)


def _merge_two(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = _merge_two(current, value)
        elif isinstance(current, list) and isinstance(value, list):
            # ECK merges its configs with appended lists, not replaced ones.
            merged[key] = [*current, *value]
        else:
            merged[key] = value
    return merged


def merge_configs(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge config layers as ECK does: later maps win key by key, lists are appended, and
    dotted keys are paths."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged = _merge_two(merged, _expanded(layer))
    return merged


def _modules(config: Mapping[str, Any]) -> list[Any]:
    receivers = config.get("receivers")
    receiver = receivers.get("metricbeatreceiver") if isinstance(receivers, Mapping) else None
    metricbeat = receiver.get("metricbeat") if isinstance(receiver, Mapping) else None
    modules = metricbeat.get("modules") if isinstance(metricbeat, Mapping) else None
    return modules if isinstance(modules, list) else []


def _has_autoops_modules(configs: Iterable[Mapping[str, Any]]) -> bool:
    return any(
        isinstance(module, Mapping) and module.get("module") == "autoops_es"
        for config in configs
        for module in _modules(_expanded(config))
    )


def ca_mount(es_namespace: str, es_name: str) -> tuple[str, str]:
    """ECK's volume name and mount path of one cluster's CA in the agent's pod."""
    return f"es-ca-{es_name}-{es_namespace}", f"{_CA_MOUNT_ROOT}/{es_namespace}-{es_name}"


def agent_config(
    user: Mapping[str, Any] | None,
    user_ref: Mapping[str, Any] | None,
    *,
    tls: bool,
    es_namespace: str,
    es_name: str,
) -> dict[str, Any]:
    """The agent's ``autoops_es.yml`` for one cluster.

    Layers: baseline, ``spec.config`` (``user``), the ``configRef`` file (``user_ref``), the
    default modules unless the user lists an ``autoops_es`` module, then the mandatory part.
    Each ``autoops_es`` module gets ``hosts`` from ``AUTOOPS_ES_URL`` and ``ssl``: the cluster's
    CA with ``verification_mode: certificate`` under TLS, ``verification_mode: none`` without.
    """
    users = [layer for layer in (user, user_ref) if layer]
    defaults = None if _has_autoops_modules(users) else _DEFAULT_MODULES
    merged = merge_configs(_BASELINE, *users, defaults, _MANDATORY)
    ssl: dict[str, Any]
    if tls:
        _, ca_path = ca_mount(es_namespace, es_name)
        ssl = {
            "verification_mode": "certificate",
            "certificate_authorities": [f"{ca_path}/{_CA_FILE}"],
        }
    else:
        ssl = {"verification_mode": "none"}
    for module in _modules(merged):
        if isinstance(module, dict) and module.get("module") == "autoops_es":
            module["hosts"] = "${env:AUTOOPS_ES_URL}"
            module["ssl"] = copy.deepcopy(ssl)
    return merged


def render_config(config: Mapping[str, Any]) -> str:
    """The ConfigMap text of a config (keys sorted, so an equal config renders equally)."""
    return yaml.safe_dump(dict(config), sort_keys=True, default_flow_style=False)


def deployment_config_hash(
    config_text: str, ref_secret_data: Mapping[str, bytes], api_key: bytes | None
) -> str:
    """ECK's pod-rolling hash: FNV-32a (decimal) over the config text, the ``autoOpsRef``
    Secret's values (:data:`REF_SECRET_KEYS`, those present) and the encoded API key."""
    content = bytearray(config_text.encode())
    for key in REF_SECRET_KEYS:
        value = ref_secret_data.get(key)
        if value is not None:
            content += value
    if api_key is not None:
        content += api_key
    return str(fnv32a(bytes(content)))


def _secret_env(
    name: str, secret: str, key: str, *, optional: bool | None = None
) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": secret, "key": key}
    if optional is not None:
        ref["optional"] = optional
    return {"name": name, "valueFrom": {"secretKeyRef": ref}}


def agent_env(*, ref_secret: str, api_key_secret: str, es_url: str) -> list[dict[str, Any]]:
    """The agent's environment: the AutoOps connection from the ``autoOpsRef`` Secret, the
    cluster's URL and the cluster's API key."""
    return [
        _secret_env("AUTOOPS_TOKEN", ref_secret, TOKEN_KEY),
        {"name": "AUTOOPS_ES_URL", "value": es_url},
        _secret_env("AUTOOPS_OTEL_URL", ref_secret, OTEL_URL_KEY),
        _secret_env("AUTOOPS_ES_API_KEY", api_key_secret, API_KEY_SECRET_KEY, optional=False),
        _secret_env("ELASTIC_CLOUD_CONNECTED_MODE_API_KEY", ref_secret, CCM_API_KEY_KEY),
        _secret_env(
            "ELASTIC_CLOUD_CONNECTED_MODE_API_URL", ref_secret, CCM_API_URL_KEY, optional=True
        ),
    ]


def _resources(
    template_resources: Mapping[str, Any] | None, shorthand: Mapping[str, Any] | None
) -> dict[str, Any]:
    """ECK's rule: the defaults only when neither the pod template nor the shorthand sets any;
    the shorthand's cpu and memory then override the template's."""
    merged = copy.deepcopy(dict(template_resources or {}))
    shorthand = shorthand or {}
    if not merged.get("requests") and not merged.get("limits") and not any(shorthand.values()):
        return copy.deepcopy({key: dict(value) for key, value in DEFAULT_RESOURCES.items()})
    for side in ("requests", "limits"):
        overrides = {
            name: value
            for name, value in (shorthand.get(side) or {}).items()
            if name in ("cpu", "memory") and value is not None
        }
        if overrides:
            merged[side] = {**dict(merged.get(side) or {}), **overrides}
    return merged


def agent_deployment(
    policy: Mapping[str, Any],
    *,
    name: str,
    labels: Mapping[str, str],
    selector: Mapping[str, str],
    config_map: str,
    api_key_secret: str,
    ca_secret: str | None,
    es_namespace: str,
    es_name: str,
    es_url: str,
    config_hash: str,
    annotation: str,
    owner_reference: Mapping[str, Any],
) -> dict[str, Any]:
    """The agent's Deployment, in the policy's namespace: ECK's container (image, args, env,
    mounts, port, readiness probe, security context, default resources) under the user's
    ``spec.podTemplate``, one replica, the config hash on the Deployment and its pods."""
    spec = policy.get("spec") or {}
    metadata = policy.get("metadata") or {}
    mounts: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME_NAME, "mountPath": CONFIG_MOUNT_PATH, "readOnly": True}
    ]
    volumes: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME_NAME, "configMap": {"name": config_map}}
    ]
    if ca_secret is not None:
        volume_name, mount_path = ca_mount(es_namespace, es_name)
        mounts.append({"name": volume_name, "mountPath": mount_path, "readOnly": True})
        volumes.append({"name": volume_name, "secret": {"secretName": ca_secret}})
    ref_secret = str((spec.get("autoOpsRef") or {}).get("secretName") or "")
    container: dict[str, Any] = {
        "name": AGENT_CONTAINER_NAME,
        "image": spec.get("image") or f"{AGENT_IMAGE_REPOSITORY}:{spec.get('version')}",
        "args": ["--config", f"{CONFIG_MOUNT_PATH}/{AGENT_CONFIG_FILE}"],
        "env": agent_env(ref_secret=ref_secret, api_key_secret=api_key_secret, es_url=es_url),
        "volumeMounts": mounts,
        "ports": [{"name": "http", "containerPort": HEALTH_PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": HEALTH_PORT, "scheme": "HTTP"},
            "failureThreshold": 3,
            "initialDelaySeconds": 5,
            "periodSeconds": 10,
            "successThreshold": 1,
            "timeoutSeconds": 5,
        },
        # ECK's settings: the collector writes its state under its working directory, so the
        # root filesystem stays writable.
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": False,
        },
    }
    template: Mapping[str, Any] = spec.get("podTemplate") or {}
    template_meta: Mapping[str, Any] = template.get("metadata") or {}
    template_spec: Mapping[str, Any] = template.get("spec") or {}
    user_containers = list(template_spec.get("containers") or [])
    user_main: Mapping[str, Any] = next(
        (c for c in user_containers if c.get("name") == AGENT_CONTAINER_NAME), {}
    )
    containers = merge_containers(container, user_containers)
    containers[0]["resources"] = _resources(user_main.get("resources"), spec.get("resources"))
    pod_spec = deep_merge(
        {"serviceAccountName": spec["serviceAccountName"]}
        if spec.get("serviceAccountName")
        else {},
        {k: v for k, v in template_spec.items() if k not in ("containers", "volumes")},
    )
    pod_spec["containers"] = containers
    pod_spec["volumes"] = merge_named_lists(volumes, list(template_spec.get("volumes") or []))
    annotations = {annotation: config_hash}
    pod_labels = {**dict(template_meta.get("labels") or {}), **dict(labels)}
    pod_annotations = {**dict(template_meta.get("annotations") or {}), **annotations}
    deployment_spec: dict[str, Any] = {
        "replicas": 1,
        "selector": {"matchLabels": dict(selector)},
        "template": {
            "metadata": {"labels": pod_labels, "annotations": pod_annotations},
            "spec": pod_spec,
        },
    }
    if spec.get("revisionHistoryLimit") is not None:
        deployment_spec["revisionHistoryLimit"] = spec["revisionHistoryLimit"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": str(metadata.get("namespace") or ""),
            "labels": dict(labels),
            "annotations": annotations,
            "ownerReferences": [dict(owner_reference)],
        },
        "spec": deployment_spec,
    }
