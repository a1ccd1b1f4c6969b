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
    DOWNWARD_API_MOUNT_DIR,
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
from stackflow.stack.elasticsearch.scripts import (
    BIN_DIR,
    BIN_LOCAL_DIR,
    CONFIG_LOCAL_DIR,
    INIT_TRANSPORT_CERTS_DIR,
    PLUGINS_DIR,
    PLUGINS_LOCAL_DIR,
    PRE_STOP_SCRIPT_KEY,
    PRE_STOP_USER,
    PREPARE_FS_SCRIPT_KEY,
    READINESS_PORT_SCRIPT_KEY,
    READINESS_PROBE_SCRIPT_KEY,
    SUSPEND_SCRIPT_KEY,
)
from stackflow.stack.labels import (
    ES_CLUSTER_NAME_LABEL,
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
from stackflow.stack.version import Version

ES_CONTAINER = "elasticsearch"
INIT_FILESYSTEM_CONTAINER = "elastic-internal-init-filesystem"
#: ECK's init container holding a Pod named in ``eck.k8s.elastic.co/suspend`` (see ``suspend.py``).
SUSPEND_CONTAINER = "elastic-internal-suspend"
DATA_VOLUME = "elasticsearch-data"
DEFAULT_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch"
DEFAULT_MEMORY = "2Gi"
DEFAULT_STORAGE = "1Gi"
CONFIG_LOCAL_VOLUME = "elastic-internal-elasticsearch-config-local"
PLUGINS_LOCAL_VOLUME = "elastic-internal-elasticsearch-plugins-local"
BIN_LOCAL_VOLUME = "elastic-internal-elasticsearch-bin-local"
TRANSPORT_CERTS_VOLUME = "elastic-internal-transport-certificates"
DOWNWARD_API_VOLUME = "downward-api"
TMP_VOLUME = "tmp-volume"
#: The shared emptyDirs: (volume, where the node container mounts it, where prepare-fs fills it).
SHARED_DIRS = (
    (CONFIG_LOCAL_VOLUME, CONFIG_DIR, CONFIG_LOCAL_DIR),
    (PLUGINS_LOCAL_VOLUME, PLUGINS_DIR, PLUGINS_LOCAL_DIR),
    (BIN_LOCAL_VOLUME, BIN_DIR, BIN_LOCAL_DIR),
)
#: The first version whose pre-stop and file settings ECK wires (file settings: 8.6.1).
_FILE_SETTINGS_VERSION = (8, 6, 1)
INIT_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "50Mi"},
    "limits": {"cpu": "100m", "memory": "50Mi"},
}
#: The StatefulSet controller deletes no claim: the operator does, after the StatefulSet shrank,
#: and the claims' ownerReference to the Elasticsearch follows ``volumeClaimDeletePolicy``
#: (``activities/elasticsearch_volumes.py``), as ECK.
_RETAIN_CLAIMS = {"whenDeleted": "Retain", "whenScaled": "Retain"}


PROBE_USER = "elastic-internal-probe"


def security_context(version: Version, *, read_only_root: bool) -> dict[str, Any]:
    """The default ``securityContext`` of every container of the Pod, by version (as ECK).

    Capabilities are dropped from 8.0 (older images start as root and chown in the init
    container), ``runAsNonRoot`` from 8.8 (older images name their user, not its uid, which the
    kubelet cannot check). The root filesystem is read-only when the data volume is mounted: the
    node then writes only to its volumes; without it the data would land on the root filesystem.
    """
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": read_only_root,
    }
    if version.at_least(8, 0):
        context["capabilities"] = {"drop": ["ALL"]}
    if version.at_least(8, 8):
        context["runAsNonRoot"] = True
    return context


