"""The floors hold: an import from a lower floor to a higher one fails the import-linter contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("stackflow", "workflows", "activities", "watchers", "kubesim")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_tree(destination: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, destination / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    ("module", "upward_import"),
    [
        # the Kubernetes adapter reaching up to the entry point
        ("stackflow/kube/events.py", "import stackflow.cli.operator"),
        # the pure controller table reaching up to the activities that implement it
        ("stackflow/controllers/table.py", "import activities.registry"),
        # a builder reaching up to the Kubernetes adapter
        ("stackflow/stack/naming.py", "import stackflow.kube.resources"),
    ],
)
def test_an_upward_import_breaks_the_floors_contract(
    tmp_path: Path, module: str, upward_import: str
) -> None:
    _copy_tree(tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{upward_import}  # deliberately upward\n")

    result = _lint_imports(tmp_path)

    assert result.returncode != 0, result.stdout
    assert "the floors" in result.stdout
    assert "BROKEN" in result.stdout
    dotted = module.removesuffix(".py").replace("/", ".")
    assert f"{dotted} -> {upward_import.split()[1]}" in result.stdout
