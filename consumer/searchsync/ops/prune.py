"""`searchsync outbox prune` (docs/design.md, "Outbox pruning"): captured ``search_outbox`` rows
older than a window, walked by primary key, one bounded DELETE (age included) per page of old
rows, stopping at the first page holding a younger row."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from searchsync.config import RetentionSettings
from searchsync.duration import format_duration
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.kafka.connect import ConnectorStatus
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.pool import db_time


class ConnectorState(Protocol):
    """The connector's state (`searchsync.kafka.connect.ConnectClient`)."""

    async def status(self, name: str | None = None) -> ConnectorStatus: ...


@dataclass(frozen=True, slots=True)
class PruneProgress:
    batches: int
    deleted: int
    last_id: int


@dataclass(slots=True)
class PruneReport:
    older_than: timedelta
    created_before: datetime  # naive UTC, as created_at holds it
    dry_run: bool
    connector: ConnectorStatus | None  # None when the relay publishes the outbox
    scanned: int = 0
    deleted: int = 0  # with dry_run: the rows a real run would delete
    batches: int = 0
    last_id: int | None = None  # the highest id looked at

    def as_json(self) -> dict[str, Any]:
        return {
            "older_than": format_duration(self.older_than),
            "created_before": self.created_before.isoformat() + "Z",
            "dry_run": self.dry_run,
            "connector": None if self.connector is None else self.connector.as_json(),
            "scanned": self.scanned,
            "deleted" if not self.dry_run else "would_delete": self.deleted,
            "batches": self.batches,
            "last_id": self.last_id,
        }


def check_outbox_window(retention: RetentionSettings, older_than: timedelta) -> None:
    """Refuse a window below ``retention.min_outbox_age`` (`InvalidRequest`)."""
    if older_than < retention.min_outbox_age:
        raise InvalidRequest(
            f"--older-than {format_duration(older_than)} is shorter than "
            f"retention.min_outbox_age ({format_duration(retention.min_outbox_age)}): "
            "rows that young may not be captured by Debezium yet; pass a longer window"
        )


async def prune_outbox(
    rows: Outbox,
    connect: ConnectorState,
    retention: RetentionSettings,
    older_than: timedelta,
    *,
    now: datetime,
    dry_run: bool = False,
    after_id: int = 0,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    progress: Callable[[PruneProgress], None] | None = None,
    published_only: bool = False,
) -> PruneReport:
    """Prune the outbox rows created before ``now - older_than``, walking from the first id above
    `after_id` (0: the whole table), pausing ``prune_pause_s`` between two DELETEs; `progress`
    gets the counts after each. Raises `InvalidRequest` for a window below ``min_outbox_age`` and
    `OperationRefused` when the connector is not RUNNING. `published_only` (the relay publishes
    the outbox, docs/relay.md): delete only PUBLISHED rows, and ask no connector."""
    check_outbox_window(retention, older_than)
    status = None if published_only else await connect.status()
    if status is not None and not status.running:
        raise OperationRefused(
            "the outbox connector is not RUNNING ("
            + "; ".join(status.problems())
            + "): pruning now could remove rows it has not captured; fix or resume the "
            "connector first (GET /connectors/<name>/status on Kafka Connect)"
        )
    cutoff = db_time(now - older_than)
    report = PruneReport(older_than, cutoff, dry_run, status)
    after = after_id
    while True:
        page = await rows.page(after, retention.prune_batch_size)
        if not page:
            break
        report.scanned += len(page)
        report.last_id = after = page[-1].id
        old = [row for row in page if row.created_at < cutoff]
        doomed = sum(1 for row in old if not published_only or row.status == "PUBLISHED")
        if doomed:
            if report.batches:
                await sleep(retention.prune_pause_s)
            report.batches += 1
            if dry_run:
                report.deleted += doomed
            else:
                report.deleted += await rows.delete_range(
                    page[0].id, page[-1].id, cutoff, published_only=published_only
                )
            if progress is not None:
                progress(PruneProgress(report.batches, report.deleted, after))
        if len(old) < len(page):  # a young row: the rest of the table is younger still
            break
    return report
