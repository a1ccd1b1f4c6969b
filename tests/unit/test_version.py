"""``stackflow --version``: the installed package's version, exit status 0; the image tool tags
the image with the same version."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import stackflow
from stackflow.cli import main
from tests.containers.docker import load_image_tool

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


def test_the_installed_package_and_the_image_tool_carry_the_version_the_code_says() -> None:
    """pyproject.toml takes its version from ``stackflow.__version__``, and tools/image.py reads
    it from the source without importing it (no venv): the three never differ."""
    assert load_image_tool().package_version() == stackflow.__version__ == INSTALLED
