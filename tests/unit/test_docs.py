"""The documentation stays inside the repository and names the code as it is.

* No Markdown file links to or names ``../shared`` or any path outside the repository, and every
  relative Markdown link resolves to a file or directory of the repository.
* ``docs/engine.md``'s Modules section names every module of ``workflows/``, ``activities/`` and
  ``watchers/``, and only modules that exist.
* ``docs/architecture.md`` names every package and every top-level module of ``stackflow/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE_DOC = ROOT / "docs" / "engine.md"
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
ENGINE_PACKAGES = ("workflows", "activities", "watchers")
STACKFLOW = ROOT / "stackflow"
#: The packages of ``stackflow`` the architecture page must describe (at least these).
EXPECTED_STACKFLOW_PACKAGES = frozenset(
    {"api", "cli", "controllers", "elastic", "kube", "licensing", "models", "scope", "stack"}
)

#: Directories that are not repository content: virtualenvs, VCS and tool caches, build output.
SKIPPED_DIRECTORIES = frozenset(
    {
        ".venv",
        ".git",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        ".import_linter_cache",
        ".stackflow",
        ".tools",
        "test-artifacts",
        "__pycache__",
        "node_modules",
        "build",
        "dist",
    }
)

#: An inline link or image ``[text](target)`` / ``[text](<target> "title")``.
INLINE_LINK = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]*)")
#: A reference definition ``[label]: target``.
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
#: A path climbing out of its directory, wherever it is written (a link, code, prose).
PARENT_PATH = re.compile(r"(?<![\w.])((?:\.\./)+[\w.-][\w./-]*)")
#: A URL scheme (``https:``, ``mailto:``…): not a path in the repository.
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
#: A Python module path such as ``workflows/resource.py``.
MODULE_PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.py)\b")


def markdown_files() -> list[Path]:
    """Every Markdown file of the repository, outside virtualenvs, VCS data and caches."""
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if name not in SKIPPED_DIRECTORIES and not name.endswith(".egg-info")
        )
        found += [Path(directory) / name for name in sorted(files) if name.endswith(".md")]
    return found


def link_targets(text: str) -> Iterator[str]:
    """The targets of every inline link and reference definition in ``text``."""
    for pattern in (INLINE_LINK, REFERENCE_LINK):
        for match in pattern.finditer(text):
            yield match.group(1).strip("<>")


def local_path(target: str) -> str | None:
    """The file part of a link target that points into the file system, else None."""
    if not target or target.startswith("#") or SCHEME.match(target):
        return None
    return target.split("#", 1)[0].split("?", 1)[0] or None


def inside_repository(path: Path) -> bool:
    """Whether ``path`` (resolved) lies inside the repository."""
    return path.resolve().is_relative_to(ROOT)


def outside_references(document: Path) -> list[str]:
    """What ``document`` links to or names that is missing or lies outside the repository."""
    text = document.read_text(encoding="utf-8")
    problems = [f"names ../shared at offset {m.start()}" for m in re.finditer(r"\.\./shared", text)]
    for target in link_targets(text):
        path = local_path(target)
        if path is None:
            continue
        # A leading "/" is the repository root, as on GitHub; anything else is relative.
        resolved = ROOT / path.lstrip("/") if path.startswith("/") else document.parent / path
        if not inside_repository(resolved):
            problems.append(f"links outside the repository: {target}")
        elif not resolved.exists():
            problems.append(f"links to a missing path: {target}")
    for match in PARENT_PATH.finditer(text):
        if not inside_repository(document.parent / match.group(1)):
            problems.append(f"names a path outside the repository: {match.group(1)}")
    return problems


def section(text: str, title: str) -> str:
    """The body of the level-2 section ``title`` (up to the next level-2 heading)."""
    match = re.search(
        rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE
    )
    assert match is not None, f"no '## {title}' section"
    return match.group(1)


def engine_modules() -> set[str]:
    """Every module of the engine packages, as a path relative to the repository."""
    return {
        path.relative_to(ROOT).as_posix()
        for package in ENGINE_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }


def modules_named_in_engine_doc() -> set[str]:
    """The module paths ``docs/engine.md``'s Modules section names."""
    body = section(ENGINE_DOC.read_text(encoding="utf-8"), "Modules")
    return set(MODULE_PATH.findall(body))


