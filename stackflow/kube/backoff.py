"""Capped exponential backoff: the one retry schedule of the operator's reconnect and retry loops.

Pure arithmetic, no sleeping and no clock: callers keep their own attempt counter (0 for the first
retry, reset after a success) and ``await asyncio.sleep(backoff.delay(attempt))``.
``Backoff(initial=i, maximum=m).delay(n)`` is ``min(m, i * 2**n)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True)
class Backoff:
    """Seconds to wait before each retry: ``initial * factor**attempt``, capped at ``maximum``.

    ``jitter`` (0 to 1) spreads the delays of replicas that failed together: a delay ``d`` becomes
    a value between ``d * (1 - jitter)`` and ``d``, so the cap is never exceeded. The default 0
    makes the schedule deterministic. (The field order is the historical one of
    ``stackflow.kube.Backoff``; pass the fields by name.)
    """

    initial: float = 0.1
    """Delay before the first retry (attempt 0), in seconds."""
    factor: float = 2.0
    """Growth per attempt (at least 1)."""
    maximum: float = 10.0
    """Cap on every delay, in seconds."""
    jitter: float = 0.0
    """Fraction of each delay that may be randomly taken off (0 = none, 1 = anywhere in [0, d])."""

    def __post_init__(self) -> None:
        """Refuse schedules that would shrink, go negative or jitter past zero."""
        if self.initial < 0 or self.maximum < 0:
            raise ValueError(f"backoff delays must not be negative: {self}")
        if self.factor < 1:
            raise ValueError(f"backoff factor must be at least 1: {self}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter must be between 0 and 1: {self}")

    def delay(self, attempt: int, *, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based; negative counts as 0).

        ``rand`` (returning a float in [0, 1)) is only called when ``jitter`` is set; pass a fixed
        one for reproducible delays.
        """
        try:
            raw = self.initial * float(self.factor) ** max(0, attempt)
        except OverflowError:
            # factor**attempt leaves the float range after ~1000 doublings (a long outage with a
            # counter that never resets); the cap applies long before that.
            raw = math.inf if self.initial else 0.0
        capped = float(min(self.maximum, raw))
        if self.jitter:
            return capped * (1.0 - self.jitter * rand())
        return capped

    def delays(self, *, rand: Callable[[], float] = random.random) -> Iterator[float]:
        """The endless schedule ``delay(0), delay(1), ...``.

        For loops that count attempts by iterating: ``for delay in backoff.delays(): ...``.
        """
        attempt = 0
        while True:
            yield self.delay(attempt, rand=rand)
            attempt += 1
