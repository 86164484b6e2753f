"""When to try a failed work again, and when to give up and dead-letter it.

The delay doubles with every attempt up to a cap, and a random jitter of up to a fraction of the
delay is added so that many works failing together do not retry together. The cap holds *with*
the jitter: the nominal delay is capped at ``max_delay / (1 + jitter)``, so even at the cap the
retries keep their spread and never wait longer than ``max_delay``.

The random source is injected, so a test decides what the dice say; the policy only computes
delays and never sleeps (the pipeline schedules the retry on its own clock).
"""

from __future__ import annotations

import random

# 2**_MAX_SHIFT stays a finite float; any realistic max_delay caps the delay long before.
_MAX_SHIFT = 1000


class RetryPolicy:
    """Exponential backoff with jitter and a bounded number of attempts.

    `attempt` is the number of attempts made so far, the failed one included: after the first
    failure call ``delay(1)``. The n-th retry waits about ``base_delay * 2**(n - 1)``.
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
        """The delay before jitter: doubles per attempt, capped so that jitter fits the cap.

        Non-decreasing in `attempt`; ``nominal(a) * (1 + jitter) <= max_delay``.
        """
        if attempt < 1:
            raise ValueError(f"attempt must be >= 1, got {attempt}")
        shift = min(attempt - 1, _MAX_SHIFT)
        cap = self._max_delay / (1.0 + self._jitter)
        return min(self._base_delay * 2.0**shift, cap)

    def delay(self, attempt: int) -> float:
        """Seconds to wait after `attempt` failed: nominal plus up to `jitter` of it, capped."""
        nominal = self.nominal(attempt)
        spread = nominal * self._jitter * self._rng.random()
        return max(0.0, min(nominal + spread, self._max_delay))

    def exhausted(self, attempt: int) -> bool:
        """True when `attempt` attempts used the whole budget: dead-letter instead of retrying."""
        return attempt >= self._max_attempts
