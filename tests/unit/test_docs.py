"""The documentation stays inside the repository and names the code as it is.

* No Markdown file links to or names ``../shared`` or any path outside the repository, and every
  relative Markdown link resolves to a file or directory of the repository.
* In ``README.md`` and ``docs/``, every relative link's ``#anchor`` is a heading of its target,
  every path of the repository named in backticks (``activities/step.py``, ``tests/e2e/``) exists,
  every dotted module named in backticks (``stackflow.kube.scoped``, ``workflows.decisions``)
  exists, and every ``make`` target named is a target of the Makefile.
* ``docs/modules.md`` names every module of the packages and only modules that exist.
* ``docs/architecture.md``'s floors table is the import-linter layers contract of ``pyproject.toml``.
* The README stays short and no page names a package registry's host.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MODULES_DOC = DOCS / "modules.md"
ARCHITECTURE_DOC = DOCS / "architecture.md"
#: The packages whose every module the module map lists.
MAPPED_PACKAGES = (
    "stackflow",
    "activities",
    "workflows",
    "watchers",
    "kubesim",
    "controlplane",
    "esrunner",
)
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


def stackflow_packages() -> set[str]:
    """The package directories directly under ``stackflow/``."""
    return {
        path.name
        for path in STACKFLOW.iterdir()
        if path.is_dir() and (path / "__init__.py").exists()
    }


def documentation() -> list[Path]:
    """``README.md`` and every Markdown page under ``docs/``."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def doc_id(path: Path) -> str:
    """A page's path relative to the repository, as a test id."""
    return path.relative_to(ROOT).as_posix()


