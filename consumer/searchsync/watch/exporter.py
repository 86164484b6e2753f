"""`searchsync exporter`: the group's state at the broker and the freshness canary on /metrics,
from a process that needs no live member (docs/design.md, "Watching the group from outside")."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime

from searchsync.config import Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.observability.http import HealthReport
from searchsync.watch.canary import CANARY_TYPE, Canary
from searchsync.watch.group import Peek, observe_group
from searchsync.watch.metrics import ExporterMetrics

log = logging.getLogger(__name__)


class Exporter:
    """Observes the group every ``exporter.interval_s``; with ``canary.interval_s`` above 0 also
    beats that often and reads the newest searchable beat every ``canary.poll_s``."""

    def __init__(
        self,
        settings: Settings,
        *,
        admin: KafkaAdmin,
        peek: Peek,
        metrics: ExporterMetrics,
        canary: Canary | None,
        wall_clock: Callable[[], datetime],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._admin = admin
        self._peek = peek
        self.metrics = metrics
        self._canary = canary
        self._wall = wall_clock
        self._clock = clock
        self._started = wall_clock()
        self._observed_at: float | None = None
        self._last_error: str | None = None

    async def observe(self) -> None:
        """One observation of the group; a failure is counted and logged, never raised."""
        now_ms = int(self._wall().timestamp() * 1000)
        try:
            view = await asyncio.to_thread(
                observe_group, self._admin, self._settings, self._peek, now_ms=now_ms
            )
        except Exception as exc:  # the broker away: say so, keep serving, try again
            self._last_error = str(exc) or type(exc).__name__
            self.metrics.error("group")
            log.warning("group observation failed", extra={"error": self._last_error})
            return
        self.metrics.set_group(view)
        self._observed_at = self._clock()
        self._last_error = None

    async def beat(self) -> None:
        """Commit one heartbeat (canary on)."""
        assert self._canary is not None
        try:
            await self._canary.beat(self._wall())
        except Exception as exc:
            self.metrics.error("canary_beat")
            log.warning("canary heartbeat failed", extra={"error": str(exc)})
            return
        self.metrics.canary_beat()

    async def look(self) -> None:
        """Set the canary's age from the newest searchable heartbeat (canary on)."""
        assert self._canary is not None
        alias = self._settings.alias(CANARY_TYPE)
        try:
            seen = await self._canary.beat_at(alias)
        except Exception as exc:
            self.metrics.error("canary_read")
            log.warning("canary read failed", extra={"error": str(exc), "alias": alias})
            seen = None
        since = seen if seen is not None else self._started  # none yet: the wait so far
        self.metrics.set_canary_age((self._wall() - since).total_seconds())

    def health(self) -> HealthReport:
        """Healthy while the last group observation succeeded within three intervals."""
        interval = self._settings.exporter.interval_s
        if self._observed_at is None:
            why = self._last_error or "no observation of the group yet"
            return HealthReport(False, [why])
        age = self._clock() - self._observed_at
        if age > 3 * interval:
            return HealthReport(
                False, [f"last group observation {age:.0f}s ago: {self._last_error}"]
            )
        return HealthReport(True)

    async def run(self, stop: asyncio.Event) -> None:
        """Observe, beat and look on their intervals until `stop` is set."""
        loops = [_every(self._settings.exporter.interval_s, self.observe, stop)]
        c = self._settings.canary
        if self._canary is not None and c.interval_s > 0:
            loops += [_every(c.interval_s, self.beat, stop), _every(c.poll_s, self.look, stop)]
        await asyncio.gather(*loops)


async def _every(
    interval_s: float, step: Callable[[], Awaitable[None]], stop: asyncio.Event
) -> None:
    while not stop.is_set():
        await step()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
