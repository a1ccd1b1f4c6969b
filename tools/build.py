"""Build the control-plane tools into ``.tools/bin`` from the pinned Go modules under ``tools/``.

Each directory of ``tools/`` is one Go module (their dependency versions clash, so they are not one
module). A module is rebuilt only when its pins change: the sha256 of its go.mod, go.sum and Go
sources is kept in ``.tools/stamps/<module>`` after a successful build. Standard library only, so it
runs before any virtualenv exists::

    python3 tools/build.py              # build what is missing or out of date
    python3 tools/build.py etcd helm    # only these modules
    python3 tools/build.py --force      # rebuild regardless of pins
    python3 tools/build.py eck          # ECK's operator: built only when named (`make eck`)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
#: An optional file in a module: extra linker flags (a version stamped into the binaries).
LDFLAGS = "ldflags"
#: An optional file in a module with one tool: the binary's name, where the tool's package path
#: ends in a generic element (ECK's operator is the package ``.../cmd``).
BINARY = "binary"
#: Modules built only when named: ECK's operator takes about 4 minutes to build, which the CI
#: budget (``make go-tools``) has no room for; ``make eck`` and ``make tools`` name it.
ON_REQUEST = frozenset({"eck"})


def modules(tools: Path) -> list[str]:
    """Every Go module under ``tools`` built by default (all but ``ON_REQUEST``)."""
    return sorted(
        path.parent.name for path in tools.glob("*/go.mod") if path.parent.name not in ON_REQUEST
    )


def fingerprint(module: Path) -> str:
    """What the build depends on: the pins and our own sources."""
    digest = hashlib.sha256()
    inputs = [
        module / "go.mod",
        module / "go.sum",
        module / LDFLAGS,
        module / BINARY,
        *module.glob("*.go"),
    ]
    for path in sorted(path for path in inputs if path.exists()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def describe(module: Path) -> tuple[list[str], list[str], str]:
    """The binaries a module makes (its ``tool`` lines, else the module's own main package), its
    direct requirements, read with ``go mod edit -json``, and the ``go build`` target."""
    edit = subprocess.run(
        ["go", "mod", "edit", "-json"], cwd=module, check=True, capture_output=True, text=True
    )
    parsed = json.loads(edit.stdout)
    tools = [entry["Path"] for entry in parsed.get("Tool") or []]
    binaries = [path.rsplit("/", 1)[-1] for path in tools] or [module.name]
    if (module / BINARY).exists() and len(binaries) == 1:
        binaries = [(module / BINARY).read_text().strip()]
    # The module each tool comes from (go mod tidy marks those indirect), or the direct ones.
    pins = [
        f"{entry['Path']}@{entry['Version']}"
        for entry in parsed.get("Require") or []
        if (
            any(tool == entry["Path"] or tool.startswith(entry["Path"] + "/") for tool in tools)
            if tools
            else not entry.get("Indirect")
        )
    ]
    # `tool` builds every tool line of the module; a module without one is itself a main package.
    return binaries, pins, "tool" if tools else "."


@dataclass(frozen=True)
class Places:
    """Where the modules are and where their binaries, stamps and logs go."""

    tools: Path = TOOLS
    out: Path = ROOT / ".tools"

    @property
    def bin(self) -> Path:
        """The built binaries."""
        return self.out / "bin"

    @property
    def stamps(self) -> Path:
        """One fingerprint per module built."""
        return self.out / "stamps"

    @property
    def logs(self) -> Path:
        """One build log per module."""
        return self.out / "logs"


def build(name: str, index: int, total: int, *, places: Places, force: bool) -> bool:
    """Build one module if it is out of date; False (with the reason printed) when it fails."""
    module = places.tools / name
    binaries, pins, target = describe(module)
    stamp = places.stamps / name
    wanted = fingerprint(module)
    built = all((places.bin / binary).exists() for binary in binaries)
    prefix = f"[{index}/{total}] {name}:"
    if not force and built and stamp.exists() and stamp.read_text().strip() == wanted:
        print(f"{prefix} up to date ({' '.join(binaries)})", flush=True)
        return True
    versions = " ".join(pins) or "no requirements"
    log = places.logs / f"{name}.log"
    print(f"{prefix} building {' '.join(binaries)} from {versions} (log: {log})", flush=True)
    began = time.monotonic()
    extra = (module / LDFLAGS).read_text().split() if (module / LDFLAGS).exists() else []
    flags = " ".join(["-s", "-w", *extra])
    # One binary is written under its own name; several go into the directory, named by Go.
    output = f"{places.bin}/{binaries[0]}" if (module / BINARY).exists() else f"{places.bin}/"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["go", "build", "-trimpath", f"-ldflags={flags}", "-o", output, target],
            cwd=module,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        while process.poll() is None:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"{prefix} still building ({time.monotonic() - began:.0f} s)", flush=True)
    if process.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-30:]
        print(
            f"tools: building module {module} ({versions}) failed; the end of its log:",
            file=sys.stderr,
        )
        print("\n".join(tail), file=sys.stderr)
        print(
            f"tools: retry with: python3 tools/build.py {name}   (--force rebuilds regardless of pins)",
            file=sys.stderr,
        )
        return False
    stamp.write_text(wanted + "\n")
    print(f"{prefix} built in {time.monotonic() - began:.0f} s", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    """Build the requested modules (all by default); exit 1 at the first failure."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("modules", nargs="*", help="modules under tools/ (default: all)")
    parser.add_argument(
        "--force", action="store_true", help="rebuild even when the pins are unchanged"
    )
    parser.add_argument(
        "--tools-dir", type=Path, default=TOOLS, help="where the modules are (tools/)"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / ".tools", help="bin/, stamps/, logs/ (.tools)"
    )
    args = parser.parse_args(argv)
    places = Places(tools=args.tools_dir, out=args.out)
    wanted = args.modules or modules(places.tools)
    if shutil.which("go") is None:
        print(
            f"tools: skipping {', '.join(wanted)}: go is not installed (the apiserver and parity"
            " tiers need Go 1.26 and the Go module proxy)",
            file=sys.stderr,
        )
        return 2
    unknown = [name for name in wanted if not (places.tools / name / "go.mod").exists()]
    if unknown:
        have = ", ".join(sorted(path.parent.name for path in places.tools.glob("*/go.mod")))
        print(
            f"tools: no module {', '.join(unknown)} under {places.tools} (have: {have})",
            file=sys.stderr,
        )
        return 2
    for directory in (places.bin, places.stamps, places.logs):
        directory.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    for index, name in enumerate(wanted, start=1):
        if not build(name, index, len(wanted), places=places, force=args.force):
            return 1
    print(
        f"tools: {len(wanted)} module(s) ready in {places.bin} ({time.monotonic() - began:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
