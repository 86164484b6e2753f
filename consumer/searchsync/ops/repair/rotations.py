"""Run a `Wheel`'s rotations and record their metrics (the library behind ``searchsync repair``);
`limits` builds its load limits."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable

from searchsync.config import Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.observability.http import HealthServer, serve_job_metrics
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.repair.load import LagGuard, Limits, TokenBucket, live_lag
from searchsync.ops.repair.model import RotationReport
from searchsync.ops.repair.wheel import Wheel


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
    per_type: dict[str, Counter[str]] = {t: Counter() for t in report.epochs}
    for b in report.buckets:
        if b.interrupted is None:
            content = str(b.content_checked).lower()
            metrics.buckets_scanned.labels(aggregate_type=b.aggregate_type, content=content).inc()
    for f in report.findings():
        per_type[f.aggregate_type][f.kind.value] += 1
    for t, counts in per_type.items():
        metrics.set_counts(t, counts)
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
        while True:
            limit = settings.repair.daemon_buckets_per_tick if daemon else None
            report = await wheel.rotation(limit)
            record(metrics, report)
            on_report(report)
            if not daemon or stop.is_set():
                return report
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), settings.repair.daemon_interval_s)
            if stop.is_set():
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
