"""Sorted object keys per storage key, so LIST and WATCH neither sort nor scan per request.

The order is rebuilt only when a bucket gains or loses a key (updates keep it), and a namespace's
objects are a bisected slice of it.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

StorageKey = tuple[str, str]
ObjectKey = tuple[str, str]


class SortedKeys:
    """A cache of ``sorted(bucket)`` per storage key; the store invalidates it on membership change."""

    def __init__(self) -> None:
        """An empty cache."""
        self._ordered: dict[StorageKey, list[ObjectKey]] = {}

    def invalidate(self, key: StorageKey) -> None:
        """Forget the order of ``key`` (an object was added or removed, or the bucket dropped)."""
        self._ordered.pop(key, None)

    def clear(self) -> None:
        """Forget every order (the state was replaced)."""
        self._ordered.clear()

    def in_order(
        self, key: StorageKey, bucket: Mapping[ObjectKey, Any], namespace: str | None
    ) -> list[ObjectKey]:
        """The keys of ``bucket`` sorted by (namespace, name); only ``namespace``'s when given."""
        if not bucket:
            return []
        ordered = self._ordered.get(key)
        # The length check is a cheap guard against a missed invalidation.
        if ordered is None or len(ordered) != len(bucket):
            ordered = sorted(bucket)
            self._ordered[key] = ordered
        if not namespace:
            return ordered
        # Every (namespace, name) sorts after (namespace,) and before (namespace + "\0",).
        start = bisect.bisect_left(ordered, (namespace,))
        end = bisect.bisect_left(ordered, (namespace + "\0",), lo=start)
        return ordered[start:end]
