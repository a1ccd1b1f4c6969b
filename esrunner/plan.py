"""What a Pod needs to run here, decided from its manifest alone (pure).

A Pod's containers become host processes inside a private mount namespace: every volume mount
is a bind mount of a directory the runner materialised, the image is an unpacked Elasticsearch
distribution mounted at ``/usr/share/elasticsearch`` (under a writable layer per container), and the Pod's environment is resolved the way
a kubelet resolves it. The decisions here take values and return values; the I/O is elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Where the Elasticsearch image keeps its home (the distribution is bound there).
IMAGE_HOME = "/usr/share/elasticsearch"
#: The image's entrypoint when a container names no command.
IMAGE_ENTRYPOINT = (f"{IMAGE_HOME}/bin/elasticsearch",)
#: The label every Elasticsearch Pod of ECK (and of Stackflow) carries.
ELASTICSEARCH_TYPE_LABEL = "common.k8s.elastic.co/type"
ELASTICSEARCH_TYPE = "elasticsearch"
DEFAULT_GRACE_SECONDS = 30
_IMAGE_VERSION = re.compile(r":(\d+\.\d+\.\d+)(?:[-@].*)?$")
_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


class PlanError(ValueError):
    """The Pod asks for something this runner cannot provide; the message names it."""


def is_elasticsearch_pod(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` is one of the Elasticsearch Pods this runner runs."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(ELASTICSEARCH_TYPE_LABEL) == ELASTICSEARCH_TYPE


@dataclass(frozen=True)
class VolumeSource:
    """One volume of the Pod and where its content comes from."""

    name: str
    kind: str  # secret | configMap | emptyDir | persistentVolumeClaim | downwardAPI | projected
    reference: str = ""  # the Secret, ConfigMap or claim name
    items: tuple[tuple[str, str, int | None], ...] = ()  # (key, path, mode) when the Pod picks keys
    default_mode: int = 0o644
    optional: bool = False
    spec: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mount:
    """A volume bound at ``path`` in a container (``sub_path`` inside the volume when set)."""

    volume: str
    path: str
    read_only: bool = False
    sub_path: str = ""


@dataclass(frozen=True)
class EnvFrom:
    """An environment variable whose value comes from the API (resolved at start)."""

    name: str
    kind: str  # field | secret | configMap | resource
    reference: str  # fieldPath, or Secret / ConfigMap name, or resource name
    key: str = ""
    optional: bool = False


@dataclass(frozen=True)
class Container:
    """One container: its command, environment and mounts."""

    name: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    env_from_api: tuple[EnvFrom, ...]
    mounts: tuple[Mount, ...]
    image_version: str | None
    memory_limit_bytes: int | None
    readiness_exec: tuple[str, ...] = ()
    pre_stop_exec: tuple[str, ...] = ()
    #: ``securityContext.readOnlyRootFilesystem``: only the volumes are writable.
    read_only_root: bool = False


@dataclass(frozen=True)
class PodPlan:
    """Everything the runner needs to run one Pod."""

    namespace: str
    name: str
    uid: str
    hostname: str
    volumes: tuple[VolumeSource, ...]
    init_containers: tuple[Container, ...]
    containers: tuple[Container, ...]
    grace_seconds: int
    restart_policy: str


def _memory_bytes(quantity: Any) -> int | None:
    """A Kubernetes memory quantity in bytes (None when absent)."""
    if quantity is None:
        return None
    text = str(quantity).strip()
    suffixes = {
        "Ki": 1024,
        "Mi": 1024**2,
        "Gi": 1024**3,
        "Ti": 1024**4,
        "k": 1000,
        "M": 1000**2,
        "G": 1000**3,
        "T": 1000**4,
    }
    for suffix, factor in suffixes.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    try:
        return int(float(text))
    except ValueError as error:
        raise PlanError(f"memory quantity {text!r} is not a quantity") from error


def image_version(image: str | None) -> str | None:
    """The Elasticsearch version an image reference names (``…/elasticsearch:8.17.0`` → 8.17.0)."""
    match = _IMAGE_VERSION.search(image or "")
    return match.group(1) if match else None


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: known variables replaced, ``$$`` escapes a ``$``."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _VARIABLE.sub(replace, value)


def _exec_command(probe: Mapping[str, Any] | None) -> tuple[str, ...]:
    command = ((probe or {}).get("exec") or {}).get("command") or []
    return tuple(str(part) for part in command)


def _container(spec: Mapping[str, Any]) -> Container:
    env: list[tuple[str, str]] = []
    from_api: list[EnvFrom] = []
    for variable in spec.get("env") or []:
        name = str(variable["name"])
        source = variable.get("valueFrom")
        if source is None:
            env.append((name, str(variable.get("value", ""))))
        elif "fieldRef" in source:
            from_api.append(EnvFrom(name, "field", str(source["fieldRef"]["fieldPath"])))
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            from_api.append(
                EnvFrom(
                    name, "secret", str(ref["name"]), str(ref["key"]), bool(ref.get("optional"))
                )
            )
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            from_api.append(
                EnvFrom(
                    name, "configMap", str(ref["name"]), str(ref["key"]), bool(ref.get("optional"))
                )
            )
        elif "resourceFieldRef" in source:
            from_api.append(EnvFrom(name, "resource", str(source["resourceFieldRef"]["resource"])))
        else:
            raise PlanError(f"env {name}: valueFrom {sorted(source)} is not supported")
    command = [*(spec.get("command") or []), *(spec.get("args") or [])]
    if not spec.get("command"):
        command = [*IMAGE_ENTRYPOINT, *(spec.get("args") or [])]
    mounts = tuple(
        Mount(
            volume=str(mount["name"]),
            path=str(mount["mountPath"]),
            read_only=bool(mount.get("readOnly")),
            sub_path=str(mount.get("subPath") or ""),
        )
        for mount in spec.get("volumeMounts") or []
    )
    limits = (spec.get("resources") or {}).get("limits") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    pre_stop = _exec_command((spec.get("lifecycle") or {}).get("preStop"))
    return Container(
        name=str(spec["name"]),
        command=tuple(str(part) for part in command),
        env=tuple(env),
        env_from_api=tuple(from_api),
        mounts=mounts,
        image_version=image_version(spec.get("image")),
        memory_limit_bytes=_memory_bytes(limits.get("memory") or requests.get("memory")),
        readiness_exec=_exec_command(spec.get("readinessProbe")),
        pre_stop_exec=pre_stop,
        read_only_root=bool((spec.get("securityContext") or {}).get("readOnlyRootFilesystem")),
    )


def _items(source: Mapping[str, Any]) -> tuple[tuple[str, str, int | None], ...]:
    return tuple(
        (str(item["key"]), str(item["path"]), item.get("mode"))
        for item in source.get("items") or []
    )


def _volume(spec: Mapping[str, Any]) -> VolumeSource:
    name = str(spec["name"])
    if "secret" in spec:
        source = spec["secret"] or {}
        return VolumeSource(
            name,
            "secret",
            str(source.get("secretName", "")),
            _items(source),
            int(source.get("defaultMode", 0o644)),
            bool(source.get("optional")),
        )
    if "configMap" in spec:
        source = spec["configMap"] or {}
        return VolumeSource(
            name,
            "configMap",
            str(source.get("name", "")),
            _items(source),
            int(source.get("defaultMode", 0o644)),
            bool(source.get("optional")),
        )
    if "emptyDir" in spec:
        return VolumeSource(name, "emptyDir")
    if "persistentVolumeClaim" in spec:
        return VolumeSource(
            name, "persistentVolumeClaim", str(spec["persistentVolumeClaim"]["claimName"])
        )
    if "downwardAPI" in spec:
        return VolumeSource(name, "downwardAPI", spec=spec["downwardAPI"] or {})
    kinds = sorted(key for key in spec if key != "name")
    raise PlanError(f"volume {name}: {', '.join(kinds) or 'no source'} is not supported here")


def pod_plan(pod: Mapping[str, Any], *, claim_templates: Sequence[str] = ()) -> PodPlan:
    """Decide how to run ``pod``; PlanError names what cannot be provided."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    volumes = [_volume(volume) for volume in spec.get("volumes") or []]
    known = {volume.name for volume in volumes}
    # A StatefulSet's claims are volumes of its Pods too (the controller adds them); keep any the
    # Pod mounts but does not list, so a hand-made Pod is refused clearly rather than half-run.
    containers = tuple(_container(c) for c in spec.get("containers") or [])
    init_containers = tuple(_container(c) for c in spec.get("initContainers") or [])
    for container in (*init_containers, *containers):
        for mount in container.mounts:
            if mount.volume not in known:
                raise PlanError(
                    f"container {container.name}: volume mount {mount.volume} names no volume"
                )
    if not containers:
        raise PlanError("the Pod has no container")
    grace = spec.get("terminationGracePeriodSeconds")
    return PodPlan(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        hostname=str(spec.get("hostname") or metadata.get("name", "")),
        volumes=tuple(volumes),
        init_containers=init_containers,
        containers=containers,
        grace_seconds=int(grace) if grace is not None else DEFAULT_GRACE_SECONDS,
        restart_policy=str(spec.get("restartPolicy") or "Always"),
    )


#: The JIT's first tier only: a node starts about a quarter sooner (7.6 s against 10.2 s for a
#: bare 8.18 node here), which a rolling restart of three nodes pays three times; the nodes of
#: development and tests never run long enough for the second tier to pay off.
QUICK_START_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def heap_options(memory_limit_bytes: int | None, *, ceiling_mb: int) -> str:
    """The heap the node gets: half the container's memory limit as Elasticsearch sizes it inside
    a container, capped at ``ceiling_mb`` so several nodes fit on one machine."""
    wanted = ceiling_mb if memory_limit_bytes is None else memory_limit_bytes // 2 // 1024**2
    heap = max(64, min(wanted, ceiling_mb))
    return f"-Xms{heap}m -Xmx{heap}m"
