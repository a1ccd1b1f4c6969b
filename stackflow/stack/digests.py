"""A bounded memory of digests: what was already checked, without keeping what was checked.

Loading an RSA key validates it (about 40 ms) and checking a password against its PBKDF2 hash costs
the hash (about 6 ms); a reconcile does both for the same Secrets every time. Remembering the
SHA-256 of what passed lets the next reconcile skip the work, and keeps neither the key nor the
password in the memory. The oldest digests are forgotten first, so the memory stays bounded.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

__all__ = ["RecentDigests", "digest_of"]


def digest_of(*parts: bytes) -> bytes:
    """The SHA-256 of ``parts``, each length-prefixed (so ``(ab, c)`` and ``(a, bc)`` differ)."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.digest()


class RecentDigests:
    """The ``capacity`` digests added last (least recently seen forgotten first).

    Safe to share between threads: the builders that use it run in worker threads, several
    reconciles at once, and a lookup moves the digest it finds while another add may evict.
    """

    def __init__(self, capacity: int) -> None:
        """An empty memory of at most ``capacity`` digests."""
        self._capacity = capacity
        self._digests: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, digest: object) -> bool:
        """Whether ``digest`` was added and not yet forgotten (a hit counts as recent use)."""
        if not isinstance(digest, bytes):
            return False
        with self._lock:
            if digest not in self._digests:
                return False
            self._digests.move_to_end(digest)
            return True

    def add(self, digest: bytes) -> None:
        """Remember ``digest``; forget the least recently seen one beyond the capacity."""
        with self._lock:
            self._digests[digest] = None
            self._digests.move_to_end(digest)
            while len(self._digests) > self._capacity:
                self._digests.popitem(last=False)

    def __len__(self) -> int:
        """How many digests are remembered."""
        with self._lock:
            return len(self._digests)
