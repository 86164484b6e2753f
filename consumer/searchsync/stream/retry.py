"""When to try a failed work again, and when to give up and dead-letter it.

The delay is seed 000's ``NextRetry``: ``delay = min(base * 2**min(k, 10), max_delay)`` plus a
jitter drawn uniformly from ``[0, max(delay * jitter, 1 ms))``, where ``k`` counts the retries
made before this one (0 for the first: the seed's ``attempts`` column starts at 0). With the
defaults (base 1 s, max 30 min, jitter 0.2 = the seed's ``delay / 5``) it is the seed's formula
exactly. The jitter is added after the cap, as in the seed, so a delay can exceed `max_delay` by
up to its jitter; ``jitter=0`` turns the jitter (and its 1 ms floor) off.

The random source is injected, so a test decides what the dice say; the policy only computes
delays and never sleeps (the pipeline schedules the retry on its own clock).
"""

from __future__ import annotations

import random
from typing import Final

MAX_SHIFT: Final = 10  # the seed's ``min(attempt, 10)``
MIN_JITTER_S: Final = 0.001  # the seed's ``max(delay / 5, time.Millisecond)``


class RetryPolicy:
    """Exponential backoff with jitter and a bounded number of attempts.

    `attempt` is the number of attempts made so far, the failed one included: after the first
    failure call ``delay(1)``, which is ``NextRetry(0)``: ``delay(n)`` is ``NextRetry(n - 1)``.
    """

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
        """The delay before jitter: ``min(base * 2**min(attempt - 1, 10), max_delay)``."""
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        return min(self._base_delay * float(1 << min(attempt - 1, MAX_SHIFT)), self._max_delay)

    def jitter_limit(self, attempt: int) -> float:
        """The jitter's exclusive upper bound: ``max(nominal * jitter, 1 ms)`` (0: no jitter)."""
        if self._jitter == 0:
            return 0.0
        return max(self.nominal(attempt) * self._jitter, MIN_JITTER_S)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after `attempt` failed: nominal plus a jitter in [0, jitter_limit)."""
        return self.nominal(attempt) + self.jitter_limit(attempt) * self._rng.random()

    def exhausted(self, attempt: int) -> bool:
        """True when `attempt` attempts used the whole budget: dead-letter instead of retrying."""
        return attempt >= self._max_attempts
