"""The client calls as one protocol each, for callers to compose into exactly what they need.

``ResourceClient``, ``ScopedClient`` and ``UnscopedClient`` satisfy all of them; a caller that
makes only some calls (the event recorder, the leader elector) asks for just those, so that any
client, or a small fake, will do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stackflow.models.kinds import Kind

__all__ = ["Creates", "Gets", "MergePatches", "Replaces"]


class Gets(Protocol):
    """A client that reads one object."""

    async def get(self, resource: Kind, *, namespace: str | None, name: str) -> dict[str, Any]:
        """GET one object."""
        ...


class Creates(Protocol):
    """A client that creates objects."""

    async def create(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Create an object."""
        ...


class Replaces(Protocol):
    """A client that replaces objects."""

    async def replace(
        self,
        resource: Kind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace an object (optimistic on its resourceVersion)."""
        ...


class MergePatches(Protocol):
    """A client that merge-patches objects."""

    async def merge_patch(
        self,
        resource: Kind,
        patch: Mapping[str, Any],
        *,
        namespace: str | None,
        name: str,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Merge-patch an object."""
        ...
