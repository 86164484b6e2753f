"""`searchsync exporter`: the group's state at the broker and the freshness canary on /metrics of a
registry of its own, from a process that needs no live member (docs/design.md, "Watching the
group from outside"). The outbox's ``outbox_pending_count`` and
``outbox_oldest_pending_age_seconds`` mean here the broker-side backlog the group has not
finished (the polling relay exports the same names for rows it has not published)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Metric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from searchsync.config import Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.observability.http import HealthReport
from searchsync.watch.canary import CANARY_TYPE, Canary
from searchsync.watch.group import GroupView, KafkaPeek, observe_group

log = logging.getLogger(__name__)


EXPORTER_METRIC_NAMES: Final = (
    "searchsync_group_lag",
    "searchsync_group_oldest_unfinished_age_seconds",
    "searchsync_group_members",
    "searchsync_group_expected_members",
    "outbox_pending_count",
    "outbox_oldest_pending_age_seconds",
    "searchsync_canary_age_seconds",
    "searchsync_canary_beats",
    "searchsync_exporter_errors",
    "searchsync_exporter_up",
)


class _GroupCollector(Collector):
    """The group's series from the last view; none at all (never 0) while there is no view."""

    def __init__(self) -> None:
        self.view: GroupView | None = None

    def collect(self) -> Iterable[Metric]:
        view = self.view
        labels = ["topic", "partition"]
        lag = GaugeMetricFamily(
            "searchsync_group_lag", "Log end minus the group's committed offset", labels=labels
        )
        age = GaugeMetricFamily(
            "searchsync_group_oldest_unfinished_age_seconds",
            "Age of the message at the group's committed offset (0: nothing unfinished)",
            labels=labels,
        )
        members = GaugeMetricFamily(
            "searchsync_group_members", "Live members of the group (admin API)"
        )
        pending = GaugeMetricFamily(
            "outbox_pending_count",
            "Outbox events published and not yet finished by the group (broker-side backlog)",
        )
        oldest = GaugeMetricFamily(
            "outbox_oldest_pending_age_seconds",
            "Age of the oldest outbox event the group has not finished",
        )
        if view is not None:
            members.add_metric([], view.members)
            pending.add_metric([], view.lag)
            oldest.add_metric([], view.oldest_age_s)
            for p in view.partitions:
                key = [p.topic, str(p.partition)]
                lag.add_metric(key, p.lag)
                unread = math.nan if p.lag else 0.0  # events wait, their age unknown: no 0
                age.add_metric(key, unread if p.oldest_age_s is None else p.oldest_age_s)
        yield from (lag, age, members, pending, oldest)


class ExporterMetrics:
    """The exporter's gauges. The group's series come from the last successful observation
    (`set_group`) and vanish when one fails, so nothing unobserved reads as 0;
    ``searchsync_exporter_up`` says which. The canary's two series exist only with `canary` on (an
    age of 0 must never stand for "not measured")."""

    def __init__(self, expected_members: int, *, canary: bool) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self._group = _GroupCollector()
        r.register(self._group)
        Gauge(
            "searchsync_group_expected_members",
            "Members the deployment runs (exporter.expected_members)",
            registry=r,
        ).set(expected_members)
        self.up = Gauge(
            "searchsync_exporter_up",
            "1 while the last observation of the group succeeded; 0 (and no group series) when "
            "it failed or none was made yet",
            registry=r,
        )
        on = r if canary else CollectorRegistry()
        self.canary_age = Gauge(
            "searchsync_canary_age_seconds",
            "Now minus the commit time of the newest searchable heartbeat (since start: none yet)",
            registry=on,
        )
        self.beats = Counter(
            "searchsync_canary_beats", "Heartbeats committed through the outbox", registry=on
        )
        self.errors = Counter(
            "searchsync_exporter_errors",
            "Observations that failed, by what was observed",
            ["probe"],
            registry=r,
        )
        for probe in ("group", "canary_beat", "canary_read"):
            self.errors.labels(probe=probe)

    def set_group(self, view: GroupView | None) -> None:
        """The last view, None when the group could not be observed: no values for it, up 0."""
        self._group.view = view
        self.up.set(view is not None)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class Exporter:
    """Observes the group every ``exporter.interval_s``; with ``canary.interval_s`` above 0 also
    beats that often and reads the newest searchable beat every ``canary.poll_s``."""

    def __init__(
        self,
        settings: Settings,
        *,
        admin: KafkaAdmin,
        peek: KafkaPeek,
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
        self.last_failure: BaseException | None = None  # of the last group observation

    async def observe(self) -> None:
        """One observation of the group; a failure is counted and logged, never raised."""
        now_ms = int(self._wall().timestamp() * 1000)
        try:
            view = await asyncio.to_thread(
                observe_group, self._admin, self._settings, self._peek, now_ms=now_ms
            )
        except Exception as exc:  # the broker away: say so, keep serving, try again
            self._last_error = str(exc) or type(exc).__name__
            self.last_failure = exc
            self.metrics.errors.labels(probe="group").inc()
            self.metrics.set_group(None)
            log.warning("group observation failed", extra={"error": self._last_error})
            return
        self.metrics.set_group(view)
        self._observed_at = self._clock()
        self._last_error = None
        self.last_failure = None

    async def beat(self) -> None:
        assert self._canary is not None
        try:
            await self._canary.beat(self._wall())
        except Exception as exc:
            self.metrics.errors.labels(probe="canary_beat").inc()
            log.warning("canary heartbeat failed", extra={"error": str(exc)})
            return
        self.metrics.beats.inc()

    async def read_canary(self) -> None:
        """Set the canary's age from the newest searchable heartbeat (canary on)."""
        assert self._canary is not None
        alias = self._settings.alias(CANARY_TYPE)
        since = self._started  # none yet (or unreadable): the wait so far
        try:
            since = await self._canary.beat_at(alias) or since
        except Exception as exc:
            self.metrics.errors.labels(probe="canary_read").inc()
            log.warning("canary read failed", extra={"error": str(exc), "alias": alias})
        self.metrics.canary_age.set(max(0.0, (self._wall() - since).total_seconds()))

    def health(self) -> HealthReport:
        """Healthy while the last group observation succeeded within three intervals."""
        if self._observed_at is None:
            return HealthReport(False, [self._last_error or "no observation of the group yet"])
        age = self._clock() - self._observed_at
        if age > 3 * self._settings.exporter.interval_s:
            return HealthReport(
                False, [f"last group observation {age:.0f}s ago: {self._last_error}"]
            )
        return HealthReport(True)

    async def run(self, stop: asyncio.Event) -> None:
        loops = [_every(self._settings.exporter.interval_s, self.observe, stop)]
        c = self._settings.canary
        if self._canary is not None and c.interval_s > 0:
            loops += [
                _every(c.interval_s, self.beat, stop),
                _every(c.poll_s, self.read_canary, stop),
            ]
        await asyncio.gather(*loops)


async def _every(
    interval_s: float, step: Callable[[], Awaitable[None]], stop: asyncio.Event
) -> None:
    while not stop.is_set():
        await step()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
