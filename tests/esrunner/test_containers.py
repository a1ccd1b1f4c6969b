"""A container really started by the runner's launcher: the image under a writable layer of its
own, and ``readOnlyRootFilesystem`` honoured (needs root: skipped, with the reason, without)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from esrunner.containers import (
    Bind,
    Image,
    bind_order,
    launcher_script,
    run_to_end,
    unavailable_reason,
)
from esrunner.plan import pod_plan

REASON = unavailable_reason()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the node's user can reach (pytest's own is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="esrunner-container-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_launcher_mounts_the_image_first_and_makes_the_root_read_only_last(
    tmp_path: Path,
) -> None:
    image = Image(tmp_path / "dist", tmp_path / "up", tmp_path / "work", "/usr/share/elasticsearch")
    (tmp_path / "logs").mkdir()
    script = launcher_script(
        [Bind(tmp_path / "logs", "/usr/share/elasticsearch/logs")],
        uid=1000,
        gid=1000,
        workdir="/",
        image=image,
        read_only_root=True,
    ).splitlines()
    overlay = next(i for i, line in enumerate(script) if "-t overlay" in line)
    bind = next(i for i, line in enumerate(script) if line.startswith("mount --bind"))
    root = script.index("mount -o remount,bind,ro /")
    assert overlay < bind < root
    assert script[root + 1] == "mount -o remount,bind,ro /usr/share/elasticsearch"
    writable = launcher_script([], uid=1, gid=1, workdir="/", image=image)
    assert "remount" not in writable


def test_a_bind_that_would_hide_another_s_source_comes_last(tmp_path: Path) -> None:
    state = tmp_path / "state"
    binds = [
        Bind(state / "empty" / "tmp-volume", str(tmp_path)),
        Bind(state / "hosts", "/etc/hosts"),
        Bind(state / "empty" / "logs", "/usr/share/elasticsearch/logs"),
    ]
    assert [bind.target for bind in bind_order(binds)] == [
        "/etc/hosts",
        "/usr/share/elasticsearch/logs",
        str(tmp_path),
    ]


@pytest.mark.parametrize(("flag", "expected"), [(True, True), (False, False), (None, False)])
def test_the_plan_reads_read_only_root_filesystem(flag: bool | None, expected: bool) -> None:
    container: dict[str, object] = {"name": "elasticsearch", "image": "x/elasticsearch:8.18.0"}
    if flag is not None:
        container["securityContext"] = {"readOnlyRootFilesystem": flag}
    pod: dict[str, Any] = {
        "metadata": {"name": "es-0", "namespace": "ns", "uid": "u"},
        "spec": {"containers": [container]},
    }
    assert pod_plan(pod).containers[0].read_only_root is expected


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("read_only_root", [True, False])
async def test_a_container_writes_only_where_its_root_filesystem_allows(
    shared_dir: Path, read_only_root: bool
) -> None:
    tmp_path = shared_dir
    # Paths the node's user could write if nothing were read-only: a host directory, the image.
    dist, host, volume = tmp_path / "dist", tmp_path / "host", tmp_path / "volume"
    for path in (dist, host, volume):
        path.mkdir()
        os.chown(path, 1000, 1000)
    target = str(tmp_path / "image")
    image = Image(dist, tmp_path / "layer" / "upper", tmp_path / "layer" / "work", target)
    probe = (
        f"touch {target}/in-image; echo image=$?; "
        f"touch {host}/on-host; echo host=$?; "
        f"touch {target}/data/in-volume; echo volume=$?; "
        f"test -d {target}/data; echo mountpoint=$?"
    )
    log = tmp_path / "out.log"
    code = await run_to_end(
        ["bash", "-c", probe],
        env={},
        binds=[Bind(volume, f"{target}/data")],
        log=log,
        limit_seconds=30,
        image=image,
        read_only_root=read_only_root,
    )
    assert code == 0, log.read_text()
    results = dict(line.split("=") for line in log.read_text().splitlines() if line.count("=") == 1)
    refused = "1" if read_only_root else "0"
    assert results == {"image": refused, "host": refused, "volume": "0", "mountpoint": "0"}
    # The mount point and any write to the image land in the container's layer, never in the
    # distribution the other containers share.
    assert sorted(p.name for p in dist.iterdir()) == []
    assert (tmp_path / "layer" / "upper" / "data").is_dir()
    assert (volume / "in-volume").exists()
