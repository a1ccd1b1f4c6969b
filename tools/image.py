#!/usr/bin/env python3
"""Build Stackflow's container image (``make image``) and manage a private Docker engine.

Standard library only, so it runs before any venv exists.

``python3 tools/image.py build``
    Finds a Docker engine that answers (``DOCKER_HOST``, then /var/run/docker.sock, then the
    private one under .tools/docker); when none does and we are root, starts the private dockerd
    (vfs storage, no iptables, no bridge: every container uses the host network). Resolves the
    base image: ``BASE_IMAGE`` (default python:3.12-slim-bookworm) when present or pullable,
    else a local Debian bookworm base, ``stackflow-base:bookworm``, built once with debootstrap
    and ``docker import``. Builds ``stackflow:<version>`` (``stackflow.__version__``) and
    tags ``stackflow:latest``, unless the image's sources-digest label already matches. Prints
    the image reference on stdout; progress lines go to stderr.
``python3 tools/image.py engine``
    Prints the ``DOCKER_HOST`` of an answering engine (starting the private one if needed).
``python3 tools/image.py stop``
    Stops the private dockerd (``make docker-stop``).

pip inside the build gets the machine's CA bundle and index settings, read at run time, through
a throwaway build context that only the builder stage reads (never the final image, never the
repository). Any failure ends with one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKER_DIR = ROOT / ".tools" / "docker"
PRIVATE_SOCKET = DOCKER_DIR / "docker.sock"
PRIVATE_HOST = f"unix://{PRIVATE_SOCKET}"
SYSTEM_HOST = "unix:///var/run/docker.sock"
DOCKERD_PIDFILE = DOCKER_DIR / "dockerd.pid"
DOCKERD_LOG = DOCKER_DIR / "dockerd.log"

IMAGE_REPOSITORY = "stackflow"
DEFAULT_BASE_IMAGE = "python:3.12-slim-bookworm"
LOCAL_BASE_IMAGE = "stackflow-base:bookworm"
BASE_ROOTFS = DOCKER_DIR / "bookworm-rootfs"
#: Written once debootstrap finished, so an interrupted run is redone rather than imported.
BASE_ROOTFS_DONE = DOCKER_DIR / "bookworm-rootfs.done"
SOURCES_DIGEST_LABEL = "dev.stackflow.sources-digest"

#: What the Dockerfile copies: the top-level files and the package directories.
CONTEXT_FILES = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md")
CONTEXT_DIRS = (
    "stackflow",
    "workflows",
    "activities",
    "watchers",
    "kubesim",
    "controlplane",
    "deploy/compose",
)
SKIPPED_NAMES = frozenset({"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".egg-info")

#: pip options worth passing into the build (paths such as find-links do not exist in there).
PIP_OPTIONS = ("index-url", "extra-index-url", "trusted-host", "proxy", "timeout", "retries")
MACHINE_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class ImageError(Exception):
    """A failure worth one line to the user."""


def progress(message: str) -> None:
    """One progress line on stderr (stdout carries only the result)."""
    print(f"==> {message}", file=sys.stderr, flush=True)


def docker_cli() -> str:
    """The docker client on PATH."""
    found = shutil.which("docker")
    if found is None:
        raise ImageError("no docker client on PATH (install the Debian Docker engine package)")
    return found


def docker(
    host: str,
    *args: str,
    timeout: float | None = None,
    stdin: int | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one docker command against ``host``, capturing its output (never raising)."""
    return subprocess.run(
        [docker_cli(), "-H", host, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        env=env,
        check=False,
    )


def answers(host: str) -> bool:
    """Whether a Docker engine answers at ``host``."""
    try:
        return (
            docker(host, "version", "--format", "{{.Server.Version}}", timeout=15).returncode == 0
        )
    except subprocess.TimeoutExpired:
        return False


def find_engine(*, start_private: bool = True) -> str:
    """The ``DOCKER_HOST`` of an answering engine, starting the private one when allowed."""
    candidates = [os.environ.get("DOCKER_HOST", ""), SYSTEM_HOST, PRIVATE_HOST]
    for host in dict.fromkeys(candidate for candidate in candidates if candidate):
        if answers(host):
            return host
    if not start_private:
        raise ImageError("no Docker engine answers (DOCKER_HOST, /var/run/docker.sock)")
    if os.geteuid() != 0:
        raise ImageError(
            "no Docker engine answers (DOCKER_HOST, /var/run/docker.sock) and only root can "
            "start the private one"
        )
    start_private_dockerd()
    return PRIVATE_HOST


def start_private_dockerd(*, within: float = 120.0) -> None:
    """Start dockerd under .tools/docker and wait until it answers."""
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise ImageError("no dockerd on PATH (install the Debian Docker engine package)")
    DOCKER_DIR.mkdir(parents=True, exist_ok=True)
    progress(f"starting a private dockerd on {PRIVATE_HOST} (log: {DOCKERD_LOG})")
    command = [
        dockerd,
        # vfs works on any filesystem (overlay-on-overlay does not); it keeps full copies of
        # every layer, hence the pruning after each build.
        "--storage-driver=vfs",
        # Containers share the host's network (--network host): no bridge, no NAT rules.
        "--iptables=false",
        "--bridge=none",
        f"--data-root={DOCKER_DIR / 'data'}",
        f"--exec-root={DOCKER_DIR / 'exec'}",
        f"--pidfile={DOCKERD_PIDFILE}",
        f"--host={PRIVATE_HOST}",
    ]
    with DOCKERD_LOG.open("ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its own session: it outlives this script (and make) until `make docker-stop`.
            start_new_session=True,
        )
    deadline = time.monotonic() + within
    delay = 0.2
    while not answers(PRIVATE_HOST):
        if process.poll() is not None:
            raise ImageError(f"the private dockerd exited ({process.returncode}): {log_tail()}")
        if time.monotonic() > deadline:
            raise ImageError(f"the private dockerd did not answer within {within:g}s")
        time.sleep(delay)
        delay = min(delay * 1.5, 2.0)
    progress(f"private dockerd answers (pid {process.pid})")


def log_tail(path: Path = DOCKERD_LOG, lines: int = 1) -> str:
    """The last ``lines`` lines of a log, for a one-line error message."""
    with contextlib.suppress(OSError):
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    return "(no log)"


def stop_private_dockerd(*, within: float = 60.0) -> bool:
    """Stop the private dockerd (SIGTERM, SIGKILL after ``within``); False when none runs."""
    try:
        pid = int(DOCKERD_PIDFILE.read_text().strip())
    except (OSError, ValueError):
        return False
    if not _alive(pid):
        DOCKERD_PIDFILE.unlink(missing_ok=True)
        return False
    progress(f"stopping the private dockerd (pid {pid})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.2)
    DOCKERD_PIDFILE.unlink(missing_ok=True)
    release_mounts()
    return True


def release_mounts(root: Path = DOCKER_DIR) -> None:
    """Unmount what a stopped dockerd left mounted under ``root`` (the host network namespace is
    bind-mounted at ``exec/netns/default``), so that ``.tools`` can be removed."""
    with contextlib.suppress(OSError):
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m.startswith(f"{root}/")), reverse=True):
            subprocess.run(["umount", mount], capture_output=True, check=False)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] != "Z"


