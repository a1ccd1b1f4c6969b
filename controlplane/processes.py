"""The control plane's processes: each in its own session with its log in a file, and stopped for
certain, so that a failed start never leaves one behind."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

#: prctl(2) option: the signal a process gets when the thread that started it ends.
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: be killed when the launcher dies, even by SIGKILL (its stop
    never runs then), so no component outlives the test run or ``stackflow dev`` that made it."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (a start that loses the race is retried)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Component:
    """One control-plane binary run as a child process."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        """Configure; nothing runs until ``start``."""
        self.name = name
        self.argv = argv
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it in a session of its own (its children go with it at ``stop``)."""
        # The death signal follows the starting *thread*: only the main thread lives as long as
        # the launcher's process, so only a start from it asks for one.
        main_thread = threading.current_thread() is threading.main_thread()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent if main_thread else None,
            )

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self.process.pid if self.process is not None else None

    def exited(self) -> int | None:
        """Its exit status, or None while it runs (or before it started)."""
        return self.process.poll() if self.process is not None else None

    def tail(self, lines: int = 25) -> str:
        """The end of its log, for error messages."""
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM its session, SIGKILL what is left after ``grace`` seconds, and reap it."""
        process, self.process = self.process, None
        if process is None:
            return
        for signum, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)
            try:
                process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # The session may still hold a child after the leader exited.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
