"""``stackflow --version``: the installed package's version, exit status 0."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from stackflow.cli import main

INSTALLED = importlib.metadata.version("stackflow")
STACKFLOW = Path(sys.executable).parent / "stackflow"


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out == f"stackflow {INSTALLED}\n"


def test_version_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--version" in capsys.readouterr().out


def test_the_console_script_prints_the_version_and_exits_zero() -> None:
    if not STACKFLOW.exists():
        pytest.fail(f"the stackflow console script is not installed next to {sys.executable}")
    done = subprocess.run(
        [str(STACKFLOW), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"stackflow {INSTALLED}\n", "")