def outside_code(text: str) -> str:
    """``text`` without its fenced code blocks (their ``#`` lines are comments, not headings)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    """Every heading anchor of a Markdown page (a repeated heading gets ``-1``, ``-2``…)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", outside_code(document.read_text()), re.M):
        anchor = github_anchor(match.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def broken_anchors(document: Path) -> list[str]:
    """The links of ``document`` whose ``#anchor`` is not a heading of the page they point at."""
    problems = []
    for target in link_targets(outside_code(document.read_text(encoding="utf-8"))):
        if SCHEME.match(target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        page = document if not path else (document.parent / path).resolve()
        if page.suffix == ".md" and page.is_file() and anchor not in anchors(page):
            problems.append(f"{target}: no heading '#{anchor}' in {doc_id(page)}")
    return problems


#: A repository path in backticks: a top-level directory, then more (``tests/e2e/``, ``bench/x.py``).
BACKTICKED_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]*)`")
#: A dotted name in backticks rooted at one of the mapped packages (``stackflow.kube.scoped``).
BACKTICKED_DOTTED = re.compile(rf"`((?:{'|'.join(MAPPED_PACKAGES)})(?:\.\w+)+)`")


def top_level_directories() -> set[str]:
    """The repository's top-level directories a page may name paths under."""
    return {
        path.name
        for path in ROOT.iterdir()
        if path.is_dir() and not path.name.startswith(".") and path.name not in SKIPPED_DIRECTORIES
    }


def missing_paths(text: str) -> list[str]:
    """The repository paths named in backticks in ``text`` that do not exist."""
    roots = top_level_directories()
    missing = []
    for match in BACKTICKED_PATH.finditer(text):
        path = match.group(1)
        if path.split("/", 1)[0] in roots and not (ROOT / path).exists():
            missing.append(path)
    return missing


def module_file(dotted: str) -> Path | None:
    """The file of module or package ``dotted`` (``stackflow.kube`` → its ``__init__.py``)."""
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def python_sources() -> str:
    """The source of every module of the mapped packages, joined (to find names written as strings)."""
    return "\n".join(
        path.read_text(encoding="utf-8")
        for package in MAPPED_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def dotted_name_exists(dotted: str, sources: str) -> bool:
    """Whether ``dotted`` is a module, a name defined in one, or a registered name such as an
    activity's (``stackflow.scope_check``) written as a string in the code."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = module_file(".".join(parts[:cut]))
        if module is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if len(rest) == 1 and re.search(
            rf"^\s*(?:async\s+def|def|class)\s+{rest[0]}\b|^{rest[0]}\s*[:=]|import .*\b{rest[0]}\b",
            module.read_text(encoding="utf-8"),
            re.MULTILINE,
        ):
            return True
        break
    return f'"{dotted}"' in sources


def makefile_targets() -> set[str]:
    """The targets the Makefile defines."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {
        name
        for match in re.finditer(r"^([\w. -]+):(?!=)", text, re.MULTILINE)
        for name in match.group(1).split()
    }


def modules_of_packages(*, with_init: bool = False) -> set[str]:
    """Every module of the mapped packages, relative to the repository; ``__init__.py`` only
    ``with_init`` (the map names a package by its heading, its ``__init__.py`` when it holds more)."""
    return {
        path.relative_to(ROOT).as_posix()
        for package in MAPPED_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts and (with_init or path.name != "__init__.py")
    }


def modules_named_in_map() -> set[str]:
    """The modules ``docs/modules.md``'s Modules section names: a full path in backticks, or a bare
    ``name.py`` in backticks under the package heading ``### `dir/` `` it is listed under."""
    named: set[str] = set()
    body = section(MODULES_DOC.read_text(encoding="utf-8"), "Modules")
    for block in re.split(r"^### ", body, flags=re.MULTILINE)[1:]:
        heading, _, listing = block.partition("\n")
        package = re.fullmatch(r"`([\w/]+)/`\s*", heading)
        assert package is not None, f"docs/modules.md: a package heading is not `dir/`: {heading}"
        for token in re.findall(r"`([\w/.-]+\.py)`", listing):
            named.add(token if "/" in token else f"{package.group(1)}/{token}")
    return named


def package_headings_in_map() -> set[str]:
    """The package directories ``docs/modules.md`` has a heading for."""
    body = section(MODULES_DOC.read_text(encoding="utf-8"), "Modules")
    return set(re.findall(r"^### `([\w/]+)/`", body, re.MULTILINE))


def floors_in_architecture_doc() -> list[str]:
    """The first column of ``docs/architecture.md``'s floors table, top to bottom."""
    body = section(ARCHITECTURE_DOC.read_text(encoding="utf-8"), "The floors")
    rows = re.findall(r"^\| (`.*?`) \| ", body, re.MULTILINE)
    return [row.replace("\\|", "|").replace("`", "") for row in rows]


