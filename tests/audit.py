"""The control plane's audit log, as the tests on the real API server read it.

The log belongs to the session's control plane: every apiserver module's operator writes to it, and
every one of them runs as the same ServiceAccount name (``elastic-system/stackflow``, recreated
with its namespace for each stack). A module therefore reads from the byte offset the log had when
the module started, and keeps only the requests of its own stack's ServiceAccount, told apart by
the ServiceAccount's uid (the token authenticator logs it as the user's uid).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["READS", "AuditLog", "reads_out_of_scope", "request_figures"]

#: Verbs that read (a namespaced ``list``/``watch`` reads one namespace; without one, every one).
READS = frozenset({"get", "list", "watch"})


class AuditLog:
    """The control plane's audit log, read from a mark on, one user's requests only."""

    def __init__(self, path: Path, username: str) -> None:
        """Start reading at the current end: ``start`` stays the offset of this moment."""
        self.path = path
        self.username = username
        self.start = self.offset = path.stat().st_size
        #: The ServiceAccount's uid once known: requests of an earlier account of the same name
        #: (another module's stack) are then left out.
        self.uid: str | None = None

    def mark(self) -> None:
        """Forget everything logged so far."""
        self.offset = self.path.stat().st_size

    def operator_requests(self, since: int | None = None) -> Iterator[dict[str, Any]]:
        """The user's requests since the mark, or since the byte offset ``since`` (one event per
        request, its final stage)."""
        with self.path.open() as log:
            log.seek(self.offset if since is None else since)
            for line in log:
                if not line.endswith("\n"):
                    return  # the server is still writing this one
                event = json.loads(line)
                if is_request_of(event, self.username, self.uid):
                    yield event


def is_request_of(event: dict[str, Any], username: str, uid: str | None) -> bool:
    """Whether an audit event is the final record of a request by ``username`` (and, when ``uid``
    is given, by the account of that uid) (pure). A watch still open has only started: its
    ResponseStarted record stands for it; every other request is logged complete."""
    user = event.get("user") or {}
    if user.get("username") != username or (uid is not None and user.get("uid") != uid):
        return False
    return bool(
        event["stage"] == "ResponseComplete"
        or (event["verb"] == "watch" and event["stage"] == "ResponseStarted")
    )


def request_key(event: dict[str, Any]) -> str:
    """``verb resource[/subresource]`` of an audit event (pure)."""
    ref = event.get("objectRef") or {}
    resource = "/".join(part for part in (ref.get("resource"), ref.get("subresource")) if part)
    return f"{event['verb']} {resource}"


def request_figures(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many requests of each ``verb resource`` (pure)."""
    counts: dict[str, int] = {}
    for event in events:
        key = request_key(event)
        counts[key] = counts.get(key, 0) + 1
    return counts


def reads_out_of_scope(events: Iterable[dict[str, Any]], in_scope: Collection[str]) -> list[str]:
    """Every read (get, list, watch) of a namespaced object in a namespace not in ``in_scope``,
    as ``verb resource namespace/name`` (pure).

    A list or watch without a namespace reads cluster-wide (ECK keeps such watches too): it is
    not a read in a namespace. A Namespace object carries its own name as the request's
    namespace, but it is cluster-scoped: reading it reads no namespace's content.
    """
    outside: set[str] = set()
    for event in events:
        ref = event.get("objectRef") or {}
        namespace = ref.get("namespace")
        if (
            event["verb"] in READS
            and namespace
            and ref.get("resource") != "namespaces"
            and namespace not in in_scope
        ):
            outside.add(f"{request_key(event)} {namespace}/{ref.get('name', '')}")
    return sorted(outside)
