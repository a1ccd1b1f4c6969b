"""Plumbing of bench/eck_side_by_side_bench.py: the two operators on one control plane.

* ``OperatorRun``: one operator process (ECK's ``elastic-operator`` or ``stackflow run``) in a
  network namespace of its own, as the parity tier isolates it (tests/parity/isolate.py), with
  the moment it started and the moment it was ready;
* ``readyz_in_netns``: Stackflow's ``/readyz``, polled from a thread that joined the operator's
  network namespace (its probe listener is on that namespace's loopback, which the host cannot
  dial);
* ``eck_ready_at``: the wall-clock time of ECK's ``Starting workers`` line for its Elasticsearch
  controller (its informers synced, its reconcilers running), read from its JSON log;
* ``/proc`` figures: CPU seconds and RSS of a process, the operator under the isolation wrapper,
  the Temporal dev server;
* pure table helpers: percentiles, rows, ratios.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import json
import math
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

CLONE_NEWNET = 0x40000000
POLL = 0.02


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from ``/proc``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_age(pid: int) -> float:
    """Seconds since process ``pid`` started (``/proc``'s start time, in clock ticks of 10 ms,
    against the boot clock)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    # After "pid (comm) ", field 22 (starttime) is the 20th.
    started = int(text[text.rindex(")") + 2 :].split()[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


def process_rss_mib(pid: int) -> float:
    """Resident set size of process ``pid`` in MiB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (of its main thread)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def temporal_pid(address: str) -> int | None:
    """The pid of this process's ``temporal`` child serving ``address`` (``host:port``); the
    SDK starts it from a thread of its own, so every process is looked at for its parent."""
    me, port = os.getpid(), address.rsplit(":", 1)[1].encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        listens = any(a == b"--port" and b == port for a, b in itertools.pairwise(arguments))
        if parent == me and listens:
            return int(entry.name)
    return None


def _join_netns(pid: int) -> None:
    """Move the calling thread (only it) into the network namespace of ``pid``."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns: {os.strerror(errno)}")
    finally:
        os.close(fd)


async def readyz_in_netns(pid: int, port: int, *, within: float) -> float | None:
    """``time.monotonic()`` of the first 200 of ``http://127.0.0.1:PORT/readyz`` inside the
    network namespace of ``pid``; None after ``within`` seconds. A thread of its own joins the
    namespace (setns moves one thread) and ends with the poll, so no pooled thread is left there."""
    found: list[float] = []
    deadline = time.monotonic() + within

    def poll() -> None:
        # unshare(1) switches namespace before it execs: wait until the process has its own.
        own = os.readlink("/proc/self/ns/net")
        while time.monotonic() < deadline:
            try:
                if os.readlink(f"/proc/{pid}/ns/net") != own:
                    break
            except OSError:
                return
            time.sleep(POLL)
        _join_netns(pid)
        url = f"http://127.0.0.1:{port}/readyz"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=1) as answer:
                    if answer.status == 200:
                        found.append(time.monotonic())
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(POLL)

    thread = threading.Thread(target=poll, name="readyz-netns", daemon=True)
    thread.start()
    await asyncio.to_thread(thread.join)
    return found[0] if found else None


def eck_ready_line(line: str) -> float | None:
    """The wall-clock time of ECK's log ``line`` if it is the Elasticsearch controller's
    ``Starting workers`` (pure)."""
    if "Starting workers" not in line or "elasticsearch-controller" not in line:
        return None
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if entry.get("controller") != "elasticsearch-controller":
        return None
    stamp = str(entry.get("@timestamp", "")).replace("Z", "+00:00")
    return datetime.fromisoformat(stamp).timestamp()


def _eck_ready_in(log: Path) -> float | None:
    """The time of the first ready line of ``log`` so far, or None."""
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        moment = eck_ready_line(line)
        if moment is not None:
            return moment
    return None


async def eck_ready_at(log: Path, *, within: float) -> float | None:
    """The wall-clock time ECK's Elasticsearch controller started its workers; None after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        moment = await asyncio.to_thread(_eck_ready_in, log)
        if moment is not None:
            return moment
        await asyncio.sleep(POLL)
    return None


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile, nearest rank on the sorted values (pure)."""
    ordered = sorted(values)
    rank = math.ceil(fraction * len(ordered))
    return ordered[min(len(ordered) - 1, max(0, rank - 1))]


@dataclass(frozen=True)
class Row:
    """One figure of the table: its name, unit, whether it is a latency, and its samples."""

    name: str
    unit: str
    latency: bool
    eck: Sequence[float]
    stackflow: Sequence[float]

    def ratio(self) -> float | None:
        """Stackflow's p50 over ECK's (None without both, or with ECK's at 0)."""
        if not self.eck or not self.stackflow:
            return None
        eck = percentile(self.eck, 0.5)
        return None if eck == 0 else percentile(self.stackflow, 0.5) / eck


def worst_latency_ratio(rows: Sequence[Row]) -> float | None:
    """The largest Stackflow/ECK p50 ratio over the latency rows (pure)."""
    ratios = [ratio for row in rows if row.latency and (ratio := row.ratio()) is not None]
    return max(ratios) if ratios else None


def cell(values: Sequence[float], digits: int) -> str:
    """``p50 / p99`` of ``values`` ("—" without any)."""
    if not values:
        return "—"
    return f"{percentile(values, 0.5):.{digits}f} / {percentile(values, 0.99):.{digits}f}"


def render(rows: Sequence[Row]) -> list[str]:
    """The table as Markdown lines (pure)."""
    lines = [
        "| figure | ECK p50 / p99 | Stackflow p50 / p99 | ratio Stackflow/ECK (p50) | samples ECK / Stackflow |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        digits = {"s": 2, "CPU s": 1}.get(row.unit, 0)
        ratio = row.ratio()
        lines.append(
            f"| {row.name} ({row.unit}) | {cell(row.eck, digits)} | {cell(row.stackflow, digits)} "
            f"| {'—' if ratio is None else f'{ratio:.2f}'} | {len(row.eck)} / {len(row.stackflow)} |"
        )
    return lines
