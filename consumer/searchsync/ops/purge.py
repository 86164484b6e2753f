"""`searchsync tombstones purge` (docs/design.md, "Tombstones and their purge"): each tombstone
older than the window is deleted from the write index with ``if_seq_no``/``if_primary_term``, so a
document changed since the scan answers 409 and is kept. The only DELETE searchsync sends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from searchsync.config import RetentionSettings
from searchsync.duration import format_duration
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.projection import format_timestamp
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.search.tombstones import DeleteResult

_FAILURE_SAMPLES = 20  # failures listed in a report (all are counted)
_FIELD_MAPPING = '{"properties": {"tombstoned_at": {"type": "date"}}}'


@dataclass(frozen=True, slots=True)
class PurgeProgress:
    alias: str
    scanned: int
    deleted: int
    changed: int


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
    minimum = retention.tombstone_minimum
    if older_than < minimum:
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
    progress: Callable[[PurgeProgress], None] | None = None,
) -> PurgeReport:
    """Purge the ``is_deleted`` documents of `alias`'s write index tombstoned before ``now -
    older_than``; `progress` gets the counts after each page. Raises `InvalidRequest` for a
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
    before = format_timestamp(now - older_than)
    report = PurgeReport(alias, index, older_than, before, dry_run)
    async for page in store.scan_tombstones(index, before, retention.purge_batch_size):
        report.scanned += len(page)
        if dry_run:
            room = _FAILURE_SAMPLES - len(report.candidates)
            report.candidates.extend(hit.doc_id for hit in page[: max(room, 0)])
        else:
            for outcome in await store.delete_tombstones(index, page):
                if outcome.result is DeleteResult.DELETED:
                    report.deleted += 1
                elif outcome.result is DeleteResult.CHANGED:
                    report.changed += 1
                elif outcome.result is DeleteResult.GONE:
                    report.gone += 1
                else:
                    report.failed += 1
                    if len(report.failures) < _FAILURE_SAMPLES:
                        report.failures.append((outcome.hit.doc_id, outcome.reason or "unknown"))
        if progress is not None:
            progress(PurgeProgress(alias, report.scanned, report.deleted, report.changed))
    return report
