"""A container as a host process: a private mount namespace in which the image and every volume
are bind-mounted at the paths the Pod names, then the command runs as the node's own user
(Elasticsearch refuses to run as root)."""

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


def unavailable_reason() -> str | None:
    """Why containers cannot run on this machine (None when they can)."""
    if os.geteuid() != 0:
        return "the Elasticsearch runner needs root: each Pod gets a private mount namespace"
    for tool in ("unshare", "setpriv", "mount"):
        if not any(Path(d, tool).exists() for d in HOST_PATH.split(":")):
            return f"the Elasticsearch runner needs util-linux's {tool}"
    return None


def launcher_script(
    binds: Sequence[Bind], *, uid: int, gid: int, workdir: str, hostname: str = ""
) -> str:
    """The shell run inside the new mount and UTS namespaces: the Pod's hostname, every bind,
    parents before children, the read-only ones made read-only, then the node's user execs the
    command."""
    lines = ["set -eu", "mount --make-rprivate /"]
    if hostname:
        lines.append(f"hostname {shlex.quote(hostname)}")
    ordered = sorted(binds, key=lambda bind: (bind.target.count("/"), bind.target))
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
) -> asyncio.subprocess.Process:
    """Start ``command`` in its own mount and UTS namespaces and session, named ``hostname`` (a
    Pod's name, as in Kubernetes), its output appended to ``log``."""
    script = launcher_script(binds, uid=uid, gid=gid, workdir=workdir, hostname=hostname)
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
) -> int:
    """Run a command to completion (an init container, a hook); its exit code, or -1 when it outlives ``limit_seconds``."""
    process = await start(
        command, env=env, binds=binds, log=log, workdir=workdir, hostname=hostname
    )
    try:
        return await asyncio.wait_for(process.wait(), timeout=limit_seconds)
    except TimeoutError:
        await stop(process, grace_seconds=0)
        return -1