def package_version() -> str:
    """Stackflow's version: ``__version__`` in stackflow/__init__.py, which pyproject.toml reads,
    read from the source as setuptools reads it (no import: no venv is needed here)."""
    source = ROOT / "stackflow" / "__init__.py"
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__version__" for target in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise ImageError(f"{source.relative_to(ROOT)} sets no __version__")


def source_url() -> str:
    """The repository's origin URL, when it has one (the OCI source label)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        found = subprocess.run(
            ["git", "-C", str(ROOT), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
        if found.returncode == 0:
            return found.stdout.strip()
    return ""


def context_files() -> Iterator[Path]:
    """Every file of the build context, relative to the repository, in a stable order."""
    for name in CONTEXT_FILES:
        yield Path(name)
    for directory in CONTEXT_DIRS:
        for current, dirnames, filenames in os.walk(ROOT / directory):
            dirnames[:] = sorted(
                name
                for name in dirnames
                if name not in SKIPPED_NAMES and not name.endswith(SKIPPED_SUFFIXES)
            )
            for filename in sorted(filenames):
                if not filename.endswith(SKIPPED_SUFFIXES):
                    yield (Path(current) / filename).relative_to(ROOT)


def sources_digest(base_id: str, version: str) -> str:
    """A digest of everything the image is made from: sources, base image, version."""
    digest = hashlib.sha256(f"{base_id}\0{version}\0{source_url()}\0".encode())
    for path in context_files():
        digest.update(str(path).encode() + b"\0")
        digest.update(hashlib.sha256((ROOT / path).read_bytes()).digest())
    return digest.hexdigest()


def image_id(host: str, reference: str) -> str | None:
    """The local image id of ``reference``, None when absent."""
    found = docker(host, "image", "inspect", "--format", "{{.Id}}", reference, timeout=60)
    return found.stdout.strip() if found.returncode == 0 else None


def image_labels(host: str, reference: str) -> dict[str, str]:
    """The labels of a local image (empty when absent)."""
    found = docker(
        host, "image", "inspect", "--format", "{{json .Config.Labels}}", reference, timeout=60
    )
    if found.returncode != 0:
        return {}
    labels = json.loads(found.stdout or "null")
    return dict(labels or {})


def resolve_base(host: str) -> str:
    """The base image to build on: the requested one when it can be had, else the local one."""
    requested = os.environ.get("BASE_IMAGE") or DEFAULT_BASE_IMAGE
    if image_id(host, requested) is not None:
        return requested
    progress(f"pulling {requested}")
    try:
        pulled = docker(host, "pull", requested, timeout=300)
        why = log_line(pulled.stderr) or f"docker pull exited {pulled.returncode}"
        if pulled.returncode == 0:
            return requested
    except subprocess.TimeoutExpired:
        why = "docker pull timed out"
    if requested != DEFAULT_BASE_IMAGE:
        raise ImageError(f"the base image {requested} cannot be pulled: {why}")
    print(
        f"image: the default base {DEFAULT_BASE_IMAGE} cannot be pulled ({why}); "
        f"using the local Debian bookworm base {LOCAL_BASE_IMAGE}",
        file=sys.stderr,
        flush=True,
    )
    if image_id(host, LOCAL_BASE_IMAGE) is None:
        build_local_base(host)
    return LOCAL_BASE_IMAGE


def log_line(text: str) -> str:
    """The last non-empty line of a command's output."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def debian_mirror() -> str:
    """The Debian mirror of this machine's apt sources that serves bookworm."""
    sources = Path("/etc/apt/sources.list")
    paths = [sources] if sources.exists() else []
    paths += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    for path in paths:
        for line in path.read_text().splitlines():
            fields = line.split("#", 1)[0].split()
            # deb [options] URI suite components...
            fields = [field for field in fields if not field.startswith("[")]
            if len(fields) >= 3 and fields[0] == "deb" and fields[2] == "bookworm":
                return fields[1]
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in path.read_text().split("\n\n"):
            entry: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line:
                    continue
                key, value = line.split(":", 1)
                entry[key.strip().lower()] = value.strip()
            if (
                "deb" in entry.get("types", "").split()
                and "bookworm" in entry.get("suites", "").split()
            ):
                return entry.get("uris", "").split()[0]
    raise ImageError("no Debian bookworm mirror in /etc/apt/sources.list(.d)")


