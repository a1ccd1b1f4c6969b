"""The operator's runtime environment, for benchmarks that time the operator as it is deployed.

The development venv (``.venv``) carries the test and lint tools beside the operator's own
dependencies, and some of them change what the operator does when it starts: structlog imports
``rich`` (which import-linter brings) and ``greenlet`` (which playwright brings) whenever they are
installed, about 0.04 s of CPU at every start and 12 MiB of RSS (docs/performance.md) that the
image, which installs only the runtime dependencies, never spends. ``runtime_python`` makes a venv
with exactly those dependencies (``pyproject.toml``'s, as the image's ``pip install`` resolves
them) under ``.tools``, once per dependency list and interpreter, and ``runtime_environment``
points it at the sources of this checkout, so a timed start runs the code under test with what
production has. ``add_environment_argument`` and ``operator_python`` give a bench its
``--environment`` flag and the interpreter it names.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
import venv
from collections.abc import Callable, Mapping
from pathlib import Path

from _stack import REPO

__all__ = [
    "ENVIRONMENTS",
    "RUNTIME_VENV",
    "add_environment_argument",
    "operator_python",
    "runtime_dependencies",
    "runtime_environment",
    "runtime_python",
]

#: What ``--environment`` takes: the image's dependencies only (the default), or the development venv.
ENVIRONMENTS = ("runtime", "dev")
#: Where the runtime venv lives (``.tools`` is never committed).
RUNTIME_VENV = REPO / ".tools" / "runtime-venv"
_STAMP = RUNTIME_VENV / "stackflow-dependencies.json"


def runtime_dependencies() -> list[str]:
    """The operator's runtime requirements, as ``pyproject.toml`` lists them."""
    with (REPO / "pyproject.toml").open("rb") as handle:
        return list(tomllib.load(handle)["project"]["dependencies"])


def _wanted_stamp() -> str:
    """What the venv was made from: the requirements and this interpreter's version."""
    return json.dumps({"dependencies": runtime_dependencies(), "python": sys.version})


def runtime_python(progress: Callable[[str], None]) -> Path | None:
    """The runtime venv's interpreter, made first if missing or made from other requirements;
    None, having said why through ``progress``, when it cannot be made (no package index)."""
    python = RUNTIME_VENV / "bin" / "python"
    wanted = _wanted_stamp()
    if python.exists() and _STAMP.exists() and _STAMP.read_text() == wanted:
        return python
    progress(f"making the operator's runtime venv in {RUNTIME_VENV} (about a minute, once)")
    _STAMP.unlink(missing_ok=True)
    venv.EnvBuilder(clear=True, with_pip=True).create(RUNTIME_VENV)
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *runtime_dependencies()],
        check=False,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if installed.returncode != 0:
        progress(f"the runtime venv could not be made (pip exited {installed.returncode})")
        return None
    _STAMP.write_text(wanted)
    progress("runtime venv ready")
    return python


def add_environment_argument(parser: argparse.ArgumentParser) -> None:
    """``--environment runtime|dev``: where the timed operator runs (``runtime`` by default)."""
    parser.add_argument(
        "--environment",
        choices=ENVIRONMENTS,
        default=ENVIRONMENTS[0],
        help="the operator with the image's dependencies only (default), or the development venv",
    )


def operator_python(environment: str, progress: Callable[[str], None]) -> tuple[Path, str]:
    """The interpreter to run the operator with for ``environment`` (``runtime`` or ``dev``), and
    the environment it really is: ``dev`` when the runtime venv cannot be made (said as it
    happens, and in the figures' heading through the name returned)."""
    if environment == "runtime":
        python = runtime_python(progress)
        if python is not None:
            return python, "runtime"
        progress("timing the operator from the development venv instead")
    return Path(sys.executable), "dev"


def runtime_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with this checkout's sources first on the path (the runtime venv holds no
    Stackflow: the timed operator is the code in the working tree)."""
    inherited = base.get("PYTHONPATH")
    path = str(REPO) if not inherited else os.pathsep.join([str(REPO), inherited])
    return {**base, "PYTHONPATH": path}
