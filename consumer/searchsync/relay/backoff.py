"""Seed 000's retry delay for a failed publish (``NextRetry``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import Final

__all__ = ["BASE_DELAY", "MAX_DELAY", "MAX_SHIFT", "next_retry"]

BASE_DELAY: Final = timedelta(seconds=1)
MAX_DELAY: Final = timedelta(minutes=30)
MAX_SHIFT: Final = 10
_MILLISECOND: Final = timedelta(milliseconds=1)


def next_retry(attempt: int, rand: Callable[[int], int] | None = None) -> timedelta:
    """How long a row waits after failed attempt number `attempt` (0 for the first failure).

    ``delay = min(base << min(attempt, 10), 30 min)`` plus a jitter drawn uniformly from
    ``[0, max(delay / 5, 1 ms))`` at microsecond resolution. `rand(n)` returns an integer in
    ``[0, n)`` (``random.randrange`` by default; tests pass their own).
    """
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    delay = min(BASE_DELAY * (1 << min(attempt, MAX_SHIFT)), MAX_DELAY)
    limit = max(delay / 5, _MILLISECOND)
    micros = limit // timedelta(microseconds=1)
    draw = rand if rand is not None else random.randrange
    return delay + timedelta(microseconds=draw(micros))
