"""kubesim/ARCHITECTURE.md names every module of kubesim, and only modules that exist.

Modules are named by their path relative to ``kubesim/`` (``writes.py``, ``controllers/gc.py``);
a path under ``tests/`` names a test file relative to the repository root.
"""

from __future__ import annotations

import re
from pathlib import Path

import kubesim

PACKAGE = Path(kubesim.__file__).resolve().parent
REPOSITORY = PACKAGE.parent
DOC = PACKAGE / "ARCHITECTURE.md"
# A path ending in ``.py`` that does not continue another path or word (``gc.py`` in
# ``controllers/gc.py`` is not a mention of its own).
PY_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.py)\b")


def package_modules() -> set[str]:
    """Every ``.py`` file of the kubesim package, relative to ``kubesim/``."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def named_paths(text: str) -> set[str]:
    """The ``.py`` paths a document names."""
    return set(PY_PATH.findall(text))


def test_path_pattern_reads_nested_paths_whole() -> None:
    assert named_paths("`controllers/gc.py` and `writes.py`; python -m kubesim") == {
        "controllers/gc.py",
        "writes.py",
    }


def test_every_module_is_described() -> None:
    missing = package_modules() - named_paths(DOC.read_text(encoding="utf-8"))
    assert not missing, f"modules missing from kubesim/ARCHITECTURE.md: {sorted(missing)}"


def test_every_named_module_exists() -> None:
    modules = package_modules()
    stale = []
    for path in sorted(named_paths(DOC.read_text(encoding="utf-8"))):
        if path.startswith("tests/"):
            exists = (REPOSITORY / path).is_file()
        else:
            exists = path.removeprefix("kubesim/") in modules
        if not exists:
            stale.append(path)
    assert not stale, f"kubesim/ARCHITECTURE.md names modules that do not exist: {stale}"


def test_doc_stays_inside_the_repository() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "../" not in text, "kubesim/ARCHITECTURE.md must not point outside the repository"
