"""The bounded memory of digests behind the key-validation and password-check shortcuts."""

from __future__ import annotations

import pytest

from stackflow.stack.digests import RecentDigests, digest_of


@pytest.mark.parametrize(
    ("added", "seen", "asked", "remembered"),
    [
        ([b"a", b"b"], [], b"a", True),
        ([b"a", b"b", b"c"], [], b"a", False),  # the oldest is forgotten past the capacity
        ([b"a", b"b", b"c"], [b"a"], b"a", True),  # a hit is recent use: b goes instead
        ([b"a", b"b", b"c"], [b"a"], b"b", False),
        ([b"a", b"b"], [], b"c", False),
    ],
    ids=["kept", "oldest-forgotten", "hit-refreshes", "hit-spares-not-the-next", "never-added"],
)
def test_recent_digests(
    added: list[bytes], seen: list[bytes], asked: bytes, remembered: bool
) -> None:
    memory = RecentDigests(2)
    for index, digest in enumerate(added):
        memory.add(digest)
        if index == 1:
            for hit in seen:
                assert hit in memory
    assert (asked in memory) is remembered
    assert len(memory) <= 2


def test_digest_parts_are_not_run_together() -> None:
    assert digest_of(b"ab", b"c") != digest_of(b"a", b"bc")
    assert digest_of(b"ab", b"c") == digest_of(b"ab", b"c")
