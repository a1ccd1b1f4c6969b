"""``Outcome``: what one remote-cluster reconcile did, for its message, and whether it must look
again soon."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Outcome"]


@dataclass
class Outcome:
    """What one reconcile did, for its message, and whether it must look again soon."""

    notes: list[str] = field(default_factory=list)
    retry: bool = False

    def note(self, text: str, *, retry: bool = False) -> None:
        self.notes.append(text)
        self.retry = self.retry or retry