def pod_security_context(version: Version) -> dict[str, Any] | None:
    """The Pod's default ``securityContext`` (None before 8.0, whose image starts as root): the
    volumes group-owned by the image's group, and the runtime's default seccomp profile."""
    if not version.at_least(8, 0):
        return None
    return {"fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}


def default_affinity(es_name: str) -> dict[str, Any]:
    """Prefer one Pod of the cluster per Kubernetes node: a lost host then takes one node."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {ES_CLUSTER_NAME_LABEL: es_name}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def main_resources(
    user_container: Mapping[str, Any] | None, shorthand: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The node container's resources: the defaults (2Gi memory request and limit) only when
    neither the user's container nor the node set's ``resources`` names any; otherwise the user's,
    with the shorthand's requests and limits laid over them. A side the user left out stays out
    (the API server then copies a limit into the request), as ECK."""
    user = copy.deepcopy(dict((user_container or {}).get("resources") or {}))
    shorthand = shorthand or {}
    if not user.get("requests") and not user.get("limits") and not shorthand:
        user.update({"requests": {"memory": DEFAULT_MEMORY}, "limits": {"memory": DEFAULT_MEMORY}})
        return user
    for side in ("requests", "limits"):
        values = {k: v for k, v in (shorthand.get(side) or {}).items() if k in ("cpu", "memory")}
        if values:
            user[side] = {**(user.get(side) or {}), **values}
    return user


def _env(context: BuildContext, statefulset: str) -> list[dict[str, Any]]:
    return [
        field_env("POD_IP", "status.podIP"),
        field_env("POD_NAME", "metadata.name"),
        field_env("NODE_NAME", "spec.nodeName"),
        field_env("NAMESPACE", "metadata.namespace"),
        {"name": "HEADLESS_SERVICE_NAME", "value": statefulset},
        {"name": "PROBE_PASSWORD_PATH", "value": f"{PROBE_USER_MOUNT_DIR}/{PROBE_USER}"},
        {"name": "PROBE_USERNAME", "value": PROBE_USER},
        {"name": "READINESS_PROBE_PROTOCOL", "value": context.http_scheme},
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

    # ECK's order: the node container's mounts are compared as a list.
    pairs = [
        *(empty(volume, mount) for volume, mount, _ in SHARED_DIRS),
        empty("elasticsearch-logs", LOGS_DIR),
        secret(
            "elastic-internal-xpack-file-realm",
            names.file_realm_secret_name(es),
            FILE_REALM_MOUNT_DIR,
        ),
        config_map(
            "elastic-internal-unicast-hosts",
            names.unicast_hosts_configmap_name(es),
            UNICAST_HOSTS_MOUNT_DIR,
            0o644,
        ),
        secret(
            "elastic-internal-probe-user",
            names.internal_users_secret_name(es),
            PROBE_USER_MOUNT_DIR,
            items=[{"key": user, "path": user} for user in (PROBE_USER, PRE_STOP_USER)],
        ),
        secret(
            TRANSPORT_CERTS_VOLUME,
            names.node_transport_certs_secret_name(es, node_set),
            TRANSPORT_CERTS_DIR,
        ),
        secret(
            "elastic-internal-remote-certificate-authorities",
            remote_ca_secret_name(es),
            # ECK's mount path ends with a slash (the settings name the file without it).
            f"{REMOTE_CERTS_DIR}/",
        ),
    ]
    if context.http_tls_enabled:
        pairs.append(
            secret(
                "elastic-internal-http-certificates",
                names.http_certs_internal_secret_name(es),
                HTTP_CERTS_DIR,
            )
        )
    pairs += [
        config_map(
            "elastic-internal-scripts", names.scripts_configmap_name(es), SCRIPTS_MOUNT_DIR, 0o755
        ),
        secret(
            "elastic-internal-elasticsearch-config",
            names.config_secret_name(es, node_set),
            CONFIG_MOUNT_DIR,
        ),
        (
            {
                "name": DOWNWARD_API_VOLUME,
                "downwardAPI": {
                    "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
                },
            },
            {"name": DOWNWARD_API_VOLUME, "mountPath": DOWNWARD_API_MOUNT_DIR, "readOnly": True},
        ),
        empty(TMP_VOLUME, "/tmp"),
    ]
    if context.version.at_least(*_FILE_SETTINGS_VERSION):
        pairs.append(secret("file-settings", file_settings_secret_name(es), FILE_SETTINGS_DIR))
    pairs += secret_mount_volumes(context)
    volumes = sorted((volume for volume, _ in pairs), key=lambda volume: str(volume["name"]))
    mounts = [mount for _, mount in pairs]
    return volumes, mounts


def _default_container(
    context: BuildContext, node_set: Mapping[str, Any], statefulset: str
) -> dict[str, Any]:
    _, mounts = _volumes(context, str(node_set["name"]))
    if mounts_data_volume(node_set):
        mounts.append({"name": DATA_VOLUME, "mountPath": DATA_DIR})
    readiness_script = (
        READINESS_PORT_SCRIPT_KEY if context.version.at_least(8, 2) else READINESS_PROBE_SCRIPT_KEY
    )
    return {
        "name": ES_CONTAINER,
        "image": context.spec.get("image") or f"{DEFAULT_IMAGE}:{context.spec['version']}",
        "env": _env(context, statefulset),
        "ports": [
            {"name": context.http_scheme, "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "transport", "containerPort": TRANSPORT_PORT, "protocol": "TCP"},
        ],
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
                "exec": {"command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/{PRE_STOP_SCRIPT_KEY}"]}
            }
        },
        "volumeMounts": mounts,
    }


def mounts_data_volume(node_set: Mapping[str, Any]) -> bool:
    """Whether the node container mounts the data volume: a claim template or a volume of the
    user's names it (ECK's test, which also decides the read-only root filesystem)."""
    user_volumes = ((node_set.get("podTemplate") or {}).get("spec") or {}).get("volumes") or []
    claims = volume_claim_templates(node_set)
    return any(
        str((item.get("metadata") or item).get("name", "")) == DATA_VOLUME
        for item in (*claims, *user_volumes)
    )


