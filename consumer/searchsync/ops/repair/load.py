"""The repair's load limits: `TokenBucket` rate ceilings, the `LagGuard` on the live group's lag,
and `Limits`, the three together as the wheel and the healer take them."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from searchsync.clock import Clock
from searchsync.config import Settings
from searchsync.errors import LiveLagTooHigh
from searchsync.kafka.admin import KafkaAdmin
from searchsync.ops.offsets import partition_offsets

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """At most `rate` units per second on average (0: no ceiling) plus one `burst` (defaults to
    one second's): a caller takes what it used and, in debt, waits until the bucket refilled."""

    def __init__(
        self,
        rate: float,
        *,
        burst: float | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if rate < 0:
            raise ValueError("rate must be >= 0 (0: no ceiling)")
        self.rate = rate
        self.burst = max(burst if burst is not None else rate, 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    async def take(self, n: float = 1.0) -> None:
        """Account for `n` units used; wait while the bucket is in debt."""
        if self.rate == 0 or n <= 0:
            return
        self._refill()
        self._tokens -= n
        if self._tokens < 0:
            await self._sleep(-self._tokens / self.rate)
            self._refill()


def live_lag(admin: KafkaAdmin, settings: Settings) -> int:
    """The live consumer group's total lag over its subscribed topics (blocking)."""
    return sum(r.lag for r in partition_offsets(admin, settings))


@dataclass(slots=True)
class LagGuard:
    """While the live lag is above `max_lag` (0: off), wait, at most `timeout_s`. `job` names
    the waiting command and its settings section in the messages."""

    read_lag: Callable[[], Awaitable[int]]
    max_lag: int
    timeout_s: float
    poll_s: float
    group: str = ""
    clock: Clock = time.monotonic
    sleep: Sleep = asyncio.sleep
    job: str = "repair"

    async def wait(self, before: str) -> None:
        """Return once the live lag is at most `max_lag`; raise `LiveLagTooHigh` past the wait."""
        if self.max_lag <= 0 or (lag := await self.read_lag()) <= self.max_lag:
            return
        job = self.job
        deadline = self.clock() + self.timeout_s
        log.warning(
            f"{job} paused before {before}: live group {self.group!r} lag {lag} >"
            f" {job}.max_live_lag {self.max_lag}; waiting up to {self.timeout_s:.0f}s for the"
            " consumer to catch up"
        )
        while lag > self.max_lag:
            if self.clock() >= deadline:
                raise LiveLagTooHigh(
                    f"live group {self.group!r} lag {lag} stayed above {job}.max_live_lag"
                    f" {self.max_lag} for {self.timeout_s:.0f}s before {before}: the {job}"
                    f" stopped; let the consumer catch up (or raise {job}.max_live_lag or"
                    f" {job}.lag_wait_timeout_s) and run it again"
                )
            await self.sleep(min(self.poll_s, max(deadline - self.clock(), 0.0)))
            lag = await self.read_lag()
        log.info("%s resumes before %s: live lag %d <= %d", job, before, lag, self.max_lag)


async def _no_lag() -> int:
    return 0


@dataclass(slots=True)
class Limits:
    """The wheel's load limits; the defaults limit nothing."""

    mysql_rows: TokenBucket = field(default_factory=lambda: TokenBucket(0))
    es_requests: TokenBucket = field(default_factory=lambda: TokenBucket(0))
    lag: LagGuard = field(default_factory=lambda: LagGuard(_no_lag, 0, 0.0, 1.0))
