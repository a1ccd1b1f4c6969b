"""The worker's build id: Stackflow's own loaded code and versions, computed without the SDK's
walk over every loaded module."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from stackflow.cli.build_id import build_id, own_sources, worker_build_id

VERSIONS = {"stackflow": "1.2.3", "temporalio": "1.35.0"}
SOURCES = [("workflows.resource", b"a = 1\n"), ("stackflow.kube.cache", b"b = 2\n")]


@pytest.mark.parametrize(
    ("versions", "sources", "same"),
    [
        (VERSIONS, list(reversed(SOURCES)), True),  # the order of the modules does not matter
        (VERSIONS, [SOURCES[0], ("stackflow.kube.cache", b"b = 3\n")], False),  # code changed
        (VERSIONS, SOURCES[:1], False),  # a module fewer
        ({**VERSIONS, "temporalio": "1.35.1"}, SOURCES, False),  # another SDK
        ({**VERSIONS, "stackflow": "1.2.4"}, SOURCES, False),  # another release
    ],
)
def test_the_build_id_changes_with_the_code_and_the_versions_only(
    versions: dict[str, str], sources: list[tuple[str, bytes]], same: bool
) -> None:
    assert (build_id(versions, sources) == build_id(VERSIONS, SOURCES)) is same


def test_the_build_id_names_the_release() -> None:
    assert build_id(VERSIONS, SOURCES).startswith("stackflow-1.2.3-")


def test_only_stackflow_modules_with_a_readable_file_count(tmp_path: Path) -> None:
    directory = tmp_path
    (directory / "own.py").write_bytes(b"x = 1\n")
    own = types.ModuleType("workflows.own")
    own.__file__ = str(directory / "own.py")
    gone = types.ModuleType("stackflow.gone")
    gone.__file__ = str(directory / "gone.py")
    foreign = types.ModuleType("aiohttp.client")
    foreign.__file__ = str(directory / "own.py")
    builtin = types.ModuleType("stackflow.builtin")
    modules = {m.__name__: m for m in (own, gone, foreign, builtin)}
    assert list(own_sources(modules)) == [("workflows.own", b"x = 1\n")]


def test_this_process_has_a_stable_build_id() -> None:
    assert "stackflow.cli.build_id" in sys.modules
    assert worker_build_id() == worker_build_id()


def test_the_kubesim_command_is_still_dispatched(capsys: pytest.CaptureFixture[str]) -> None:
    # Imported only when it runs (the operator's start does not pay for kubesim's modules).
    from stackflow.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["kubesim", "--help"])
    assert exited.value.code == 0
    assert "kubesim" in capsys.readouterr().out