def inherit_mounts(own: list[dict[str, Any]], main: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An init container's mounts: its own, then each of the main container's whose volume and
    path it does not mount already (ECK's rule)."""
    result = copy.deepcopy(own)
    for mount in main:
        if not any(
            m["name"] == mount["name"] or m["mountPath"] == mount["mountPath"] for m in result
        ):
            result.append(copy.deepcopy(mount))
    return result


def inherit_env(own: list[dict[str, Any]], main: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An init container's environment: its own, then the main container's it does not set."""
    names_set = {str(v["name"]) for v in own}
    return copy.deepcopy(own) + [copy.deepcopy(v) for v in main if v["name"] not in names_set]


def init_filesystem_container(context: BuildContext, main: Mapping[str, Any]) -> dict[str, Any]:
    """ECK's ``elastic-internal-init-filesystem``: prepare-fs with the shared emptyDirs at their
    init paths and the transport certificates outside the image's config directory (which it
    copies whole), then the main container's mounts, environment and image."""
    own_mounts = [{"name": volume, "mountPath": init_path} for volume, _, init_path in SHARED_DIRS]
    statefulset_transport = next(
        (m for m in main.get("volumeMounts") or [] if m["name"] == TRANSPORT_CERTS_VOLUME), None
    )
    if statefulset_transport is not None:
        own_mounts.append({**statefulset_transport, "mountPath": INIT_TRANSPORT_CERTS_DIR})
    downward = [field_env(n, p) for n, p in _DOWNWARD_ENV]
    return {
        "name": INIT_FILESYSTEM_CONTAINER,
        "image": main["image"],
        "imagePullPolicy": "IfNotPresent",
        "command": ["bash", "-c", f"{SCRIPTS_MOUNT_DIR}/{PREPARE_FS_SCRIPT_KEY}"],
        "env": inherit_env(downward, list(main.get("env") or [])),
        "volumeMounts": inherit_mounts(own_mounts, list(main.get("volumeMounts") or [])),
        "resources": copy.deepcopy(INIT_RESOURCES),
    }


_DOWNWARD_ENV = (
    ("POD_IP", "status.podIP"),
    ("POD_NAME", "metadata.name"),
    ("NODE_NAME", "spec.nodeName"),
    ("NAMESPACE", "metadata.namespace"),
)


def user_init_container(user: Mapping[str, Any], main: Mapping[str, Any]) -> dict[str, Any]:
    """A user's init container with what it leaves out taken from the main container, as ECK:
    the image, the mounts, the resources, and the environment (so the Elasticsearch tools that
    read the node's config work in it, e.g. to install a plugin)."""
    container = copy.deepcopy(dict(user))
    container.setdefault("image", main["image"])
    container["volumeMounts"] = inherit_mounts(
        list(container.get("volumeMounts") or []), list(main.get("volumeMounts") or [])
    )
    resources = container.get("resources") or {}
    if not resources.get("requests") and not resources.get("limits"):
        container["resources"] = copy.deepcopy(main.get("resources") or {})
    downward = [field_env(n, p) for n, p in _DOWNWARD_ENV]
    container["env"] = inherit_env(
        list(container.get("env") or []), inherit_env(downward, list(main.get("env") or []))
    )
    return container


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
        "env": inherit_env(
            [field_env(n, p) for n, p in _DOWNWARD_ENV], list(main.get("env") or [])
        ),
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
    user_containers = list(user_spec.get("containers") or [])
    user_main = next((c for c in user_containers if c.get("name") == ES_CONTAINER), None)
    containers = merge_containers(container, user_containers)
    containers[0]["resources"] = main_resources(user_main, node_set.get("resources"))
    spec_defaults: dict[str, Any] = {
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
    # A user's securityContext or affinity replaces the default whole, as in ECK: merging a
    # default into it could add what the user's policy forbids (e.g. an fsGroup).
    pod_security = pod_security_context(context.version)
    if "securityContext" not in user_spec and pod_security is not None:
        spec["securityContext"] = pod_security
    if "affinity" not in user_spec:
        spec["affinity"] = default_affinity(context.name)
    spec["containers"] = containers
    # The merged main container: a user's image, env or mounts reach the init containers too.
    main = containers[0]
    spec["initContainers"] = [
        init_filesystem_container(context, main),
        suspend_init_container(main),
    ] + [user_init_container(c, main) for c in user_spec.get("initContainers") or []]
    defaults = security_context(context.version, read_only_root=mounts_data_volume(node_set))
    for each in (*spec["initContainers"], *containers):
        each.setdefault("securityContext", copy.deepcopy(defaults))
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
