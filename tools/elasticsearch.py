"""Fetch the pinned Elasticsearch distributions into ``.tools/elasticsearch/<version>`` with mvn.

The versions are pinned in ``tools/elasticsearch/versions.txt``. For each one, Maven's ordinary client
fetches the minimal distribution (``org.elasticsearch.distribution.integ-test-zip:elasticsearch:<v>:zip``,
no bundled JDK) into the local Maven repository, unless it is there already, and its one top directory
is unpacked into ``.tools/elasticsearch/<version>`` with the files' modes (``bin/elasticsearch`` stays
executable), plus empty ``data`` and ``logs`` directories. A ``.stamp`` file written last says the
version is complete and from what; a version is redone only when that stamp is missing or differs
(its pin changed), and unpacked versions no longer pinned are removed. Standard library only, so it
runs before any virtualenv exists::

    python3 tools/elasticsearch.py             # fetch and unpack what is missing or out of date
    python3 tools/elasticsearch.py 9.1.0       # only these pinned versions
    python3 tools/elasticsearch.py --force     # unpack again regardless of the stamps
"""

from __future__ import annotations

import argparse
import re
import shutil
import stat
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
VERSIONS = ROOT / "tools" / "elasticsearch" / "versions.txt"
GROUP = "org.elasticsearch.distribution.integ-test-zip"
ARTIFACT = "elasticsearch"
#: Written last into each unpacked version: it is complete, and from which artifact.
STAMP = ".stamp"
#: Part of every stamp; bumped when the unpacking changes, so every version is unpacked again.
LAYOUT = "1"
VERSION = re.compile(r"\d+\.\d+\.\d+")
#: The directories the distribution lacks that a node writes to.
WRITABLE = ("data", "logs")


class UnpackError(Exception):
    """An archive that is not one Elasticsearch distribution."""


def read_versions(path: Path) -> list[str]:
    """The pinned versions, in file order: one ``major.minor.patch`` a line, ``#`` comments."""
    versions: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        version = line.split("#", 1)[0].strip()
        if not version:
            continue
        if not VERSION.fullmatch(version):
            raise ValueError(f"{path}:{number}: {version!r} is not a version like 8.17.0")
        if version in versions:
            raise ValueError(f"{path}:{number}: {version} is pinned twice")
        versions.append(version)
    return versions


def coordinates(version: str) -> str:
    """The Maven artifact of a version's distribution."""
    return f"{GROUP}:{ARTIFACT}:{version}:zip"


def fingerprint(version: str) -> str:
    """What an unpacked version's stamp holds."""
    return f"{coordinates(version)} layout={LAYOUT}"


def maven_zip(repository: Path, version: str) -> Path:
    """Where mvn puts a version's zip in the local repository."""
    return repository.joinpath(*GROUP.split("."), ARTIFACT, version, f"{ARTIFACT}-{version}.zip")


def up_to_date(home: Path, version: str) -> bool:
    """Whether ``home`` holds the whole distribution of ``version`` as it is pinned now."""
    stamp = home / STAMP
    return (
        stamp.is_file()
        and stamp.read_text().strip() == fingerprint(version)
        and (home / "bin" / "elasticsearch").is_file()
    )


def unpack(archive: Path, destination: Path) -> None:
    """Unpack the contents of the archive's one top directory into ``destination``, restoring the
    modes kept in each entry's external attributes (``zipfile`` alone drops them)."""
    with zipfile.ZipFile(archive) as zipped:
        entries = zipped.infolist()
        tops = {entry.filename.split("/", 1)[0] for entry in entries}
        if len(tops) != 1:
            raise UnpackError(f"{archive} holds {len(tops)} top-level entries, not one directory")
        prefix = tops.pop() + "/"
        directories: list[tuple[Path, int]] = []
        for entry in entries:
            if not entry.filename.startswith(prefix):
                raise UnpackError(f"{archive}: its top-level entry {entry.filename} is a file")
            relative = PurePosixPath(entry.filename[len(prefix) :])
            if relative.is_absolute() or ".." in relative.parts:
                raise UnpackError(f"{archive}: {entry.filename} points outside the archive")
            if not relative.parts:
                continue
            target = destination.joinpath(*relative.parts)
            # Unix modes are kept in the high 16 bits; an archive made elsewhere has none.
            mode = entry.external_attr >> 16
            if entry.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                directories.append((target, mode))
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(mode):
                target.symlink_to(zipped.read(entry).decode())
                continue
            with zipped.open(entry) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            # Readable by everyone: the runner's nodes run as their own user, not as the one
            # who fetched the distribution (the archive keeps config/ at 0660).
            target.chmod((mode & 0o777 or 0o644) | 0o444)
        # Directories last, in case one is read-only.
        for directory, mode in reversed(directories):
            directory.chmod((mode & 0o777 or 0o755) | 0o555 | stat.S_IWUSR)


def install(archive: Path, root: Path, version: str) -> Path:
    """Unpack ``archive`` as ``root/version``: into a partial directory first, its stamp written
    last, then renamed into place, so a version directory is always complete."""
    partial = root / f".{version}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    try:
        unpack(archive, partial)
        if not (partial / "bin" / "elasticsearch").is_file():
            raise UnpackError(
                f"{archive} has no bin/elasticsearch: not an Elasticsearch distribution"
            )
        for name in WRITABLE:
            (partial / name).mkdir(exist_ok=True)
        (partial / STAMP).write_text(fingerprint(version) + "\n")
        home = root / version
        if home.exists():
            shutil.rmtree(home)
        partial.rename(home)
        return home
    finally:
        if partial.exists():
            shutil.rmtree(partial)


