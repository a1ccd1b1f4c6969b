"""Lenient stack-version comparison for the version-dependent parts of associations."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def parse_version(version: str) -> tuple[int, int, int] | None:
    """Return ``(major, minor, patch)`` of ``version`` (pre-release suffixes ignored), or None."""
    match = _VERSION.match(version or "")
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2) or 0), int(match.group(3) or 0))


def at_least(version: str, major: int, minor: int = 0, patch: int = 0) -> bool:
    """Return whether ``version`` is at least ``major.minor.patch``; an unparsable version is not.

    ECK compares with ``MinFor`` (pre-releases of a version count as that version), which ignoring
    the suffix reproduces.
    """
    parsed = parse_version(version)
    return parsed is not None and parsed >= (major, minor, patch)
