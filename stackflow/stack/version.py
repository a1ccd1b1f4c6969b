"""Elastic Stack version strings (Elasticsearch, Kibana, the agents alike): parsing and the
supported range."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION_PATTERN = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")


@dataclass(frozen=True, order=True)
class Version:
    """A stack version ``major.minor.patch`` (a pre-release suffix is kept but not ordered)."""

    major: int
    minor: int
    patch: int
    pre_release: str = ""

    def __str__(self) -> str:
        """Render as ``major.minor.patch[-pre]``."""
        core = f"{self.major}.{self.minor}.{self.patch}"
        return f"{core}-{self.pre_release}" if self.pre_release else core

    def at_least(self, major: int, minor: int = 0, patch: int = 0) -> bool:
        """Return whether this version is ``major.minor.patch`` or later (ignoring pre-release)."""
        return (self.major, self.minor, self.patch) >= (major, minor, patch)


MIN_SUPPORTED = Version(7, 17, 0)
MAX_SUPPORTED_MAJOR = 9


def parse_version(text: str) -> Version:
    """Parse ``text`` as ``major.minor.patch[-suffix]``; raise ``ValueError`` when it is not one."""
    match = _VERSION_PATTERN.match(text.strip())
    if match is None:
        raise ValueError(f"invalid version {text!r}: expected major.minor.patch")
    major, minor, patch, pre_release = match.groups()
    return Version(int(major), int(minor), int(patch), pre_release or "")


def is_supported(version: Version) -> bool:
    """Return whether the operator manages clusters of ``version`` (7.17 up to the last 9.x)."""
    return version.at_least(7, 17) and version.major <= MAX_SUPPORTED_MAJOR
