"""The wheel: choose buckets, scan them a span at a time (`span`), reading the next span while
one settles and heals; then, unless the rotation stopped, the stray sweep (`SpanScan.sweep`). A
live lag that stays too high (`load.LagGuard`) stops the rotation (`RotationReport.stopped`).
`run_repair` runs a wheel's rotations and records their metrics (the library behind ``searchsync
repair``); `limits` builds its load limits."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Final

from searchsync.clock import utc_now
from searchsync.config import RepairSettings, Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.truth import Truth
from searchsync.observability.http import HealthServer, serve_job_metrics
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.chunks import ChunkController
from searchsync.ops.repair.generations import (
    BucketState,
    Choice,
    WheelState,
    age_s,
    choose,
    ensure_epoch,
)
from searchsync.ops.repair.load import LagGuard, Limits, TokenBucket, live_lag
from searchsync.ops.repair.model import BucketReport, IndexEntry, RotationReport
from searchsync.ops.repair.reader import WHEEL_CANONICALIZATION_VERSION, SpanReader
from searchsync.ops.repair.span import Healer, SpanRead, SpanScan
from searchsync.projection import Projector
from searchsync.search.port import SearchEngine

SPAN_BUCKETS: Final = 32  # buckets read together (adjacent ones in one key range)
SPAN_ROWS: Final = 50_000  # ... and at most this many rows by their last scans (>= 1 bucket)


class Wheel:
    """The wheel over `projectors` with the ``[repair]`` `settings`. A soft-deleted row deleted
    longer ago than `tombstone_minimum` (``RetentionSettings.tombstone_minimum``) may have its
    tombstone purged: no document is then not drift (None: every tombstone is expected)."""

    def __init__(
        self,
        *,
        projectors: Sequence[Projector],
        alias_for: Callable[[str], str],
        truth: Truth,
        index: SearchEngine,
        state: WheelState,
        healer: Healer,
        settings: RepairSettings,
        tombstone_minimum: timedelta | None = None,
        span_buckets: int = SPAN_BUCKETS,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        progress: Callable[[BucketReport, int, int], None] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._projectors = list(projectors)
        self._progress = progress
        self._span_buckets = span_buckets
        # Elasticsearch pages of a fixed size: a range query costs its whole key range whatever
        # the page, so fewer, larger pages cost less
        chunks = _chunks(settings), _chunks(settings, settings.page_max), _chunks(settings)
        window = tombstone_minimum
        purged = (lambda: None) if window is None else (lambda: clock() - window)
        reader = SpanReader(truth, index, limits or Limits(), *chunks, purged)
        self._scan = SpanScan(reader, state, healer, alias_for, settings, clock, sleep)

    async def rotation(self, limit: int | None = None) -> RotationReport:
        """Scan every bucket of every type once (or the `limit` best per type), by priority, a
        span of consecutive picks at a time."""
        started = time.monotonic()
        report = RotationReport(content_share=self._scan.settings.content_share)
        for projector in self._projectors:
            await self._rotate(projector, report, limit)
            if report.stopped is not None:
                break
        report.seconds = time.monotonic() - started
        return report

    async def _rotate(
        self, projector: Projector, report: RotationReport, limit: int | None
    ) -> None:
        t, scan = projector.aggregate_type, self._scan
        r, state, clock = scan.settings, scan.state, scan.clock
        epoch, new = await ensure_epoch(
            state, t, r.bucket_count, WHEEL_CANONICALIZATION_VERSION, clock()
        )
        report.epochs[t] = epoch
        if new:
            report.new_epochs.append(t)
        states = await state.buckets(epoch)
        picked = choose(states.values(), clock(), r, limit or len(states))
        spans = list(self._spans(picked, states))
        misplaced: dict[str, IndexEntry] = {}

        def start(span: Sequence[Choice]) -> asyncio.Task[SpanRead | str]:
            return asyncio.create_task(
                scan.read(projector, epoch, [states[c.bucket] for c in span])
            )

        ahead: asyncio.Task[SpanRead | str] | None = None
        n = 0
        try:
            for k, span in enumerate(spans):
                report.choices.extend((t, choice) for choice in span)
                current, ahead = ahead or start(span), None
                read = await current
                if isinstance(read, str):
                    report.stopped = read
                    break
                misplaced.update(read.misplaced)  # none from a failed read
                if k + 1 < len(spans):  # read the next span while this one settles and heals
                    ahead = start(spans[k + 1])
                for bucket in await scan.finish(projector, epoch, read):
                    n += 1
                    report.buckets.append(bucket)
                    if self._progress is not None:
                        self._progress(bucket, n, len(picked))
                    if bucket.stopped is not None:
                        report.stopped = bucket.stopped
                if report.stopped is not None:
                    break
        finally:
            if ahead is not None:  # begun, not finished: scanned again from its first key
                ahead.cancel()
                with contextlib.suppress(BaseException):
                    await ahead
        if report.stopped is None:  # the stray sweep, leaving out the ids the buckets found
            found = {f.id for b in report.buckets if b.aggregate_type == t for f in b.findings}
            swept = await scan.sweep(projector, misplaced, found)
            report.strays.append(swept)
            report.stopped = swept.stopped
        after, now = (await state.buckets(epoch)).values(), clock()
        report.oldest_age_s[t] = max(age_s(s, now, r.max_staleness_s) for s in after)

    def _spans(
        self, picked: Sequence[Choice], states: Mapping[int, BucketState]
    ) -> Iterator[list[Choice]]:
        """Consecutive picks, at most `span_buckets` and (by their last scans) `SPAN_ROWS` rows
        per span, at least one."""
        span: list[Choice] = []
        rows = 0
        for choice in picked:
            seen = states[choice.bucket].rows_seen or 0
            if span and (len(span) >= self._span_buckets or rows + seen > SPAN_ROWS):
                yield span
                span, rows = [], 0
            span.append(choice)
            rows += seen
        if span:
            yield span


def _chunks(c: RepairSettings, fixed: int | None = None) -> ChunkController:
    if fixed is not None:
        return ChunkController(fixed, fixed, c.page_target_s, fixed)
    return ChunkController(c.page_min, c.page_max, c.page_target_s, c.page_size, max_step=4.0)


def limits(settings: Settings, admin: KafkaAdmin | None) -> Limits:
    """The scan's ceilings and the live-lag guard (no guard without an admin)."""
    r = settings.repair

    async def read_lag() -> int:
        assert admin is not None
        return await asyncio.to_thread(live_lag, admin, settings)

    return Limits(
        mysql_rows=TokenBucket(r.mysql_rows_per_s),
        es_requests=TokenBucket(r.es_requests_per_s),
        lag=LagGuard(
            read_lag,
            max_lag=r.max_live_lag if admin is not None else 0,
            timeout_s=r.lag_wait_timeout_s,
            poll_s=r.lag_poll_s,
            group=settings.kafka.group_id,
        ),
    )


