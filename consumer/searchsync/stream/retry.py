"""Retry backoff, ``NextRetry`` (docs/design.md, "Retry"): ``min(base * 2**min(k, 10), max_delay)``
plus a uniform jitter in ``[0, max(delay * jitter, 1 ms))`` added after the cap (``jitter=0``:
none), ``k`` the retries before this one. The random source is injected; nothing sleeps here."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

MAX_SHIFT: Final = 10  # the seed's ``min(attempt, 10)``
MIN_JITTER_S: Final = 0.001  # the seed's ``max(delay / 5, time.Millisecond)``


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter and a bounded number of attempts; ``delay(n)`` after the n-th
    failed attempt is ``NextRetry(n - 1)``."""

    base_delay: float
    max_delay: float
    max_attempts: int
    jitter: float
    rng: random.Random

    def __post_init__(self) -> None:
        base_delay, max_delay = self.base_delay, self.max_delay
        if not base_delay >= 0:
            raise ValueError(f"base_delay must be >= 0, got {base_delay}")
        if not max_delay >= base_delay:
            raise ValueError(f"max_delay must be >= base_delay, got {max_delay} < {base_delay}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")

    def nominal(self, attempt: int) -> float:
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        return min(self.base_delay * float(1 << min(attempt - 1, MAX_SHIFT)), self.max_delay)

    def jitter_limit(self, attempt: int) -> float:
        """The jitter's exclusive upper bound (0: no jitter)."""
        if self.jitter == 0:
            return 0.0
        return max(self.nominal(attempt) * self.jitter, MIN_JITTER_S)

    def delay(self, attempt: int) -> float:
        return self.nominal(attempt) + self.jitter_limit(attempt) * self.rng.random()

    def exhausted(self, attempt: int) -> bool:
        """`attempt` attempts spent the budget: dead-letter instead."""
        return attempt >= self.max_attempts
