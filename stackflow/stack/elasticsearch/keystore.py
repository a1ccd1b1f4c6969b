"""The Elasticsearch keystore (secure settings), as ECK builds it.

Every key of every secure settings source lands in one aggregated Secret, ``<es>-es-secure-settings``,
mounted into the Pods; the init container ``elastic-internal-init-keystore`` creates the keystore
and adds one entry per file of that volume. The sources, in ECK's order (a later source overrides an
earlier one's key):

1. the cluster's ``spec.secureSettings[]`` (Secrets of the cluster's namespace);
2. the secure settings of the StackConfigPolicies targeting the cluster, recorded by the policy
   controller as the JSON annotation ``policy.k8s.elastic.co/secure-settings-secrets`` on
   ``<es>-es-file-settings`` (Secrets of each policy's namespace);
3. the remote clusters' cross-cluster API keys, ``<es>-es-remote-api-keys`` (operator-made; absent
   when the cluster uses no API key, which is no error).

The aggregated Secret exists only while the cluster has at least one source, as ECK. A change of
its content changes the Pods' config hash, so the Pods roll as for any other configuration change.
Everything here is pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.remote_clusters import remote_api_keys_secret_name
from stackflow.stack.labels import ES_CONFIG_HASH_ANNOTATION, TEMPLATE_HASH_LABEL
from stackflow.stack.objects import Manifest
from stackflow.stack.pods import content_hash
from stackflow.stack.policies.stack_config.secrets import SECURE_SETTINGS_ANNOTATION

INIT_KEYSTORE_CONTAINER = "elastic-internal-init-keystore"
SECURE_SETTINGS_VOLUME = "elastic-internal-secure-settings"
SECURE_SETTINGS_MOUNT_DIR = "/mnt/elastic-internal/secure-settings"
#: Where ``elasticsearch-keystore`` writes: the Pod's local config directory (an emptyDir, so a
#: restarted Pod rebuilds its keystore from the mounted Secret).
KEYSTORE_CONFIG_DIR = "/usr/share/elasticsearch/config"
CONFIG_LOCAL_VOLUME = "elastic-internal-elasticsearch-config-local"
_KEYSTORE_BIN = "/usr/share/elasticsearch/bin/elasticsearch-keystore"
#: ECK's keystore init script: create the keystore, then ``add-file`` every mounted entry.
INIT_KEYSTORE_SCRIPT = f"""#!/usr/bin/env bash
set -eux
keystore_initialized_flag={KEYSTORE_CONFIG_DIR}/elastic-internal-init-keystore.ok
if [[ -f "${{keystore_initialized_flag}}" ]]; then
    echo "Keystore already initialized."
    exit 0
