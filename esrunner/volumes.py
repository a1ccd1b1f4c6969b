"""A Pod's volumes as directories: Secrets and ConfigMaps written as files, emptyDirs made
fresh, and each claim a directory that outlives the Pod (so a restarted Pod finds its data)."""

from __future__ import annotations

import base64
import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from esrunner.plan import PlanError, PodPlan, VolumeSource


def claim_directory(state: Path, namespace: str, claim: str) -> Path:
    """Where a PersistentVolumeClaim's data lives, across Pods of the same claim."""
    return state / "volumes" / namespace / claim


def pod_directory(state: Path, namespace: str, name: str, uid: str) -> Path:
    """The directory of one Pod instance (its emptyDirs and projected files)."""
    return state / "pods" / namespace / f"{name}-{uid[:8]}"


def _decoded(source: Mapping[str, Any], kind: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    if kind == "secret":
        for key, value in (source.get("data") or {}).items():
            files[str(key)] = base64.b64decode(str(value))
        for key, value in (source.get("stringData") or {}).items():
            files[str(key)] = str(value).encode()
    else:
        for key, value in (source.get("data") or {}).items():
            files[str(key)] = str(value).encode()
        for key, value in (source.get("binaryData") or {}).items():
            files[str(key)] = base64.b64decode(str(value))
    return files


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    if os.geteuid() != 0:
        return
    os.chown(path, uid, gid)
    for root, directories, files in os.walk(path):
        for name in [*directories, *files]:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def write_files(
    target: Path,
    volume: VolumeSource,
    source: Mapping[str, Any] | None,
    *,
    uid: int,
    gid: int,
    adapt: Callable[[dict[str, bytes]], dict[str, bytes]] | None = None,
) -> None:
    """Write a Secret's or ConfigMap's keys (or the picked items) into ``target`` as a kubelet
    does: the files live in a timestamped directory behind the ``..data`` symlink, each key is a
    symlink through it, and an update swaps ``..data`` atomically. ``target`` itself never
    changes, so a bind mount of it sees every update and a reader never sees half a file."""
    if source is None:
        if volume.optional:
            target.mkdir(parents=True, exist_ok=True)
            return
        raise PlanError(f"volume {volume.name}: {volume.kind} {volume.reference} not found")
    content = _decoded(source, volume.kind)
    if adapt is not None:
        content = adapt(content)
    wanted: list[tuple[str, bytes, int]] = []
    if volume.items:
        for key, path, mode in volume.items:
            if key not in content:
                raise PlanError(f"volume {volume.name}: key {key} not in {volume.reference}")
            wanted.append((path, content[key], mode if mode is not None else volume.default_mode))
    else:
        wanted = [(key, value, volume.default_mode) for key, value in content.items()]
    target.mkdir(parents=True, exist_ok=True)
    link = target / "..data"
    current = os.readlink(link) if link.is_symlink() else None
    if current is not None and _same_content(target / current, wanted):
        return
    version = f"..{time.time_ns()}"
    staging = target / version
    staging.mkdir()
    for path, data, mode in wanted:
        file = staging / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(data)
        # Group-readable as with fsGroup: the node's user owns them below.
        file.chmod(mode | 0o040)
    staging.chmod(0o755)
    _chown_tree(staging, uid, gid)
    swap = target / "..data_tmp"
    swap.unlink(missing_ok=True)
    swap.symlink_to(version)
    swap.replace(link)
    tops = {Path(path).parts[0] for path, _, _ in wanted}
    for top in tops:
        entry = target / top
        if not entry.is_symlink():
            entry.symlink_to(f"..data/{top}")
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            if entry.name not in ("..data", version) and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
        elif entry.name not in tops:
            entry.unlink()
    if os.geteuid() == 0:
        os.chown(target, uid, gid)


def _same_content(directory: Path, wanted: list[tuple[str, bytes, int]]) -> bool:
    files = [path for path in directory.rglob("*") if path.is_file()]
    if len(files) != len(wanted):
        return False
    return all(
        (directory / path).is_file() and (directory / path).read_bytes() == data
        for path, data, _ in wanted
    )


def downward_files(spec: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Any]:
    """The files of a downwardAPI volume, as ConfigMap-shaped data."""
    metadata = pod.get("metadata") or {}
    data: dict[str, str] = {}
    for item in spec.get("items") or []:
        path = str(item["path"])
        field_path = str((item.get("fieldRef") or {}).get("fieldPath", ""))
        if field_path in ("metadata.labels", "metadata.annotations"):
            values = metadata.get(field_path.split(".", 1)[1]) or {}
            data[path] = "".join(f'{key}="{value}"\n' for key, value in sorted(values.items()))
        elif field_path.startswith("metadata."):
            data[path] = str(metadata.get(field_path.split(".", 1)[1], ""))
        else:
            raise PlanError(
                f"downwardAPI item {path}: {field_path or 'resourceFieldRef'} unsupported"
            )
    return {"data": data}


def materialise(
    state: Path,
    plan: PodPlan,
    sources: Mapping[tuple[str, str], Mapping[str, Any] | None],
    pod: Mapping[str, Any],
    *,
    uid: int,
    gid: int,
    adapters: Mapping[str, Callable[[dict[str, bytes]], dict[str, bytes]]] | None = None,
) -> dict[str, Path]:
    """Make every volume of ``plan`` a directory; ``sources`` maps (kind, name) to the Secret or
    ConfigMap read from the API (None when absent). Returns volume name → directory."""
    directory = pod_directory(state, plan.namespace, plan.name, plan.uid)
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for volume in plan.volumes:
        if volume.kind == "persistentVolumeClaim":
            path = claim_directory(state, plan.namespace, volume.reference)
            if not path.exists():
                path.mkdir(parents=True)
                _chown_tree(path, uid, gid)
        elif volume.kind == "emptyDir":
            path = directory / "empty" / volume.name
            if not path.exists():
                path.mkdir(parents=True)
                _chown_tree(path, uid, gid)
        elif volume.kind in ("secret", "configMap"):
            path = directory / volume.kind / volume.name
            write_files(
                path, volume, sources.get((volume.kind, volume.reference)), uid=uid, gid=gid
            )
        elif volume.kind == "downwardAPI":
            path = directory / "downward" / volume.name
            as_config = VolumeSource(volume.name, "configMap", volume.name)
            write_files(path, as_config, downward_files(volume.spec, pod), uid=uid, gid=gid)
        else:
            raise PlanError(f"volume {volume.name}: {volume.kind} is not supported here")
        paths[volume.name] = path
    return paths


def refresh(
    state: Path,
    plan: PodPlan,
    sources: Mapping[tuple[str, str], Mapping[str, Any] | None],
    *,
    uid: int,
    gid: int,
    adapters: Mapping[str, Callable[[dict[str, bytes]], dict[str, bytes]]] | None = None,
) -> None:
    """Rewrite the Secret and ConfigMap volumes of a running Pod, as a kubelet's periodic sync
    does (the node sees updated certificates, users and file settings)."""
    directory = pod_directory(state, plan.namespace, plan.name, plan.uid)
    for volume in plan.volumes:
        if volume.kind not in ("secret", "configMap"):
            continue
        source = sources.get((volume.kind, volume.reference))
        if source is None and not volume.optional:
            continue
        write_files(
            directory / volume.kind / volume.name,
            volume,
            source,
            uid=uid,
            gid=gid,
            adapt=(adapters or {}).get(volume.name),
        )
