"""`searchsync dlq inspect` and `replay` as library calls, and the selection both take
(docs/design.md, "DLQ replay ledger"). A replay re-produces each original to its topic and
partition with ``searchsync-replayed-from: <dlq topic>/<partition>/<offset>``, skips what the
ledger has (unless ``again``) and records it once acknowledged; a crash in between replays it
again, harmless under external versions."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from searchsync.clock import utc_now
from searchsync.dlq.record import REPLAYED_FROM_HEADER, DlqRecord
from searchsync.dlq.replays import ReplayEntry, ReplayLedger
from searchsync.dlq.scan import DlqEntry, DlqTopic, mark_replays
from searchsync.errors import (
    DeliveryFailed,
    DeliveryTimeout,
    ErrorCode,
    InvalidRequest,
    TransientError,
)
from searchsync.kafka.producer import ProducerFactory, ProducerPort, acknowledged, produce_and_wait

_EPOCH = datetime.fromtimestamp(0, UTC)  # where a dead letter without a timestamp sorts


def parse_utc(text: str) -> datetime:
    """An ISO-8601 time with an explicit UTC offset (``2026-11-30T12:00:00Z``), as aware UTC.
    Raises `InvalidRequest` for anything else: a time without an offset is ambiguous."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRequest(
            f"expected an ISO-8601 UTC time like 2026-11-30T12:00:00Z, got {text!r}"
        ) from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise InvalidRequest(f"{text!r} has no time zone: add Z (UTC) or an offset like +00:00")
    return at.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class DlqFilter:
    """Which dead letters an operator means: the record's error code, aggregate type and id,
    event id and the time it last failed (``since`` inclusive, ``until`` exclusive, both
    timezone-aware); None matches all. `selection` is the canonical form a replay records in the
    ledger, so two replays with the same flags record the same selection."""

    error_code: str | None = None
    aggregate_type: str | None = None
    aggregate_id: str | None = None
    event_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        for name, at in (("since", self.since), ("until", self.until)):
            if at is not None and at.utcoffset() is None:
                raise InvalidRequest(f"--{name} must name a time zone")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InvalidRequest(
                f"--since {self.since.isoformat()} is not before --until {self.until.isoformat()}"
            )

    def matches(self, record: DlqRecord) -> bool:
        return (
            (self.error_code is None or record.last_error_code == self.error_code)
            and (self.aggregate_type is None or record.aggregate_type == self.aggregate_type)
            and (self.aggregate_id is None or record.aggregate_id == self.aggregate_id)
            and (self.event_id is None or record.event_id == self.event_id)
            and (self.since is None or record.last_failed_at >= self.since)
            and (self.until is None or record.last_failed_at < self.until)
        )

    def selection(self) -> dict[str, Any]:
        """The filters that are set, as JSON-ready values (times in UTC ISO-8601)."""
        return {
            name: value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value
            for name, value in asdict(self).items()
            if value is not None
        }


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay did (or, with `dry_run`, would do)."""

    dry_run: bool
    run_id: str
    selection: Mapping[str, Any]
    skipped: int  # read but not selected by the filters
    replayed: tuple[DlqEntry, ...]
    already_replayed: tuple[DlqEntry, ...]  # selected, but the ledger has them (no `again`)

    @property
    def scanned(self) -> int:
        """How many dead letters were read."""
        return self.skipped + len(self.replayed) + len(self.already_replayed)

    @property
    def nothing_new(self) -> bool:
        """The selection was replayed before and nothing new matches it."""
        return not self.replayed and bool(self.already_replayed)


def inspect(
    dlq: DlqTopic,
    *,
    limit: int,
    from_beginning: bool,
    selection: DlqFilter | None = None,
    ledger: ReplayLedger | None = None,
) -> list[DlqEntry]:
    """Up to `limit` dead letters that `selection` picks, without committing anything: the oldest
    with `from_beginning`, else the newest (by timestamp, newest last). With a `ledger`, entries
    carry their replays. No topic yet: an empty list."""
    chosen = selection or DlqFilter()
    if limit < 1:
        return []
    found: list[DlqEntry] = []
    with dlq.scan(limit if chosen == DlqFilter() and not from_beginning else None) as entries:
        for entry in entries or ():
            if chosen.matches(entry.record):
                found.append(entry)
                if from_beginning and len(found) >= limit:
                    break
    if not from_beginning:
        found.sort(key=lambda e: (e.timestamp or _EPOCH, e.partition, e.offset))
        found = found[-limit:]
    if ledger is None or not found:  # no dead letter: MySQL is not asked
        return found
    return mark_replays(found, ledger.replays(dlq.name))


def replay(
    dlq: DlqTopic,
    *,
    ledger: ReplayLedger,
    dry_run: bool,
    selection: DlqFilter | None = None,
    again: bool = False,
    limit: int | None = None,
    producer_factory: ProducerFactory | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> ReplayReport:
    """Re-produce the selected dead letters the ledger has not seen replayed (all with `again`).
    Stops at the first failed re-produce (`TransientError` REPLAY_FAILED / REPLAY_TIMEOUT); what
    was replayed before it is in the ledger, so running it again continues. Do not run two
    replays of one DLQ at the same time."""
    chosen = selection or DlqFilter()
    run_id, selected = uuid.uuid4().hex, chosen.selection()
    replayed: list[DlqEntry] = []
    already: list[DlqEntry] = []
    skipped = 0
    producer = None
    try:
        with dlq.scan() as entries:
            if entries is None:
                return ReplayReport(dry_run, run_id, selected, 0, (), ())
            rows = ledger.replays(dlq.name)
            done = {(e.dlq_partition, e.dlq_offset) for e in rows}
            producer = None if dry_run else acknowledged(dlq.config, producer_factory)
            for entry in entries:
                if not chosen.matches(entry.record):
                    skipped += 1
                    continue
                if (entry.partition, entry.offset) in done and not again:
                    already.append(entry)
                    continue
                if producer is not None:
                    ledger.record(_replay_one(producer, dlq, entry, selected, run_id, clock))
                replayed.append(entry)
                if limit is not None and len(replayed) >= limit:
                    break
    finally:
        if producer is not None:
            producer.flush(dlq.timeout_s)
    marked = tuple(mark_replays(already, rows))
    return ReplayReport(dry_run, run_id, selected, skipped, tuple(replayed), marked)


def _replay_one(
    producer: ProducerPort,
    dlq: DlqTopic,
    entry: DlqEntry,
    selection: Mapping[str, Any],
    run_id: str,
    clock: Callable[[], datetime],
) -> ReplayEntry:
    """Send one dead letter's original back and return its ledger row (written by the caller)."""
    record = entry.record
    origin = f"{dlq.name}/{entry.partition}/{entry.offset}"
    try:
        offset = produce_and_wait(
            producer,
            record.original_topic,
            record.payload,
            record.original_key,
            partition=record.original_partition,
            headers=[(REPLAYED_FROM_HEADER, origin.encode())],
            timeout_s=dlq.timeout_s,
        )
    except DeliveryTimeout as exc:
        raise TransientError(ErrorCode.REPLAY_TIMEOUT, f"no acknowledgement for {origin}") from exc
    except DeliveryFailed as exc:
        raise TransientError(ErrorCode.REPLAY_FAILED, f"{origin}: {exc}") from exc
    return ReplayEntry(
        dlq_topic=dlq.name,
        dlq_partition=entry.partition,
        dlq_offset=entry.offset,
        event_id=record.event_id,
        aggregate_type=record.aggregate_type,
        aggregate_id=record.aggregate_id,
        source_revision=record.source_revision,
        error_code=record.last_error_code,
        replayed_to_topic=record.original_topic,
        replayed_to_partition=record.original_partition,
        replayed_to_offset=offset,
        selection=selection,
        run_id=run_id,
        replayed_at=clock(),
    )