fi
echo "Initializing keystore."
{_KEYSTORE_BIN} create
for filename in {SECURE_SETTINGS_MOUNT_DIR}/*; do
    [[ -e "$filename" ]] || continue
    key=$(basename "$filename")
    echo "Adding "$key" to the keystore."
    {_KEYSTORE_BIN} add-file "$key" "$filename"
done
touch {KEYSTORE_CONFIG_DIR}/elastic-internal-init-keystore.ok
echo "Keystore initialization successful."
"""


@dataclass(frozen=True)
class SecureSettingsSource:
    """One Secret feeding the keystore: all its keys, or only ``entries`` (key, renamed path)."""

    namespace: str
    secret_name: str
    entries: tuple[tuple[str, str], ...] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(namespace, secret name)``: how the source Secret is looked up."""
        return (self.namespace, self.secret_name)


def _source(namespace: str, item: Mapping[str, Any]) -> SecureSettingsSource | None:
    name = item.get("secretName")
    if not name:
        return None
    entries = item.get("entries")
    if not entries:
        return SecureSettingsSource(namespace, str(name))
    pairs = tuple(
        (str(entry["key"]), str(entry.get("path") or entry["key"]))
        for entry in entries
        if isinstance(entry, Mapping) and entry.get("key")
    )
    return SecureSettingsSource(namespace, str(name), pairs)


def policy_sources(file_settings: Mapping[str, Any] | None) -> list[SecureSettingsSource]:
    """The policies' secure settings sources recorded on ``<es>-es-file-settings`` (none when the
    annotation is absent or does not parse)."""
    raw = view(file_settings).annotations.get(SECURE_SETTINGS_ANNOTATION)
    if not raw:
        return []
    try:
        listed = load_bounded_json(raw)
    except ValueError:
        return []
    found = []
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, Mapping) and item.get("namespace"):
            source = _source(str(item["namespace"]), item)
            if source is not None:
                found.append(source)
    return found


def secure_settings_sources(
    es: Mapping[str, Any],
    *,
    file_settings: Mapping[str, Any] | None,
    remote_api_keys: bool,
) -> list[SecureSettingsSource]:
    """Every source of ``es``'s keystore, in ECK's order (spec, policies, remote API keys).

    ``file_settings`` is the current ``<es>-es-file-settings`` Secret; ``remote_api_keys`` whether
    ``<es>-es-remote-api-keys`` exists (the operator makes it only when a key is stored).
    """
    meta = view(es)
    namespace = meta.namespace or "default"
    spec: Mapping[str, Any] = es.get("spec") or {}
    sources = [
        source
        for item in spec.get("secureSettings") or []
        if isinstance(item, Mapping)
        for source in [_source(namespace, item)]
        if source is not None
    ]
    sources += policy_sources(file_settings)
    if remote_api_keys:
        sources.append(SecureSettingsSource(namespace, remote_api_keys_secret_name(meta.name)))
    return sources


@dataclass(frozen=True)
class Aggregate:
    """The aggregated keystore content and the sources whose Secret was not found."""

    data: dict[str, bytes]
    missing: tuple[SecureSettingsSource, ...]


def aggregate_secure_settings(
    sources: Sequence[SecureSettingsSource],
    found: Mapping[tuple[str, str], Mapping[str, bytes] | None],
) -> Aggregate:
    """Merge the sources' decoded data in order (a later source's key wins).

    ``found`` maps ``(namespace, name)`` to the decoded Secret data, None (or absent) when the
    Secret does not exist: that source is skipped and reported missing, the others still apply
    (ECK records a Warning and goes on). A listed entry whose key the Secret lacks is skipped.
    """
    data: dict[str, bytes] = {}
    missing: list[SecureSettingsSource] = []
    for source in sources:
        secret = found.get(source.key)
        if secret is None:
            missing.append(source)
            continue
        if source.entries is None:
            data.update(secret)
            continue
        for key, path in source.entries:
            if key in secret:
                data[path] = secret[key]
    return Aggregate(data=dict(sorted(data.items())), missing=tuple(missing))


def keystore_hash(data: Mapping[str, bytes]) -> str:
    """A hash of the aggregated content (it joins the Pods' config hash)."""
    return content_hash({key: value.hex() for key, value in sorted(data.items())})


def with_keystore(statefulset: Manifest, es_name: str, data_hash: str) -> Manifest:
    """Return ``statefulset`` with the keystore: the secure settings volume, the init container
    right after ``elastic-internal-init-filesystem`` (which prepares the local config directory),
    the content hash folded into the config hash label, and the template hash recomputed."""
    result = copy.deepcopy(statefulset)
    spec = result["spec"]
    template = spec["template"]
    pod_spec = template["spec"]
    pod_spec["volumes"] = sorted(
        [
            *pod_spec.get("volumes", []),
            {
                "name": SECURE_SETTINGS_VOLUME,
                "secret": {
                    "secretName": names.secure_settings_secret_name(es_name),
                    "optional": False,
                },
            },
        ],
        key=lambda volume: str(volume["name"]),
    )
    main: Mapping[str, Any] = next(iter(pod_spec.get("containers") or []), {})
    # As ECK's: its own mounts, then the node container's it does not mount (the config copy at
    # the config path among them, where the keystore is written), and a security context of its
    # own (not privileged, nothing more), which the Pod's container defaults then leave alone.
    own_mounts: list[dict[str, Any]] = [
        {"name": SECURE_SETTINGS_VOLUME, "mountPath": SECURE_SETTINGS_MOUNT_DIR, "readOnly": True}
    ]
    for mount in main.get("volumeMounts") or []:
        if not any(
            m["name"] == mount["name"] or m["mountPath"] == mount["mountPath"] for m in own_mounts
        ):
            own_mounts.append(copy.deepcopy(mount))
    if not any(m["name"] == CONFIG_LOCAL_VOLUME for m in own_mounts):
        own_mounts.append({"name": CONFIG_LOCAL_VOLUME, "mountPath": KEYSTORE_CONFIG_DIR})
    init = {
        "name": INIT_KEYSTORE_CONTAINER,
        "image": main.get("image", ""),
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"privileged": False},
        "command": ["/usr/bin/env", "bash", "-c", INIT_KEYSTORE_SCRIPT],
        "env": copy.deepcopy(main.get("env") or []),
        "volumeMounts": own_mounts,
        "resources": {
            "requests": {"cpu": "100m", "memory": "196Mi"},
            "limits": {"cpu": "1000m", "memory": "196Mi"},
        },
    }
    inits = list(pod_spec.get("initContainers") or [])
    position = next(
        (
            index + 1
            for index, container in enumerate(inits)
            if container.get("name") == "elastic-internal-init-filesystem"
        ),
        0,
    )
    inits.insert(position, init)
    pod_spec["initContainers"] = inits
    annotations = template["metadata"].setdefault("annotations", {})
    annotations[ES_CONFIG_HASH_ANNOTATION] = content_hash(
        [annotations.get(ES_CONFIG_HASH_ANNOTATION, ""), data_hash]
    )
    result["metadata"]["labels"][TEMPLATE_HASH_LABEL] = content_hash(spec)
    return result
