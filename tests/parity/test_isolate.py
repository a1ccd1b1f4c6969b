"""The isolation wrapper of the parity tier and of the side-by-side bench: what it runs never
outlives it (root and unshare needed; skipped with the reason otherwise)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.parity.isolate import isolated_argv, isolation_unavailable
from tests.polling import eventually

pytestmark = pytest.mark.skipif(
    isolation_unavailable() is not None, reason=isolation_unavailable() or ""
)

#: A command that records its pid, then waits for a signal.
WAITER = "import os, signal, sys; open(sys.argv[1], 'w').write(str(os.getpid())); signal.pause()"


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_the_command_is_terminated_when_the_wrapper_dies(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    argv = isolated_argv(tmp_path, [], [sys.executable, "-c", WAITER, str(pid_file)])
    wrapper = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL)
    child = 0
    try:
        await eventually(lambda: pid_file.exists() and pid_file.read_text() != "", what="pid file")
        child = int(pid_file.read_text())
        assert alive(child)
        wrapper.kill()
        await wrapper.wait()
        await eventually(lambda: not alive(child), what="the command ended")
    finally:
        if wrapper.returncode is None:
            wrapper.kill()
            await wrapper.wait()
        if child and alive(child):
            os.kill(child, signal.SIGKILL)
