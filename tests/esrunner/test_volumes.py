"""A Pod's Secret and ConfigMap volumes are written as a kubelet writes them: keys behind the
``..data`` symlink, swapped atomically on update, the directory itself never replaced."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from esrunner.plan import PlanError, VolumeSource
from esrunner.volumes import downward_files, write_files


def _secret(**data: str) -> dict[str, Any]:
    return {"data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


def _write(target: Path, volume: VolumeSource, source: dict[str, Any] | None) -> None:
    write_files(target, volume, source, uid=os.getuid(), gid=os.getgid())


def test_keys_become_files_behind_the_data_link(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    _write(target, VolumeSource("v", "secret", "s"), _secret(a="1", b="2"))
    assert (target / "a").read_text() == "1"
    assert (target / "a").is_symlink()
    assert os.readlink(target / "a") == "..data/a"
    assert (target / "..data").is_symlink()


def test_an_update_keeps_the_directory_and_swaps_the_content(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    volume = VolumeSource("v", "secret", "s")
    _write(target, volume, _secret(a="1", b="2"))
    inode = target.stat().st_ino
    first = os.readlink(target / "..data")
    _write(target, volume, _secret(a="3"))
    assert target.stat().st_ino == inode  # a bind mount of it sees the update
    assert (target / "a").read_text() == "3"
    assert not (target / "b").exists()
    assert os.readlink(target / "..data") != first
    # The old version is gone; only the live one remains.
    versions = [p.name for p in target.iterdir() if p.name.startswith("..") and p.is_dir()]
    assert len([v for v in versions if not (target / v).is_symlink()]) == 1


def test_unchanged_content_is_not_rewritten(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    volume = VolumeSource("v", "configMap", "c")
    _write(target, volume, {"data": {"a": "x"}})
    before = os.readlink(target / "..data")
    _write(target, volume, {"data": {"a": "x"}})
    assert os.readlink(target / "..data") == before


def test_items_pick_keys_paths_and_modes(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    volume = VolumeSource("v", "secret", "s", items=(("k", "sub/file", 0o600),))
    _write(target, volume, _secret(k="v", other="o"))
    assert (target / "sub" / "file").read_text() == "v"
    assert not (target / "other").exists()
    assert (target / "..data" / "sub" / "file").stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("volume", "source", "message"),
    [
        (VolumeSource("v", "secret", "s"), None, "volume v: secret s not found"),
        (
            VolumeSource("v", "secret", "s", items=(("k", "f", None),)),
            _secret(other="1"),
            "volume v: key k not in s",
        ),
    ],
)
def test_a_missing_source_or_key_is_one_clear_message(
    tmp_path: Path, volume: VolumeSource, source: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(PlanError) as raised:
        _write(tmp_path / "vol", volume, source)
    assert str(raised.value) == message


def test_an_optional_missing_source_is_an_empty_directory(tmp_path: Path) -> None:
    _write(tmp_path / "vol", VolumeSource("v", "secret", "s", optional=True), None)
    assert list((tmp_path / "vol").iterdir()) == []


def test_downward_api_files_carry_labels_and_fields() -> None:
    pod = {"metadata": {"name": "es-0", "labels": {"b": "2", "a": "1"}}}
    spec = {
        "items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        ]
    }
    assert downward_files(spec, pod) == {"data": {"labels": 'a="1"\nb="2"\n', "name": "es-0"}}
