"""What the resource endpoints serve from: the :class:`Backend` handed to every resource handler.

The handlers (``handlers.py``, ``writes.py``, ``scale.py``, ``watch_http.py``) take a
:class:`Backend` instead of the server, so they depend only on the state they use and the server
(``server.py``) stays the one module that builds and wires everything.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubesim.admission import Admission
from kubesim.resource_type import ResourceType
from kubesim.resources import Registry
from kubesim.store import Store

# (group, plural, namespace, name, field manager) of an applied configuration.
_AppliedKey = tuple[str, str, str, str, str]


class AppliedConfigs:
    """Server-side apply: the configuration each field manager last applied, per object.

    An entry belongs to the object's uid, so a recreated object starts with no applied config.
    """

    def __init__(self) -> None:
        """No configuration applied yet."""
        self._applied: dict[_AppliedKey, tuple[str, dict[str, Any]]] = {}

    def get(
        self, rt: ResourceType, *, namespace: str | None, name: str, manager: str, uid: str
    ) -> dict[str, Any] | None:
        """The configuration ``manager`` last applied to this object (None for another uid)."""
        entry = self._applied.get((rt.group, rt.plural, namespace or "", name, manager))
        if entry is None or entry[0] != uid:
            return None
        return copy.deepcopy(entry[1])

    def remember(
        self,
        rt: ResourceType,
        *,
        namespace: str | None,
        name: str,
        manager: str,
        uid: str,
        config: dict[str, Any],
    ) -> None:
        """Keep ``config`` as ``manager``'s last applied configuration of the object ``uid``."""
        key = (rt.group, rt.plural, namespace or "", name, manager)
        self._applied[key] = (uid, copy.deepcopy(config))


# Called with the request and its prepared response once a watch stream has started.
StreamStarted = Callable[[web.Request, web.StreamResponse], None]


@dataclass
class WatchStreams:
    """The settings and the bookkeeping of the server's open watch streams."""

    timeout_seconds: float
    bookmark_interval_seconds: float
    # The server records a watch request as soon as its stream starts, not when it ends.
    started: StreamStarted
    # Streams currently open (tests poll it to know a client is watching).
    open: int = 0
    _closing: asyncio.Event | None = field(default=None, init=False)

    @property
    def closing(self) -> asyncio.Event:
        """Set when the server shuts down; open watch streams end on it."""
        if self._closing is None:
            self._closing = asyncio.Event()
        return self._closing


@dataclass
class Backend:
    """The served kinds, the objects, admission, server-side apply memory and the watch streams."""

    registry: Registry
    store: Store
    admission: Admission
    watches: WatchStreams
    applied: AppliedConfigs = field(default_factory=AppliedConfigs)