def stackflow_packages() -> set[str]:
    """The package directories directly under ``stackflow/``."""
    return {
        path.name
        for path in STACKFLOW.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }


def stackflow_top_modules() -> set[str]:
    """The top-level modules of ``stackflow`` (``config``…), without ``__init__``."""
    return {path.stem for path in STACKFLOW.glob("*.py") if path.name != "__init__.py"}


def names(text: str, dotted: str, path: str) -> bool:
    """Whether ``text`` names a module or package by dotted name or by path."""
    dotted_name = re.compile(rf"(?<![\w.]){re.escape(dotted)}(?![\w])")
    return path in text or dotted_name.search(text) is not None


# --- (a) nothing outside the repository ----------------------------------------------------------


def test_markdown_files_are_found() -> None:
    found = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert {"README.md", "docs/architecture.md", "docs/engine.md"} <= found


@pytest.mark.parametrize(
    "path", markdown_files(), ids=lambda path: path.relative_to(ROOT).as_posix()
)
def test_markdown_stays_inside_the_repository(path: Path) -> None:
    problems = outside_references(path)
    assert not problems, f"{path.relative_to(ROOT)}: {problems}"


def test_outside_references_are_caught() -> None:
    # The checker's parts on a made-up docs/example.md (the file need not exist).
    document = ROOT / "docs" / "example.md"
    text = (
        "[design](../../shared/DESIGN.md) and `../../elsewhere/notes.md`,\n"
        "[gone](missing.md), [ok](engine.md#modules), [web](https://temporal.io)\n"
        "[ref]: ../README.md\n"
    )
    targets = list(link_targets(text))
    assert targets == [
        "../../shared/DESIGN.md",
        "missing.md",
        "engine.md#modules",
        "https://temporal.io",
        "../README.md",
    ]
    outside = [
        t for t in targets if (p := local_path(t)) and not inside_repository(document.parent / p)
    ]
    assert outside == ["../../shared/DESIGN.md"]
    climbing = [m.group(1) for m in PARENT_PATH.finditer(text)]
    assert "../../elsewhere/notes.md" in climbing
    assert not inside_repository(document.parent / "../../elsewhere/notes.md")
    assert inside_repository(document.parent / "../README.md")
    assert not (document.parent / "missing.md").exists()
    assert re.search(r"\.\./shared", text)


# --- (b) the engine's modules ------------------------------------------------------------------------


def test_engine_doc_names_every_module() -> None:
    missing = engine_modules() - modules_named_in_engine_doc()
    assert not missing, f"modules missing from docs/engine.md's Modules section: {sorted(missing)}"


def test_engine_doc_names_only_existing_modules() -> None:
    stale = modules_named_in_engine_doc() - engine_modules()
    assert not stale, f"docs/engine.md's Modules section names missing modules: {sorted(stale)}"


# --- (c) the architecture page covers stackflow -----------------------------------------------------


def test_stackflow_packages_are_the_expected_ones() -> None:
    assert stackflow_packages() >= EXPECTED_STACKFLOW_PACKAGES


def test_architecture_doc_names_every_stackflow_package() -> None:
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    missing = sorted(
        package
        for package in stackflow_packages()
        if not names(text, f"stackflow.{package}", f"stackflow/{package}/")
    )
    assert not missing, f"packages missing from docs/architecture.md: {missing}"


def test_architecture_doc_names_every_top_level_module() -> None:
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    missing = sorted(
        module
        for module in stackflow_top_modules()
        if not names(text, f"stackflow.{module}", f"stackflow/{module}.py")
    )
    assert not missing, f"modules missing from docs/architecture.md: {missing}"
