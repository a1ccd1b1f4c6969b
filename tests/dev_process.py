"""``stackflow dev`` as a subprocess in tests: start it, read its banner, follow it, stop it.

It binds 127.0.0.1 on free ports itself; its banner says where (kubesim or the API server, the
Temporal frontend and the Temporal UI).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

KUBECTL = str(Path(sys.executable).parent / "kubectl")
REPO = Path(__file__).resolve().parents[1]
#: The banner's last line: everything is up once it is printed.
READY_MARKER = "Press Ctrl-C"


async def read_until(stream: asyncio.StreamReader, marker: str, *, deadline: float) -> str:
    """Read lines until one contains ``marker``; everything read is returned."""
    seen: list[str] = []
    while True:
        line = await asyncio.wait_for(stream.readline(), timeout=deadline)
        if not line:
            raise AssertionError("stackflow dev exited early:\n" + "".join(seen))
        seen.append(line.decode())
        if marker in seen[-1]:
            return "".join(seen)


@dataclass
class DevProcess:
    """A started ``stackflow dev``: its process, state directory and banner."""

    proc: asyncio.subprocess.Process
    state_dir: Path
    banner: str
    #: Lines printed after the banner, once ``follow`` reads them.
    output: list[str] = field(default_factory=list)
    _follower: asyncio.Task[None] | None = None

    @property
    def temporal_address(self) -> str:
        """``host:port`` of the Temporal frontend, as the banner gives it."""
        return banner_field(self.banner, r"Temporal dev server on (\S+),")

    @property
    def ui_url(self) -> str:
        """The Temporal UI's URL, as the banner gives it."""
        return banner_field(self.banner, r"UI at (http://\S+)")

    def follow(self) -> None:
        """Keep reading the output after the banner (into ``output``), so the pipe never fills."""
        stream = self.proc.stdout
        assert stream is not None

        async def drain() -> None:
            while line := await stream.readline():
                self.output.append(line.decode())

        self._follower = asyncio.get_running_loop().create_task(drain())

    async def stop_following(self) -> None:
        """Stop reading the output (it ends by itself when the process exits)."""
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower


def banner_field(banner: str, pattern: str) -> str:
    """The first group of ``pattern`` in the banner; fails naming it when absent."""
    found = re.search(pattern, banner)
    assert found is not None, f"{pattern!r} not in the banner:\n{banner}"
    return found.group(1)


async def start_dev(state_dir: Path, *args: str, deadline: float) -> DevProcess:
    """Start ``stackflow dev --state-dir state_dir *args`` and read its banner (within
    ``deadline`` seconds a line); a process that prints no banner is killed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "stackflow.cli",
        "dev",
        "--state-dir",
        str(state_dir),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        banner = await read_until(proc.stdout, READY_MARKER, deadline=deadline)
    except BaseException:
        await stop_dev(DevProcess(proc, state_dir, ""), within=30)
        raise
    return DevProcess(proc, state_dir, banner)


@dataclass(frozen=True)
class Stopped:
    """How a ``stackflow dev`` ended."""

    #: Its exit status (negative: the signal that ended it, -9 when it had to be killed).
    returncode: int
    #: Command lines of processes on its state directory still running once it had exited (the
    #: Temporal server runs in a session of its own); they were killed.
    leftovers: list[str]


async def stop_dev(dev: DevProcess, *, sig: int = signal.SIGTERM, within: float = 30) -> Stopped:
    """Send ``sig`` and wait ``within`` seconds, then kill it; then kill anything it left on its
    state directory. The caller asserts on what is returned."""
    proc = dev.proc
    if proc.returncode is None:
        proc.send_signal(sig)
    try:
        await asyncio.wait_for(proc.wait(), timeout=within)
    except TimeoutError:
        proc.kill()
        await proc.wait()
    await dev.stop_following()
    leftovers = processes_mentioning(str(dev.state_dir))
    for pid, _ in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode is not None
    return Stopped(proc.returncode, [command for _, command in leftovers])


def processes_mentioning(marker: str) -> list[tuple[int, str]]:
    """Pids and command lines of running processes whose command line contains ``marker``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            found.append((int(cmdline.parent.name), command))
    return found


async def kubectl(kubeconfig: Path, cache: Path, *args: str) -> tuple[int, str]:
    """Run the real kubectl against the dev cluster."""
    proc = await asyncio.create_subprocess_exec(
        KUBECTL,
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(cache),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


async def _demo_field(kubeconfig: Path, cache: Path, namespace: str, jsonpath: str) -> str:
    """``jsonpath`` of the demo Elasticsearch in ``namespace``, read with kubectl."""
    rc, out = await kubectl(
        kubeconfig,
        cache,
        "get",
        "elasticsearch",
        "quickstart",
        "-n",
        namespace,
        "-o",
        f"jsonpath={jsonpath}",
    )
    assert rc == 0, out
    return out.strip()


async def demo_health(kubeconfig: Path, cache: Path, namespace: str) -> str:
    """``status.health`` of the demo Elasticsearch in ``namespace``, read with kubectl."""
    return await _demo_field(kubeconfig, cache, namespace, "{.status.health}")


async def demo_reconciled(kubeconfig: Path, cache: Path, namespace: str) -> bool:
    """Whether the demo Elasticsearch in ``namespace`` is as far as the simulated environment
    lets it go: every node its spec asks for available and its health ``unknown`` (the simulated
    Pods run no Elasticsearch, so nobody measured it; ``--elasticsearch real`` turns it green)."""
    out = await _demo_field(
        kubeconfig,
        cache,
        namespace,
        "{.spec.nodeSets[*].count};{.status.availableNodes};{.status.health}",
    )
    counts, available, health = [*out.split(";"), "", "", ""][:3]
    wanted = sum(int(count) for count in counts.split())
    return bool(available) and int(available) == wanted and health == "unknown"
