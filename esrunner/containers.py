"""A container as a host process: a private mount namespace in which the image and every volume
are mounted at the paths the Pod names, then the command runs as the node's own user
(Elasticsearch refuses to run as root).

The image is the distribution under a writable layer of the container's own (an overlay, as a
container runtime gives each container), so mount points inside it (``config/http-certs``, …)
are made in that layer, never in the shared distribution. With ``readOnlyRootFilesystem`` the
image and the host's root filesystem are then made read-only in the container's namespace: only
its volumes (and the host's other mounts: ``/proc``, ``/sys``, ``/dev``) stay writable."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The user and group the containers run as: the Elasticsearch image's ``elasticsearch`` user.
NODE_UID = 1000
NODE_GID = 1000
#: A host PATH for the container's shell tools (the image's own tools come from the distribution).
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Bind:
    """A host directory (or file) bound at ``target`` inside the container."""

    source: Path
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class Image:
    """The image's directory: ``lower`` (the distribution, never written) under the container's
    writable layer ``upper`` (``work`` is overlayfs' own scratch, on the same filesystem)."""

    lower: Path
    upper: Path
    work: Path
    target: str


def unavailable_reason() -> str | None:
    """Why containers cannot run on this machine (None when they can)."""
    if os.geteuid() != 0:
        return "the Elasticsearch runner needs root: each Pod gets a private mount namespace"
    for tool in ("unshare", "setpriv", "mount"):
        if not any(Path(d, tool).exists() for d in HOST_PATH.split(":")):
            return f"the Elasticsearch runner needs util-linux's {tool}"
    return None


def _inside(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") or "/"
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def bind_order(binds: Sequence[Bind]) -> list[Bind]:
    """The order to bind in: parents before children, except that a bind hiding the source of
    another (``tmp-volume`` at ``/tmp``, while the runner's files are under ``/tmp``) comes after
    the binds it would hide."""
    sources = [str(bind.source) for bind in binds]

    def hides_a_source(bind: Bind) -> bool:
        return any(_inside(source, bind.target) for source in sources if source != str(bind.source))

    return sorted(
        binds,
        key=lambda bind: (hides_a_source(bind), bind.target.count("/"), bind.target),
    )


def launcher_script(
    binds: Sequence[Bind],
    *,
    uid: int,
    gid: int,
    workdir: str,
    hostname: str = "",
    image: Image | None = None,
    read_only_root: bool = False,
) -> str:
    """The shell run inside the new mount and UTS namespaces: the Pod's hostname, the image,
    every bind (parents before children), the read-only ones made read-only, the root filesystem
    and the image too with ``read_only_root``, then the node's user execs the command."""
    lines = ["set -eu", "mount --make-rprivate /"]
    if hostname:
        lines.append(f"hostname {shlex.quote(hostname)}")
    if image is not None:
        lower, upper, work = (shlex.quote(str(p)) for p in (image.lower, image.upper, image.work))
        target = shlex.quote(image.target)
        options = shlex.quote(f"lowerdir={image.lower},upperdir={image.upper},workdir={image.work}")
        lines.append(f"mkdir -p {upper} {work} {target}")
        # The layer's top directory gives the image's its owner and mode (overlayfs takes them
        # from the upper layer), so the image's user may write there as in the image.
        lines.append(f"chown --reference={lower} {upper} && chmod --reference={lower} {upper}")
        # Without overlayfs (a filesystem that cannot hold its upper layer), the distribution
        # is bound directly: mount points inside it are then made in the distribution itself.
        lines.append(
            f"mount -t overlay overlay -o {options} {target} 2>/dev/null"
            f" || mount --bind {lower} {target}"
        )
    ordered = bind_order(binds)
    for bind in ordered:
        target = shlex.quote(bind.target)
        source = shlex.quote(str(bind.source))
        if bind.source.is_dir():
            lines.append(f"mkdir -p {target}")
        else:
            lines.append(f"mkdir -p $(dirname {target}) && touch {target}")
        lines.append(f"mount --bind {source} {target}")
    for bind in reversed(ordered):
        if bind.read_only:
            lines.append(f"mount -o remount,bind,ro {shlex.quote(bind.target)}")
    if read_only_root:
        # Per mount point and in this namespace only: the host keeps its root writable, and the
        # volumes bound above keep their own flags.
        lines.append("mount -o remount,bind,ro /")
        if image is not None:
            lines.append(f"mount -o remount,bind,ro {shlex.quote(image.target)}")
    lines.append(f"cd {shlex.quote(workdir)}")
    # The node dies with the runner (a killed test, a crashed runner), never left listening on a
    # Pod IP another run would be given; set after the user change, which would clear it.
    lines.append(
        f'exec setpriv --reuid={uid} --regid={gid} --clear-groups --pdeathsig KILL -- "$@"'
    )
    return "\n".join(lines) + "\n"


async def start(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    binds: Sequence[Bind],
    log: Path,
    workdir: str = "/",
    uid: int = NODE_UID,
    gid: int = NODE_GID,
    hostname: str = "",
    image: Image | None = None,
    read_only_root: bool = False,
) -> asyncio.subprocess.Process:
    """Start ``command`` in its own mount and UTS namespaces and session, named ``hostname`` (a
    Pod's name, as in Kubernetes), its output appended to ``log``."""
    script = launcher_script(
        binds,
        uid=uid,
        gid=gid,
        workdir=workdir,
        hostname=hostname,
        image=image,
        read_only_root=read_only_root,
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "--",
            "bash",
            "-c",
            script,
            "container",
            *command,
            env={"PATH": HOST_PATH, **env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )


async def stop(process: asyncio.subprocess.Process, *, grace_seconds: float) -> int:
    """SIGTERM, then SIGKILL to the whole process group once ``grace_seconds`` have passed."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout=max(grace_seconds, 0.1))
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    # Children left in the group (a launcher's server process) go with it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.returncode if process.returncode is not None else -1


async def run_to_end(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    binds: Sequence[Bind],
    log: Path,
    limit_seconds: float,
    workdir: str = "/",
    hostname: str = "",
    image: Image | None = None,
    read_only_root: bool = False,
) -> int:
    """Run a command to completion (an init container, a hook); its exit code, or -1 when it outlives ``limit_seconds``."""
    process = await start(
        command,
        env=env,
        binds=binds,
        log=log,
        workdir=workdir,
        hostname=hostname,
        image=image,
        read_only_root=read_only_root,
    )
    try:
        return await asyncio.wait_for(process.wait(), timeout=limit_seconds)
    except TimeoutError:
        await stop(process, grace_seconds=0)
        return -1