def floors_in_pyproject() -> list[str]:
    """The layers of ``pyproject.toml``'s floors contract (import-linter ``layers``), top to bottom."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        contract["layers"]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers" and contract["name"].startswith("the floors")
    ]
    return [str(layer) for layer in layers]


# --- (a) nothing outside the repository ----------------------------------------------------------


def test_markdown_files_are_found() -> None:
    found = {path.relative_to(ROOT).as_posix() for path in markdown_files()}
    assert {"README.md", "docs/architecture.md", "docs/engine.md", "docs/modules.md"} <= found


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


# --- (b) links, paths and commands in README.md and docs/ ------------------------------------------


@pytest.mark.parametrize("path", documentation(), ids=doc_id)
def test_links_reach_their_anchors(path: Path) -> None:
    problems = broken_anchors(path)
    assert not problems, f"{doc_id(path)}: {problems}"


@pytest.mark.parametrize("path", documentation(), ids=doc_id)
def test_named_paths_exist(path: Path) -> None:
    missing = missing_paths(path.read_text(encoding="utf-8"))
    assert not missing, f"{doc_id(path)} names paths that do not exist: {missing}"


def test_named_modules_exist() -> None:
    sources = python_sources()
    missing = sorted(
        f"{doc_id(path)}: {dotted}"
        for path in documentation()
        for dotted in set(BACKTICKED_DOTTED.findall(path.read_text(encoding="utf-8")))
        if not dotted_name_exists(dotted, sources)
    )
    assert not missing, f"dotted names in backticks that name no module or name: {missing}"


def test_named_make_targets_exist() -> None:
    targets = makefile_targets()
    missing = sorted(
        f"{doc_id(path)}: make {target}"
        for path in documentation()
        for target in re.findall(
            r"(?:`|^)make ([a-z][\w-]*)", path.read_text(encoding="utf-8"), re.MULTILINE
        )
        if target not in targets
    )
    assert not missing, f"make targets the Makefile does not define: {missing}"


def test_checkers_catch_what_they_look_for() -> None:
    # The anchors GitHub gives headings, and the checkers on made-up text.
    assert github_anchor("Secrets held (`bench/secret_cache_bench.py`)") == (
        "secrets-held-benchsecret_cache_benchpy"
    )
    assert github_anchor("Where a cluster is dialled (`elasticsearch-dial`)") == (
        "where-a-cluster-is-dialled-elasticsearch-dial"
    )
    assert (
        missing_paths("`activities/step.py`, `tests/e2e/`, `config/operator/settings.json`") == []
    )
    assert missing_paths("`activities/no_such_module.py`") == ["activities/no_such_module.py"]
    sources = python_sources()
    assert dotted_name_exists("stackflow.models.engine", sources)
    assert dotted_name_exists("stackflow.scope_check", sources)  # an activity's registered name
    assert not dotted_name_exists("stackflow.no_such_module", sources)
    assert {"dev", "test", "lint"} <= makefile_targets()


# --- (c) the module map ----------------------------------------------------------------------------


def test_module_map_names_every_module() -> None:
    missing = sorted(modules_of_packages() - modules_named_in_map())
    assert not missing, f"modules missing from docs/modules.md (add them): {missing}"


def test_module_map_names_only_existing_modules() -> None:
    stale = sorted(modules_named_in_map() - modules_of_packages(with_init=True))
    assert not stale, f"docs/modules.md names modules that do not exist (remove them): {stale}"


def test_module_map_has_a_heading_per_package() -> None:
    packages = {
        path.parent.relative_to(ROOT).as_posix()
        for package in MAPPED_PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    headings = package_headings_in_map()
    assert not packages - headings, f"package headings missing: {sorted(packages - headings)}"
    assert not headings - packages, f"package headings of no package: {sorted(headings - packages)}"


def test_stackflow_packages_are_the_expected_ones() -> None:
    assert stackflow_packages() >= EXPECTED_STACKFLOW_PACKAGES


# --- (d) the floors, the README's length, registry hosts -------------------------------------------


def test_architecture_floors_are_the_layers_contract() -> None:
    assert floors_in_architecture_doc() == floors_in_pyproject()


def test_every_page_is_in_the_index() -> None:
    index = DOCS / "index.md"
    linked = {
        (index.parent / target.split("#", 1)[0]).resolve()
        for target in link_targets(index.read_text(encoding="utf-8"))
        if local_path(target)
    }
    orphans = sorted(doc_id(page) for page in DOCS.rglob("*.md") if page.resolve() not in linked)
    assert orphans == ["docs/index.md"], f"pages docs/index.md does not link to: {orphans}"


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 150, f"README.md has {lines} lines: move detail into a page under docs/"


#: Package registries' hosts, which no page names (the tools are pointed at them by configuration).
REGISTRY_HOSTS = re.compile(
    r"\b(?:pypi\.org|files\.pythonhosted\.org|proxy\.golang\.org|sum\.golang\.org"
    r"|repo1?\.maven(?:\.apache)?\.org|registry-1\.docker\.io|index\.docker\.io"
    r"|docker\.elastic\.co|ghcr\.io|quay\.io|registry\.k8s\.io|gcr\.io|registry\.npmjs\.org)\b"
)


@pytest.mark.parametrize("path", documentation(), ids=doc_id)
def test_no_registry_host_is_named(path: Path) -> None:
    hosts = REGISTRY_HOSTS.findall(path.read_text(encoding="utf-8"))
    assert not hosts, f"{doc_id(path)} names package registry hosts: {hosts}"
