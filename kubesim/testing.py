"""``KubeSim``: a simulated cluster for tests, served on 127.0.0.1 on a free port in the running loop.

Usage::

    async with KubeSim() as sim:
        sim.write_kubeconfig(tmp_path / "kubeconfig")
        ...
        await sim.settle()
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from kubesim.server import KubeSimServer, ServerOptions
from kubesim.store import Store


def kubeconfig_document(server_url: str, *, namespace: str = "default") -> dict[str, Any]:
    """The minimal kubeconfig of §1.1, accepted by kubectl and kubernetes_asyncio."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubesim", "cluster": {"server": server_url}}],
        "contexts": [
            # Tools such as kopf read the context's user unconditionally.
            {
                "name": "kubesim",
                "context": {"cluster": "kubesim", "user": "kubesim", "namespace": namespace},
            }
        ],
        "current-context": "kubesim",
        # An empty user keeps older tools that insist on a users list happy.
        "users": [{"name": "kubesim", "user": {}}],
        "preferences": {},
    }


def write_kubeconfig(path: str | os.PathLike[str], server_url: str) -> Path:
    """Write the kubeconfig for ``server_url`` to ``path`` and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig_document(server_url)), encoding="utf-8")
    return target


class KubeSim:
    """An async context manager running a :class:`KubeSimServer` on ``127.0.0.1``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        controllers: bool = True,
        pod_ready_delay: float = 0.0,
        history_window: int = 1000,
        watch_timeout_seconds: float = 1800.0,
        bookmark_interval_seconds: float = 60.0,
        state_file: str | os.PathLike[str] | None = None,
        scheduler_extender: str | None = None,
    ) -> None:
        """Configure the simulated cluster; nothing runs until ``start()`` / ``async with``.

        ``scheduler_extender`` is the URL prefix of a kube-scheduler extender: the fake scheduler
        POSTs ``<URL>/filter`` for every pod it places and picks a node among those it keeps.
        """
        self.server = KubeSimServer(
            options=ServerOptions(
                controllers=controllers,
                pod_ready_delay=pod_ready_delay,
                history_window=history_window,
                watch_timeout_seconds=watch_timeout_seconds,
                bookmark_interval_seconds=bookmark_interval_seconds,
                scheduler_extender=scheduler_extender,
            )
        )
        self._bind_host = host
        self._bind_port = port
        self.state_file = Path(state_file) if state_file is not None else None
        self._runner: web.AppRunner | None = None
        self.host = host
        self.port = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def store(self) -> Store:
        """The object store (synchronous access for test set-up and assertions)."""
        return self.server.store

    async def start(self) -> None:
        """Load the state file (if any), bind the port and start serving."""
        if self.state_file is not None and self.state_file.exists():
            self.server.store.load(self.state_file)
        self._runner = web.AppRunner(self.server.app(), handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._bind_host, self._bind_port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.server.server_address = f"{self.host}:{self.port}"

    async def stop(self) -> None:
        """Stop serving (open watches end) and save the state file (if any)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.state_file is not None:
            self.server.store.save(self.state_file)

    async def settle(self) -> None:
        """Wait until the simulated controllers' queues are empty."""
        await self.server.settle()

    def write_kubeconfig(self, path: str | os.PathLike[str]) -> Path:
        """Write a kubeconfig pointing at this server."""
        return write_kubeconfig(path, self.url)

    async def __aenter__(self) -> KubeSim:
        """Start the server."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server."""
        await self.stop()
