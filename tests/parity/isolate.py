"""An operator of the parity tier runs in a network namespace of its own, where only loopback exists.

Neither operator can reach the Elasticsearch it manages here (its Pods are kwok's), and both would
otherwise resolve the Pods' DNS names through the host's resolver, a non-loopback address no test
may dial. So each runs under ``unshare --net``: its loopback carries the few ports it needs (the
API server, Temporal) to the host's, through one Unix socket per port in a directory both sides
see; every other address is unreachable at once.

Inside: ``python -m tests.parity.isolate --relay DIR PORT... -- COMMAND...`` brings ``lo`` up,
listens on each 127.0.0.1:PORT, relays each connection to ``DIR/PORT.sock``, and runs ``COMMAND``
(signals passed on, its exit status returned; should the wrapper die first, the command gets
SIGTERM, so that no operator outlives its run). Outside: :func:`host_relays` serves those sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path


def isolation_unavailable() -> str | None:
    """Why an operator cannot be put in a network namespace here, or None when it can."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "parity tier skipped: unshare and ip (util-linux, iproute2) are needed to isolate the operators"
    probe = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "parity tier skipped: unshare --net is not permitted here (root is needed)"
    return None


def isolated_argv(directory: Path, ports: Sequence[int], command: Sequence[str]) -> list[str]:
    """The command line that runs ``command`` in a new network namespace with ``ports`` relayed."""
    return [
        "unshare",
        "--net",
        sys.executable,
        "-m",
        "tests.parity.isolate",
        "--relay",
        str(directory),
        *(str(port) for port in ports),
        "--",
        *command,
    ]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until its end, then close the other side's writing half."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _splice(
    client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """Relay both directions of one connection."""
    await asyncio.gather(_pipe(client[0], server[1]), _pipe(server[0], client[1]))


@contextlib.asynccontextmanager
async def host_relays(directory: Path, ports: Sequence[int]) -> AsyncIterator[None]:
    """Serve ``directory/PORT.sock`` for each port: a connection is relayed to 127.0.0.1:PORT."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    servers = []

    def handler(port: int):  # type: ignore[no-untyped-def]
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                upstream = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                writer.close()
                return
            await _splice((reader, writer), upstream)

        return handle

    for port in ports:
        servers.append(
            await asyncio.start_unix_server(handler(port), path=str(directory / f"{port}.sock"))
        )
    try:
        yield
    finally:
        for server in servers:
            server.close()


#: prctl(2)'s option that sends the calling process a signal when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _terminate_with_parent() -> None:
    """In the child before its exec: SIGTERM when the wrapper dies, however it dies."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


async def _inside(directory: Path, ports: Sequence[int], command: Sequence[str]) -> int:
    """Inside the namespace: loopback up, relays listening, ``command`` run to its end."""
    up = await asyncio.create_subprocess_exec("ip", "link", "set", "lo", "up")
    if await up.wait() != 0:
        raise SystemExit("isolate: could not bring lo up")

    def handler(port: int):  # type: ignore[no-untyped-def]
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                upstream = await asyncio.open_unix_connection(str(directory / f"{port}.sock"))
            except OSError:
                writer.close()
                return
            await _splice((reader, writer), upstream)

        return handle

    for port in ports:
        await asyncio.start_server(handler(port), host="127.0.0.1", port=port)
    # The wrapper is single-threaded here, where a preexec_fn is safe.
    process = await asyncio.create_subprocess_exec(*command, preexec_fn=_terminate_with_parent)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, process.send_signal, signum)
    return await process.wait()


def main(argv: Sequence[str]) -> int:
    """``--relay DIR PORT... -- COMMAND...``"""
    split = list(argv).index("--")
    head, command = list(argv)[:split], list(argv)[split + 1 :]
    if len(head) < 2 or head[0] != "--relay" or not command:
        print("usage: isolate --relay DIR PORT... -- COMMAND...", file=sys.stderr)
        return 2
    return asyncio.run(_inside(Path(head[1]), [int(port) for port in head[2:]], command))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