def build_local_base(host: str) -> None:
    """Build ``stackflow-base:bookworm`` (minbase + python3, python3-venv) and import it."""
    if os.geteuid() != 0:
        raise ImageError(f"building {LOCAL_BASE_IMAGE} with debootstrap needs root")
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ImageError("no debootstrap on PATH (apt-get install -y debootstrap)")
    if not BASE_ROOTFS_DONE.exists():
        mirror = debian_mirror()
        progress(f"debootstrap bookworm (minbase + python3, python3-venv) from {mirror}")
        shutil.rmtree(BASE_ROOTFS, ignore_errors=True)
        BASE_ROOTFS.mkdir(parents=True)
        log = DOCKER_DIR / "debootstrap.log"
        with log.open("wb") as output:
            done = subprocess.run(
                [
                    debootstrap,
                    "--variant=minbase",
                    "--include=python3,python3-venv",
                    "bookworm",
                    str(BASE_ROOTFS),
                    mirror,
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise ImageError(f"debootstrap failed ({done.returncode}): {log_tail(log)}")
        BASE_ROOTFS_DONE.touch()
    progress(f"importing the bookworm root filesystem as {LOCAL_BASE_IMAGE}")
    # Package caches, lists and documentation are dead weight in every image built on it.
    excluded = [
        "./var/cache/apt/archives/*.deb",
        "./var/cache/apt/*.bin",
        "./var/lib/apt/lists/*",
        "./usr/share/doc/*",
        "./usr/share/man/*",
        "./usr/share/info/*",
    ]
    tar = subprocess.Popen(
        [
            "tar",
            "-C",
            str(BASE_ROOTFS),
            *(f"--exclude={pattern}" for pattern in excluded),
            "-c",
            ".",
        ],
        stdout=subprocess.PIPE,
    )
    assert tar.stdout is not None
    try:
        imported = docker(
            host,
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["python3"]',
            "-",
            LOCAL_BASE_IMAGE,
            stdin=tar.stdout.fileno(),
            timeout=900,
        )
    finally:
        tar.stdout.close()
        tar.wait()
    if imported.returncode != 0 or tar.returncode != 0:
        raise ImageError(f"docker import of {LOCAL_BASE_IMAGE} failed: {log_line(imported.stderr)}")


def pip_settings() -> tuple[dict[str, str], Path | None]:
    """The machine's pip index settings and CA bundle (config files, then PIP_* variables)."""
    parser = configparser.ConfigParser(interpolation=None)
    files = [
        Path("/etc/xdg/pip/pip.conf"),
        Path("/etc/pip.conf"),
        Path.home() / ".pip" / "pip.conf",
        Path.home() / ".config" / "pip" / "pip.conf",
    ]
    if "PIP_CONFIG_FILE" in os.environ:
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    parser.read([str(path) for path in files if path.is_file()])
    settings: dict[str, str] = {}
    for section in ("global", "install"):
        if parser.has_section(section):
            settings.update(parser.items(section))
    for option in (*PIP_OPTIONS, "cert", "default-timeout"):
        variable = "PIP_" + option.upper().replace("-", "_")
        if variable in os.environ:
            settings[option] = os.environ[variable]
    if "default-timeout" in settings:
        settings.setdefault("timeout", settings["default-timeout"])
    bundle = Path(settings.get("cert", "")) if settings.get("cert") else MACHINE_CA_BUNDLE
    return (
        {key: value for key, value in settings.items() if key in PIP_OPTIONS},
        bundle if bundle.is_file() else None,
    )


@contextlib.contextmanager
def build_context() -> Iterator[Path]:
    """A throwaway copy of the sources plus build-config/ (pip.conf, CA bundle); removed after."""
    context = DOCKER_DIR / "context"
    shutil.rmtree(context, ignore_errors=True)
    try:
        for path in context_files():
            target = context / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, target)
        settings, bundle = pip_settings()
        config = context / "build-config"
        config.mkdir()
        lines = ["[global]", *(f"{key} = {value}" for key, value in settings.items())]
        (config / "pip.conf").write_text("\n".join(lines) + "\n")
        if bundle is not None:
            shutil.copyfile(bundle, config / "ca-certificates.crt")
        yield context
    finally:
        shutil.rmtree(context, ignore_errors=True)


def build(host: str) -> str:
    """Build (or find up to date) ``stackflow:<version>``, tag latest; returns the reference."""
    version = package_version()
    reference = f"{IMAGE_REPOSITORY}:{version}"
    base = resolve_base(host)
    base_id = image_id(host, base) or base
    digest = sources_digest(base_id, version)
    if image_labels(host, reference).get(SOURCES_DIGEST_LABEL) == digest:
        progress(f"{reference} is up to date (sources digest {digest[:12]})")
        _tag_latest(host, reference)
        return reference
    progress(f"building {reference} on {base} (sources digest {digest[:12]})")
    log_path = DOCKER_DIR / "build.log"
    # The classic builder: BuildKit needs the buildx plugin, which this client may lack.
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    started = time.monotonic()
    with build_context() as context, log_path.open("w") as log:
        command = [
            docker_cli(),
            "-H",
            host,
            "build",
            "--network=host",
            "--rm",
            "--force-rm",
            f"--build-arg=BASE_IMAGE={base}",
            f"--build-arg=VERSION={version}",
            f"--build-arg=SOURCE_URL={source_url()}",
            f"--label={SOURCES_DIGEST_LABEL}={digest}",
            f"--tag={reference}",
            str(context),
        ]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            if line.startswith("Step "):
                progress(line.strip()[:110])
        process.wait()
    if process.returncode != 0:
        raise ImageError(f"docker build failed: {log_tail(log_path)} (full log: {log_path})")
    progress(f"built {reference} in {time.monotonic() - started:.0f}s")
    _tag_latest(host, reference)
    prune_dangling(host)
    return reference


def _tag_latest(host: str, reference: str) -> None:
    """Point ``stackflow:latest`` at ``reference``."""
    tagged = docker(host, "tag", reference, f"{IMAGE_REPOSITORY}:latest", timeout=60)
    if tagged.returncode != 0:
        raise ImageError(f"docker tag failed: {log_line(tagged.stderr)}")


def prune_dangling(host: str) -> None:
    """Remove dangling images: vfs stores each layer in full, and the builder stage (the only
    place the pip settings were) is dangling once the build is done."""
    pruned = docker(host, "image", "prune", "--force", timeout=600)
    if pruned.returncode == 0:
        progress(f"pruned dangling images ({log_line(pruned.stdout) or 'none'})")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="tools/image.py", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("build", "engine", "stop"), nargs="?", default="build")
    args = parser.parse_args(argv)
    try:
        if args.action == "stop":
            if not stop_private_dockerd():
                progress("no private dockerd is running")
            return 0
        host = find_engine()
        if args.action == "engine":
            print(host)
            return 0
        progress(f"Docker engine: {host}")
        print(build(host))
        return 0
    except ImageError as error:
        print(f"image: {error}", file=sys.stderr)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"image: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("image: interrupted", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