def prune(root: Path, pinned: list[str]) -> list[str]:
    """Remove the unpacked versions no longer pinned and any partial unpacking; the removed ones."""
    removed: list[str] = []
    if not root.is_dir():
        return removed
    for child in sorted(root.iterdir()):
        if child.name.startswith(".") and child.name.endswith(".partial"):
            shutil.rmtree(child)
        elif (
            VERSION.fullmatch(child.name) and child.name not in pinned and (child / STAMP).exists()
        ):
            shutil.rmtree(child)
            removed.append(child.name)
    return removed


@dataclass(frozen=True)
class Places:
    """Where the pins are, where the distributions, logs and local Maven repository are."""

    versions: Path = VERSIONS
    out: Path = ROOT / ".tools"
    repository: Path = Path.home() / ".m2" / "repository"

    @property
    def root(self) -> Path:
        """One directory per unpacked version."""
        return self.out / "elasticsearch"

    @property
    def logs(self) -> Path:
        """One mvn log per version fetched."""
        return self.out / "logs"


def fetch(version: str, prefix: str, *, places: Places) -> bool:
    """Fetch one version's zip with mvn; False (with the reason printed) when it fails."""
    log = places.logs / f"elasticsearch-{version}.log"
    print(f"{prefix} fetching {coordinates(version)} with mvn (log: {log})", flush=True)
    began = time.monotonic()
    command = [
        "mvn",
        "--batch-mode",
        "--quiet",
        "-Dstyle.color=never",
        "dependency:get",
        f"-Dartifact={coordinates(version)}",
        "-Dtransitive=false",
        f"-Dmaven.repo.local={places.repository}",
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        while process.poll() is None:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"{prefix} still fetching ({time.monotonic() - began:.0f} s)", flush=True)
    archive = maven_zip(places.repository, version)
    if process.returncode == 0 and archive.is_file():
        print(f"{prefix} fetched in {time.monotonic() - began:.0f} s", flush=True)
        return True
    why = (
        f"mvn exited with {process.returncode}"
        if process.returncode != 0
        else f"mvn succeeded but {archive} is not there"
    )
    tail = log.read_text(errors="replace").splitlines()[-30:]
    print(
        f"elasticsearch: fetching Elasticsearch {version} ({coordinates(version)}) failed: {why}; "
        "the end of its log:",
        file=sys.stderr,
    )
    print("\n".join(tail), file=sys.stderr)
    print(f"elasticsearch: retry with: python3 tools/elasticsearch.py {version}", file=sys.stderr)
    return False


def prepare(version: str, index: int, total: int, *, places: Places, force: bool) -> bool:
    """Fetch and unpack one version if it is out of date; False (reason printed) when it fails."""
    home = places.root / version
    prefix = f"[{index}/{total}] elasticsearch {version}:"
    if not force and up_to_date(home, version):
        print(f"{prefix} up to date ({home})", flush=True)
        return True
    archive = maven_zip(places.repository, version)
    if not archive.is_file() and not fetch(version, prefix, places=places):
        return False
    began = time.monotonic()
    try:
        install(archive, places.root, version)
    except (OSError, zipfile.BadZipFile, UnpackError) as error:
        print(
            f"elasticsearch: unpacking Elasticsearch {version} from {archive} failed: {error} "
            f"(delete it to have mvn fetch it again)",
            file=sys.stderr,
        )
        return False
    print(f"{prefix} unpacked into {home} in {time.monotonic() - began:.0f} s", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    """Prepare the requested versions (all pinned by default); exit 1 when any failed, 2 when
    nothing could start (no mvn, a bad pin file, a version not pinned)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("versions", nargs="*", help="pinned versions (default: all)")
    parser.add_argument(
        "--force", action="store_true", help="unpack again even when the stamps are current"
    )
    parser.add_argument(
        "--versions-file", type=Path, default=VERSIONS, help="the pins (tools/elasticsearch/...)"
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / ".tools", help="elasticsearch/, logs/ (.tools)"
    )
    parser.add_argument(
        "--maven-repo",
        type=Path,
        default=Path.home() / ".m2" / "repository",
        help="the local Maven repository mvn fetches into (~/.m2/repository)",
    )
    args = parser.parse_args(argv)
    places = Places(versions=args.versions_file, out=args.out, repository=args.maven_repo)
    try:
        pinned = read_versions(places.versions)
    except (OSError, ValueError) as error:
        print(f"elasticsearch: cannot read the pinned versions: {error}", file=sys.stderr)
        return 2
    unknown = [version for version in args.versions if version not in pinned]
    if unknown:
        print(
            f"elasticsearch: {', '.join(unknown)} not pinned in {places.versions} "
            f"(pinned: {', '.join(pinned) or 'none'})",
            file=sys.stderr,
        )
        return 2
    wanted = args.versions or pinned
    to_fetch = [
        version
        for version in wanted
        if (args.force or not up_to_date(places.root / version, version))
        and not maven_zip(places.repository, version).is_file()
    ]
    if to_fetch and shutil.which("mvn") is None:
        print(
            f"elasticsearch: mvn is not installed; Maven fetches the Elasticsearch distributions "
            f"({', '.join(to_fetch)}), without them the tests that run Elasticsearch are skipped",
            file=sys.stderr,
        )
        return 2
    for directory in (places.root, places.logs):
        directory.mkdir(parents=True, exist_ok=True)
    if not args.versions:
        for version in prune(places.root, pinned):
            print(f"elasticsearch {version}: removed (no longer pinned)", flush=True)
    began = time.monotonic()
    failed = [
        version
        for index, version in enumerate(wanted, start=1)
        if not prepare(version, index, len(wanted), places=places, force=args.force)
    ]
    if failed:
        print(f"elasticsearch: not ready: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(
        f"elasticsearch: {len(wanted)} distribution(s) ready in {places.root} "
        f"({time.monotonic() - began:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
