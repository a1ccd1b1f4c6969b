"""Helpers of the container tier: the docker CLI against the session's engine, free ports, and a
synchronous poll-until-deadline (``tests.polling.eventually`` is the async one)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def load_image_tool() -> ModuleType:
    """``tools/image.py`` as a module (tools/ is not a package)."""
    spec = importlib.util.spec_from_file_location("stackflow_image_tool", REPO / "tools/image.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (host networking: containers bind it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(
    predicate: Callable[[], bool], *, within: float, what: str, max_interval: float = 1.0
) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + within
    delay = 0.1
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {within:g}s")
        time.sleep(delay)
        delay = min(delay * 1.5, max_interval)


def http_ok(url: str) -> bool:
    """Whether GET ``url`` answers 2xx."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return 200 <= int(response.status) < 300
    except (OSError, urllib.error.URLError):
        return False


@dataclass
class Docker:
    """The docker CLI against one engine; remembers the containers it started to remove them."""

    host: str
    started: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        """An environment naming this engine (for docker-compose)."""
        return {**os.environ, "DOCKER_HOST": self.host}

    def run(
        self, *args: str, timeout: float = 300, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``docker <args>``; raises with its stderr when ``check`` and it fails."""
        done = subprocess.run(
            ["docker", "-H", self.host, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args[:3])} failed: {done.stderr.strip()}")
        return done

    def start(self, *args: str) -> str:
        """``docker run -d --network host <args>``; the container is removed by ``cleanup``."""
        container = self.run("run", "-d", "--network", "host", *args).stdout.strip()
        self.started.append(container)
        return container

    def inspect(self, reference: str) -> dict[str, Any]:
        """``docker inspect`` of one object."""
        found: list[dict[str, Any]] = json.loads(self.run("inspect", reference).stdout)
        return found[0]

    def logs(self, container: str) -> str:
        """Everything the container wrote (stdout and stderr)."""
        done = self.run("logs", container, check=False)
        return done.stdout + done.stderr

    def cleanup(self, containers: Sequence[str] | None = None) -> None:
        """Remove (forcibly) the containers this helper started."""
        for container in containers if containers is not None else list(self.started):
            self.run("rm", "--force", "--volumes", container, check=False, timeout=120)
            if container in self.started:
                self.started.remove(container)
