"""Time, injected: the two clock types and `Deadline`. Imports no searchsync module."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]
"""Monotonic seconds (``time.monotonic``): for durations, deadlines and rates."""

WallClock = Callable[[], datetime]
"""Aware UTC datetimes (`utc_now`): for timestamps written to MySQL or records."""


def utc_now() -> datetime:
    """The default `WallClock`."""
    return datetime.now(UTC)


class Deadline:
    """A point on an injected clock: for waiting on a condition without sleeping and hoping."""

    __slots__ = ("_at", "_clock")

    def __init__(self, clock: Clock, seconds: float) -> None:
        if not seconds >= 0:
            raise ValueError(f"seconds must be >= 0, got {seconds}")
        self._clock = clock
        self._at = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self._at - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self._at
