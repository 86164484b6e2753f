"""The retention jobs.

`searchsync tombstones purge` (docs/design.md, "Tombstones and their purge"): each tombstone
older than the window is deleted from the write index with ``if_seq_no``/``if_primary_term``, so a
document changed since the scan answers 409 and is kept. The only DELETE searchsync sends.

`searchsync outbox prune` (docs/design.md, "Outbox pruning"): captured ``search_outbox`` rows
older than a window, walked by primary key, one bounded DELETE (age included) per page of old
rows, stopping at the first page holding a younger row.

`progress` gets a copy of the report after each page (or each DELETE)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from searchsync.config import RetentionSettings
from searchsync.duration import format_duration
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.kafka.connect import ConnectorState, ConnectorStatus
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.pool import db_time
from searchsync.projection import format_timestamp
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.search.tombstones import DeleteResult

_FAILURE_SAMPLES = 20  # failures listed in a report (all are counted)
_FIELD_MAPPING = '{"properties": {"tombstoned_at": {"type": "date"}}}'


@dataclass(slots=True)
class PurgeReport:
    """What one purge of one alias did (or, with `dry_run`, would do)."""

    alias: str
    index: str
    older_than: timedelta
    before: str  # the cutoff, as tombstoned_at is compared with it
    dry_run: bool
    scanned: int = 0
    deleted: int = 0
    changed: int = 0
    gone: int = 0
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (id, reason), a sample
    candidates: list[str] = field(default_factory=list)  # dry run: the first ids found

    def as_json(self) -> dict[str, Any]:
        return {
            "alias": self.alias,
            "index": self.index,
            "older_than": format_duration(self.older_than),
            "tombstoned_before": self.before,
            "dry_run": self.dry_run,
            "scanned": self.scanned,
            "deleted": self.deleted,
            "skipped_changed_meanwhile": self.changed,
            "already_gone": self.gone,
            "failed": self.failed,
            "failures": [{"id": i, "reason": r} for i, r in self.failures],
            "candidates": self.candidates,
        }


def check_window(retention: RetentionSettings, older_than: timedelta) -> None:
    """Refuse a window shorter than the configured minimum (`InvalidRequest`, exit 2)."""
    if older_than < (minimum := retention.tombstone_minimum):
        raise InvalidRequest(
            f"--older-than {format_duration(older_than)} is shorter than the minimum "
            f"tombstone age {format_duration(minimum)} ({retention.tombstone_formula()}): "
            "a younger tombstone may still meet a late event; pass a longer window, or change "
            "[retention] if the delays it is made of are really shorter"
        )


async def purge_tombstones(
    store: SearchEngine,
    admin: IndexAdmin,
    alias: str,
    retention: RetentionSettings,
    older_than: timedelta,
    *,
    now: datetime,
    dry_run: bool = False,
    progress: Callable[[PurgeReport], None] | None = None,
) -> PurgeReport:
    """Purge the ``is_deleted`` documents of `alias`'s write index tombstoned before ``now -
    older_than``. Raises `InvalidRequest` for a
    window below the minimum, `OperationRefused` when the alias has no write index or the index
    does not map ``tombstoned_at``."""
    check_window(retention, older_than)
    target = await admin.write_index(alias)
    if target is None:
        raise OperationRefused(
            f"alias {alias} has no write index: nothing to purge (run `searchsync index init`)"
        )
    index = target.index
    if not await store.maps_tombstoned_at(index):
        raise OperationRefused(
            f"index {index} does not map tombstoned_at, so its tombstones carry no age: add "
            f"it with PUT {index}/_mapping {_FIELD_MAPPING} (tombstones written before that "
            "have no age and are kept)"
        )
    report = PurgeReport(alias, index, older_than, format_timestamp(now - older_than), dry_run)
    async for page in store.scan_tombstones(index, report.before, retention.purge_batch_size):
        report.scanned += len(page)
        if dry_run:
            room = _FAILURE_SAMPLES - len(report.candidates)
            report.candidates.extend(hit.doc_id for hit in page[: max(room, 0)])
        else:
            for outcome in await store.delete_tombstones(index, page):
                counted = outcome.result.value  # the report's count of it has the same name
                setattr(report, counted, getattr(report, counted) + 1)
                failed = outcome.result is DeleteResult.FAILED
                if failed and len(report.failures) < _FAILURE_SAMPLES:
                    report.failures.append((outcome.hit.doc_id, outcome.reason or "unknown"))
        if progress is not None:
            progress(replace(report))
    return report


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
    progress: Callable[[PruneReport], None] | None = None,
    published_only: bool = False,
) -> PruneReport:
    """Prune the outbox rows created before ``now - older_than``, walking from the first id above
    `after_id` (0: the whole table), pausing ``prune_pause_s`` between two DELETEs. Raises
    `InvalidRequest` for a window below ``min_outbox_age`` and `OperationRefused` when the
    connector is not RUNNING. `published_only` (the relay publishes the outbox, docs/relay.md):
    delete only PUBLISHED rows, and ask no connector."""
    check_outbox_window(retention, older_than)
    status = None if published_only else await connect.status()
    if status is not None and not status.running:
        raise OperationRefused(
            f"the outbox connector is not RUNNING ({'; '.join(status.problems())}): pruning now"
            " could remove rows it has not captured; fix or resume the connector first"
            " (GET /connectors/<name>/status on Kafka Connect)"
        )
    cutoff = db_time(now - older_than)
    report = PruneReport(older_than, cutoff, dry_run, status)
    while True:
        page = await rows.page(after_id, retention.prune_batch_size)
        if not page:
            break
        report.scanned += len(page)
        report.last_id = after_id = page[-1].id
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
                progress(replace(report))
        if len(old) < len(page):  # a young row: the rest of the table is younger still
            break
    return report