def record(metrics: RepairMetrics, report: RotationReport) -> None:
    for b in report.buckets:
        if b.interrupted is None:
            content = str(b.content_checked).lower()
            metrics.buckets_scanned.labels(aggregate_type=b.aggregate_type, content=content).inc()
    for t in report.epochs:
        metrics.set_counts(
            t, Counter(f.kind.value for f in report.findings() if f.aggregate_type == t)
        )
    for t, age in report.oldest_age_s.items():
        metrics.oldest_age.labels(aggregate_type=t).set(age)
    metrics.rotation_seconds.set(report.seconds)
    if report.complete:
        metrics.finished_at.set_to_current_time()


async def run_repair(
    wheel: Wheel,
    settings: Settings,
    *,
    daemon: bool,
    metrics: RepairMetrics,
    on_report: Callable[[RotationReport], None],
    stop: asyncio.Event | None = None,
) -> RotationReport:
    """One rotation (`daemon` False) or ticks of the best buckets until `stop` (a tick stopped by
    the live-lag guard is tried again at the next); the last report."""
    server = await serve_metrics(settings, metrics) if daemon else None
    try:
        stop = stop or asyncio.Event()
        limit = settings.repair.daemon_buckets_per_tick if daemon else None
        while True:
            report = await wheel.rotation(limit)
            record(metrics, report)
            on_report(report)
            with contextlib.suppress(TimeoutError):
                if daemon:
                    await asyncio.wait_for(stop.wait(), settings.repair.daemon_interval_s)
            if not daemon or stop.is_set():
                return report
    finally:
        if server is not None:
            await server.close()


async def serve_metrics(settings: Settings, metrics: RepairMetrics) -> HealthServer | None:
    """``--daemon``'s /metrics (and a /healthz that is ready while it runs) on
    ``repair.metrics_port``; None when that is 0."""
    return await serve_job_metrics(
        settings.observability.metrics_host,
        settings.repair.metrics_port,
        metrics,
        port_setting="repair.metrics_port",
        details={"repair": "daemon"},
    )
