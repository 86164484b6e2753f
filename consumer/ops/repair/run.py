"""Wire a `Wheel` from Settings on the real services, run rotations, record metrics
(the library behind ``searchsync repair``; docs/design.md, "Repair")."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from consumer.config import Settings
from consumer.mysql.pool import close_pool, open_pool
from consumer.observability.repair_metrics import RepairMetrics
from consumer.ops.repair.es_side import EsIndexSide
from consumer.ops.repair.heal import Healer, MysqlOutbox
from consumer.ops.repair.mysql_side import MysqlTruthSide
from consumer.ops.repair.schedule import SchedulePolicy
from consumer.ops.repair.state import MysqlWheelState
from consumer.ops.repair.wheel import BucketReport, RotationReport, Wheel, WheelConfig
from consumer.projection import Projector

__all__ = ["record", "run_repair", "wheel_config"]


def wheel_config(settings: Settings) -> WheelConfig:
    r = settings.repair
    return WheelConfig(
        bucket_count=r.bucket_count,
        page_size=r.page_size,
        page_min=r.page_min,
        page_max=r.page_max,
        page_target_s=r.page_target_s,
        content_share=r.content_share,
        settle_s=r.settle_s,
        policy=SchedulePolicy(
            slo_s=r.slo_s,
            max_staleness_s=r.max_staleness_s,
            gamma=r.gamma,
            epsilon=r.epsilon,
            alpha=r.ewma_alpha,
        ),
    )


def record(metrics: RepairMetrics, report: RotationReport) -> None:
    per_type: dict[str, Counter[str]] = {t: Counter() for t in report.epochs}
    for b in report.buckets:
        if b.interrupted is None:
            metrics.bucket_scanned(b.aggregate_type, content=b.content_checked)
        per_type[b.aggregate_type].update(f.kind.value for f in b.findings)
    for t, counts in per_type.items():
        metrics.set_counts(t, counts)
    for t, age in report.oldest_age_s.items():
        metrics.set_oldest_age(t, age)
    metrics.set_rotation_seconds(report.seconds)


async def run_repair(
    settings: Settings,
    projectors: Sequence[Projector],
    es_client: Any,
    *,
    dry_run: bool,
    daemon: bool,
    metrics: RepairMetrics,
    on_report: Callable[[RotationReport], None],
    progress: Callable[[BucketReport, int, int], None] | None = None,
    stop: asyncio.Event | None = None,
) -> RotationReport:
    """One rotation (`daemon` False) or ticks of the best buckets until `stop`; the last report."""
    pool = await open_pool(settings.mysql)
    try:
        wheel = Wheel(
            projectors=projectors,
            alias_for=settings.alias,
            truth=MysqlTruthSide(pool, sync_hash_column=settings.repair.mysql_sync_hash_column),
            index=EsIndexSide(es_client),
            state=MysqlWheelState(pool),
            healer=Healer(
                MysqlOutbox(pool), appends_per_s=settings.repair.appends_per_s, dry_run=dry_run
            ),
            config=wheel_config(settings),
            progress=progress,
        )
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
        await close_pool(pool)
