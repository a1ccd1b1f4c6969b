"""Per node set: the StatefulSet (pod template merged over operator defaults) and its headless Service."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.config import (
    CONFIG_DIR,
    CONFIG_MOUNT_DIR,
    DATA_DIR,
    FILE_REALM_MOUNT_DIR,
    FILE_SETTINGS_DIR,
    HTTP_CERTS_DIR,
    HTTP_PORT,
    LOGS_DIR,
    PROBE_USER_MOUNT_DIR,
    REMOTE_CERTS_DIR,
    SCRIPTS_MOUNT_DIR,
    TRANSPORT_CERTS_DIR,
    TRANSPORT_PORT,
    UNICAST_HOSTS_MOUNT_DIR,
    node_roles,
)
from stackflow.stack.elasticsearch.context import BuildContext
from stackflow.stack.elasticsearch.policy import policy_pod_annotations, secret_mount_volumes
from stackflow.stack.elasticsearch.remote_clusters import (
    REMOTE_CLUSTER_SERVER_PORT,
    remote_ca_secret_name,
)
from stackflow.stack.elasticsearch.scripts import SUSPEND_SCRIPT_KEY
from stackflow.stack.labels import (
    ES_CONFIG_HASH_ANNOTATION,
    ES_HTTP_SCHEME_LABEL,
    ES_STATEFULSET_NAME_LABEL,
    ES_VERSION_LABEL,
    TEMPLATE_HASH_LABEL,
    WATCHED_LABEL,
    es_cluster_labels,
    es_statefulset_selector,
    role_labels,
)
from stackflow.stack.objects import Manifest, deep_merge, merge_named_lists
from stackflow.stack.pods import content_hash, field_env, merge_containers
from stackflow.stack.policies.stack_config.secrets import file_settings_secret_name

ES_CONTAINER = "elasticsearch"
INIT_FILESYSTEM_CONTAINER = "elastic-internal-init-filesystem"
#: ECK's init container holding a Pod named in ``eck.k8s.elastic.co/suspend`` (see ``suspend.py``).
SUSPEND_CONTAINER = "elastic-internal-suspend"
DATA_VOLUME = "elasticsearch-data"
DEFAULT_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch"
DEFAULT_MEMORY = "2Gi"
DEFAULT_STORAGE = "1Gi"
CONFIG_LOCAL_DIR = "/mnt/elastic-internal/elasticsearch-config-local"
#: The StatefulSet controller deletes no claim: the operator does, after the StatefulSet shrank,
#: and the claims' ownerReference to the Elasticsearch follows ``volumeClaimDeletePolicy``
#: (``activities/elasticsearch_volumes.py``), as ECK.
_RETAIN_CLAIMS = {"whenDeleted": "Retain", "whenScaled": "Retain"}


def _env(context: BuildContext, statefulset: str) -> list[dict[str, Any]]:
    return [
        field_env("POD_IP", "status.podIP"),
        field_env("POD_NAME", "metadata.name"),
        field_env("NODE_NAME", "spec.nodeName"),
        field_env("NAMESPACE", "metadata.namespace"),
        {"name": "PROBE_PASSWORD_PATH", "value": f"{PROBE_USER_MOUNT_DIR}/elastic-internal-probe"},
        {"name": "PROBE_USERNAME", "value": "elastic-internal-probe"},
        {"name": "READINESS_PROBE_PROTOCOL", "value": context.http_scheme},
        {"name": "HEADLESS_SERVICE_NAME", "value": statefulset},
        {"name": "NSS_SDB_USE_CACHE", "value": "no"},
    ]


def _volumes(
    context: BuildContext, node_set: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the operator's (volumes, volume mounts of the Elasticsearch container)."""
    es = context.name

    def secret(
        volume: str, secret_name: str, mount: str, **extra: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        source: dict[str, Any] = {"secretName": secret_name, "optional": False, **extra}
        return {"name": volume, "secret": source}, {
            "name": volume,
            "mountPath": mount,
            "readOnly": True,
        }

    def config_map(
        volume: str, name: str, mount: str, mode: int
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        source = {"name": name, "optional": False, "defaultMode": mode}
        return {"name": volume, "configMap": source}, {
            "name": volume,
            "mountPath": mount,
            "readOnly": True,
        }

    def empty(volume: str, mount: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"name": volume, "emptyDir": {}}, {"name": volume, "mountPath": mount}

    pairs = [
        secret(
            "elastic-internal-elasticsearch-config",
            names.config_secret_name(es, node_set),
            CONFIG_MOUNT_DIR,
        ),
        # The node reads its config from this emptyDir, which prepare-fs fills (in the init
        # container, where it is mounted at CONFIG_LOCAL_DIR) from the image's config dir and
        # the operator's files; ECK mounts it the same way.
        empty("elastic-internal-elasticsearch-config-local", CONFIG_DIR),
        secret(
            "elastic-internal-transport-certificates",
            names.node_transport_certs_secret_name(es, node_set),
            TRANSPORT_CERTS_DIR,
        ),
        secret(
            "elastic-internal-remote-certificate-authorities",
            remote_ca_secret_name(es),
            REMOTE_CERTS_DIR,
        ),
        config_map(
            "elastic-internal-unicast-hosts",
            names.unicast_hosts_configmap_name(es),
            UNICAST_HOSTS_MOUNT_DIR,
            0o644,
        ),
        config_map(
            "elastic-internal-scripts", names.scripts_configmap_name(es), SCRIPTS_MOUNT_DIR, 0o755
        ),
        secret(
            "elastic-internal-xpack-file-realm",
            names.file_realm_secret_name(es),
            FILE_REALM_MOUNT_DIR,
        ),
        secret(
            "elastic-internal-probe-user",
            names.internal_users_secret_name(es),
            PROBE_USER_MOUNT_DIR,
            items=[{"key": "elastic-internal-probe", "path": "elastic-internal-probe"}],
        ),
        secret("elasticsearch-file-settings", file_settings_secret_name(es), FILE_SETTINGS_DIR),
        empty("elasticsearch-logs", LOGS_DIR),
    ]
    if context.http_tls_enabled:
        pairs.append(
            secret(
                "elastic-internal-http-certificates",
                names.http_certs_internal_secret_name(es),
                HTTP_CERTS_DIR,
            )
        )
    pairs += secret_mount_volumes(context)
    volumes = sorted((volume for volume, _ in pairs), key=lambda volume: str(volume["name"]))
    mounts = sorted((mount for _, mount in pairs), key=lambda mount: str(mount["name"]))
    mounts.append({"name": DATA_VOLUME, "mountPath": DATA_DIR})
    return volumes, mounts


def _default_container(
    context: BuildContext, node_set: Mapping[str, Any], statefulset: str
) -> dict[str, Any]:
    _, mounts = _volumes(context, str(node_set["name"]))
    readiness_script = (
        "readiness-port-script.sh"
        if context.version.at_least(8, 2)
        else "legacy-readiness-probe-script.sh"
    )
    return {
        "name": ES_CONTAINER,
        "image": context.spec.get("image") or f"{DEFAULT_IMAGE}:{context.spec['version']}",
        "env": _env(context, statefulset),
        "ports": [
            {"name": context.http_scheme, "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "transport", "containerPort": TRANSPORT_PORT, "protocol": "TCP"},
        ],
        "resources": {"requests": {"memory": DEFAULT_MEMORY}, "limits": {"memory": DEFAULT_MEMORY}},
        "readinessProbe": {
            "exec": {"command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/{readiness_script}"]},
            "failureThreshold": 3,
            "initialDelaySeconds": 10,
            "periodSeconds": 5,
            "successThreshold": 1,
            "timeoutSeconds": 5,
        },
        "lifecycle": {
            "preStop": {
                "exec": {"command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/pre-stop-hook-script.sh"]}
            }
        },
        "volumeMounts": mounts,
    }


def init_filesystem_mounts(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The init container's mounts: the config emptyDir at CONFIG_LOCAL_DIR (so prepare-fs can
    copy the image's own config dir into it), and nothing mounted inside the image's config dir."""
    inside_config = f"{CONFIG_DIR}/"
    result = []
    for mount in mounts:
        if mount["mountPath"] == CONFIG_DIR:
            result.append({**mount, "mountPath": CONFIG_LOCAL_DIR})
        elif not str(mount["mountPath"]).startswith(inside_config):
            result.append(copy.deepcopy(mount))
    return result


def suspend_init_container(main: Mapping[str, Any]) -> dict[str, Any]:
    """ECK's ``elastic-internal-suspend``: the suspend script, with the main container's image,
    environment (``POD_NAME``), mounts and resources.

    It runs after the filesystem (and keystore) preparation, as in ECK: a suspended Pod then
    holds a prepared config directory and its data volume, so the Elasticsearch tools work in a
    shell opened into this container.
    """
    return {
        "name": SUSPEND_CONTAINER,
        "image": main["image"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/{SUSPEND_SCRIPT_KEY}"],
        "env": copy.deepcopy(main.get("env") or []),
        "volumeMounts": copy.deepcopy(main.get("volumeMounts") or []),
        "resources": copy.deepcopy(main.get("resources") or {}),
    }


def pod_labels(
    context: BuildContext, node_set: Mapping[str, Any], statefulset: str
) -> dict[str, str]:
    """Return the operator labels of a node set's pods (§2), role booleans included."""
    labels = es_cluster_labels(context.name)
    labels[ES_STATEFULSET_NAME_LABEL] = statefulset
    labels[ES_VERSION_LABEL] = str(context.spec["version"])
    labels[ES_HTTP_SCHEME_LABEL] = context.http_scheme
    labels.update(role_labels(node_roles(node_set.get("config"))))
    return labels


def pod_template(
    context: BuildContext, node_set: Mapping[str, Any], *, config_hash: str
) -> dict[str, Any]:
    """Return the node set's pod template: the user's ``podTemplate`` merged over the defaults."""
    statefulset = names.statefulset_name(context.name, str(node_set["name"]))
    user: Mapping[str, Any] = node_set.get("podTemplate") or {}
    user_metadata = view(user)
    user_spec: Mapping[str, Any] = user.get("spec") or {}
    volumes, _ = _volumes(context, str(node_set["name"]))
    labels = dict(user_metadata.labels)
    labels.update(pod_labels(context, node_set, statefulset))
    container = _default_container(context, node_set, statefulset)
    if node_set.get("resources"):
        container["resources"] = copy.deepcopy(node_set["resources"])
    user_containers = list(user_spec.get("containers") or [])
    containers = merge_containers(container, user_containers)
    init = {
        "name": INIT_FILESYSTEM_CONTAINER,
        "image": container["image"],
        "command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/prepare-fs.sh"],
        "env": _env(context, statefulset),
        "volumeMounts": init_filesystem_mounts(container["volumeMounts"]),
        "resources": {
            "requests": {"cpu": "100m", "memory": "50Mi"},
            "limits": {"cpu": "100m", "memory": "50Mi"},
        },
    }
    spec_defaults: dict[str, Any] = {
        "securityContext": {"fsGroup": 1000},
        "terminationGracePeriodSeconds": 180,
        "automountServiceAccountToken": False,
    }
    spec = deep_merge(
        spec_defaults,
        {
            k: v
            for k, v in user_spec.items()
            if k not in ("containers", "initContainers", "volumes")
        },
    )
    spec["containers"] = containers
    # The merged main container: a user's image, env or mounts reach the suspend container too.
    main = next((c for c in containers if c.get("name") == ES_CONTAINER), container)
    spec["initContainers"] = [init, suspend_init_container(main)] + [
        copy.deepcopy(c) for c in user_spec.get("initContainers") or []
    ]
    spec["volumes"] = merge_named_lists(volumes, list(user_spec.get("volumes") or []))
    if context.spec.get("serviceAccountName") and "serviceAccountName" not in user_spec:
        spec["serviceAccountName"] = context.spec["serviceAccountName"]
    annotations = dict(user_metadata.annotations)
    annotations.setdefault("co.elastic.logs/module", "elasticsearch")
    annotations.update(policy_pod_annotations(context))
    annotations[ES_CONFIG_HASH_ANNOTATION] = config_hash
    return {
        "metadata": {
            "labels": dict(sorted(labels.items())),
            "annotations": dict(sorted(annotations.items())),
        },
        "spec": spec,
    }


def volume_claim_templates(node_set: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the node set's claim templates, the default data claim unless the user replaced it."""
    user = [copy.deepcopy(t) for t in node_set.get("volumeClaimTemplates") or []]
    user_volumes = ((node_set.get("podTemplate") or {}).get("spec") or {}).get("volumes") or []
    if user or any(v.get("name") == DATA_VOLUME for v in user_volumes):
        return user
    return [
        {
            "metadata": {"name": DATA_VOLUME},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": DEFAULT_STORAGE}},
            },
        }
    ]


def statefulset_manifest(
    context: BuildContext, node_set: Mapping[str, Any], *, config_hash: str
) -> Manifest:
    """Return the node set's StatefulSet (replicas = count, OnDelete updates, template hash label)."""
    name = names.statefulset_name(context.name, str(node_set["name"]))
    template = pod_template(context, node_set, config_hash=config_hash)
    spec: dict[str, Any] = {
        "replicas": int(node_set.get("count", 0)),
        "serviceName": name,
        "selector": {"matchLabels": es_statefulset_selector(context.name, name)},
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "OnDelete"},
        "template": template,
        "volumeClaimTemplates": volume_claim_templates(node_set),
        "persistentVolumeClaimRetentionPolicy": dict(_RETAIN_CLAIMS),
    }
    if context.spec.get("revisionHistoryLimit") is not None:
        spec["revisionHistoryLimit"] = context.spec["revisionHistoryLimit"]
    # The StatefulSet carries its selector's labels and its hash only, as ECK's: the roles,
    # version and scheme are the Pods' labels.
    labels = es_statefulset_selector(context.name, name)
    labels[TEMPLATE_HASH_LABEL] = content_hash(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": context.metadata(name, labels=labels),
        "spec": spec,
    }


def headless_service(context: BuildContext, node_set: Mapping[str, Any]) -> Manifest:
    """Return the node set's headless Service (publishes not-ready pods so nodes can discover each other).

    As ECK's: selected by the StatefulSet's labels, labelled as watched, and with the remote
    cluster server's port when ``spec.remoteClusterServer.enabled``.
    """
    name = names.statefulset_name(context.name, str(node_set["name"]))
    ports = [
        {
            "name": context.http_scheme,
            "port": HTTP_PORT,
            "protocol": "TCP",
            "targetPort": HTTP_PORT,
        }
    ]
    if (context.spec.get("remoteClusterServer") or {}).get("enabled"):
        ports.append(
            {
                "name": "rcs",
                "port": REMOTE_CLUSTER_SERVER_PORT,
                "protocol": "TCP",
                "targetPort": REMOTE_CLUSTER_SERVER_PORT,
            }
        )
    selector = {**es_cluster_labels(context.name), ES_STATEFULSET_NAME_LABEL: name}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": context.metadata(name, labels={**selector, WATCHED_LABEL: "true"}),
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": ports,
        },
    }
