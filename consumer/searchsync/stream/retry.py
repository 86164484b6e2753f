"""Retry backoff, seed 000's ``NextRetry``: ``min(base * 2**min(k, 10), max_delay)`` plus a uniform
jitter in ``[0, max(delay * jitter, 1 ms))`` added after the cap (``jitter=0``: none), ``k`` the
retries before this one. The random source is injected; nothing sleeps here."""

from __future__ import annotations

import random
from typing import Final

MAX_SHIFT: Final = 10  # the seed's ``min(attempt, 10)``
MIN_JITTER_S: Final = 0.001  # the seed's ``max(delay / 5, time.Millisecond)``


class RetryPolicy:
    """Exponential backoff with jitter and a bounded number of attempts; ``delay(n)`` after the n-th
    failed attempt is ``NextRetry(n - 1)``."""

    __slots__ = ("_base_delay", "_jitter", "_max_attempts", "_max_delay", "_rng")

    def __init__(
        self,
        base_delay: float,
        max_delay: float,
        max_attempts: int,
        jitter: float,
        rng: random.Random,
    ) -> None:
        if not base_delay >= 0:
            raise ValueError(f"base_delay must be >= 0, got {base_delay}")
        if not max_delay >= base_delay:
            raise ValueError(f"max_delay must be >= base_delay, got {max_delay} < {base_delay}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], got {jitter}")
        self._base_delay = float(base_delay)
        self._max_delay = float(max_delay)
        self._max_attempts = max_attempts
        self._jitter = float(jitter)
        self._rng = rng

    @property
    def base_delay(self) -> float:
        return self._base_delay

    @property
    def max_delay(self) -> float:
        return self._max_delay

    @property
    def max_attempts(self) -> int:
        return self._max_attempts

    @property
    def jitter(self) -> float:
        return self._jitter

    def nominal(self, attempt: int) -> float:
        """The delay before jitter."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        return min(self._base_delay * float(1 << min(attempt - 1, MAX_SHIFT)), self._max_delay)

    def jitter_limit(self, attempt: int) -> float:
        """The jitter's exclusive upper bound (0: no jitter)."""
        if self._jitter == 0:
            return 0.0
        return max(self.nominal(attempt) * self._jitter, MIN_JITTER_S)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after `attempt` failed."""
        return self.nominal(attempt) + self.jitter_limit(attempt) * self._rng.random()

    def exhausted(self, attempt: int) -> bool:
        """`attempt` attempts spent the budget: dead-letter instead."""
        return attempt >= self._max_attempts
