"""`searchsync dlq summary` as a library call. A replay's outcome (docs/design.md, "DLQ replay
ledger"): ``dead_lettered_again`` when the replayed message is in the DLQ again; else ``unknown``
when the dead letter names no aggregate id or revision; else ``indexed`` when
``search_projection_state`` holds the aggregate at or above that revision; else ``pending``."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from searchsync.dlq.replays import ReplayEntry, ReplayLedger
from searchsync.dlq.scan import DlqEntry, DlqTopic, mark_replays


class ReplayOutcome(enum.StrEnum):
    INDEXED = "indexed"
    DEAD_LETTERED_AGAIN = "dead_lettered_again"
    PENDING = "pending"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ReplayStatus:
    """One replay and what happened to it. `dead_letter` is the DLQ (partition, offset) of the
    dead letter it became, `indexed_revision` what the projection state holds now."""

    replay: ReplayEntry
    outcome: ReplayOutcome
    indexed_revision: int | None
    dead_letter: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class DlqSummary:
    topic: str
    exists: bool
    total: int
    by_code: Mapping[str, int]
    by_type: Mapping[str, int]
    oldest_failed_at: datetime | None
    newest_failed_at: datetime | None
    oldest_timestamp: datetime | None
    newest_timestamp: datetime | None
    replayed: int  # dead letters still in the DLQ that were replayed at least once
    from_replays: int  # dead letters that are a replayed message failing again
    replays: tuple[ReplayStatus, ...]  # one per ledger row, oldest first

    @property
    def outcomes(self) -> dict[str, int]:
        return {o.value: sum(s.outcome is o for s in self.replays) for o in ReplayOutcome}

    def as_json(self) -> dict[str, Any]:
        times = ("oldest_failed_at", "newest_failed_at", "oldest_timestamp", "newest_timestamp")
        return {
            "dlq_topic": self.topic,
            "exists": self.exists,
            "total": self.total,
            "by_code": dict(self.by_code),
            "by_type": dict(self.by_type),
            **{n: None if (at := getattr(self, n)) is None else at.isoformat() for n in times},
            "replayed": self.replayed,
            "from_replays": self.from_replays,
            "replay_outcomes": self.outcomes,
            "replays": [status_json(s) for s in self.replays],
        }


def status_json(status: ReplayStatus) -> dict[str, Any]:
    r = status.replay
    return {
        "dlq_position": f"{r.dlq_topic}/{r.dlq_partition}/{r.dlq_offset}",
        "event_id": r.event_id,
        "aggregate_type": r.aggregate_type,
        "aggregate_id": r.aggregate_id,
        "source_revision": r.source_revision,
        "error_code": r.error_code,
        "replayed_at": r.replayed_at.isoformat(),
        "replayed_to": f"{r.replayed_to_topic}/{r.replayed_to_partition}/{r.replayed_to_offset}",
        "selection": dict(r.selection),
        "run_id": r.run_id,
        "outcome": status.outcome.value,
        "indexed_revision": status.indexed_revision,
        "dead_letter": None if status.dead_letter is None else list(status.dead_letter),
    }


def summary(dlq: DlqTopic, *, ledger: ReplayLedger | None) -> DlqSummary:
    """Read all of `dlq` and summarise it; with a `ledger`, also every recorded replay."""
    with dlq.scan() as found:
        exists, entries = found is not None, list(found or ())
    if not exists:  # no dead letter yet: nothing was replayed either (and MySQL is not asked)
        ledger = None
    rows = ledger.replays(dlq.name) if ledger is not None else []
    entries = mark_replays(entries, rows)
    statuses = _statuses(entries, rows, ledger) if ledger is not None else []
    failed = [e.record.last_failed_at for e in entries]
    stamps = [e.timestamp for e in entries if e.timestamp is not None]
    return DlqSummary(
        topic=dlq.name,
        exists=exists,
        total=len(entries),
        by_code=_counts(e.record.last_error_code for e in entries),
        by_type=_counts(e.record.aggregate_type or "(unknown)" for e in entries),
        oldest_failed_at=min(failed, default=None),
        newest_failed_at=max(failed, default=None),
        oldest_timestamp=min(stamps, default=None),
        newest_timestamp=max(stamps, default=None),
        replayed=sum(1 for e in entries if e.replayed),
        from_replays=sum(1 for e in entries if e.from_replay is not None),
        replays=tuple(statuses),
    )


def _statuses(
    entries: Sequence[DlqEntry], rows: Sequence[ReplayEntry], ledger: ReplayLedger
) -> list[ReplayStatus]:
    """The outcome of each ledger row (the module docstring's rules)."""
    again = {  # id(row) -> the dead letter it became
        id(e.from_replay): (e.partition, e.offset) for e in entries if e.from_replay is not None
    }
    for row in rows:
        if id(row) in again or row.replayed_to_offset is not None or row.event_id is None:
            continue
        for entry in entries:
            later = entry.timestamp is not None and entry.timestamp > row.replayed_at
            if later and entry.record.event_id == row.event_id:
                again[id(row)] = (entry.partition, entry.offset)
                break
    indexed = _indexed(rows, ledger)
    statuses = []
    for row in rows:
        revision = indexed.get((row.aggregate_type, row.aggregate_id))
        if id(row) in again:
            outcome = ReplayOutcome.DEAD_LETTERED_AGAIN
        elif row.source_revision is None or row.aggregate_id is None:
            outcome = ReplayOutcome.UNKNOWN
        elif revision is not None and revision >= row.source_revision:
            outcome = ReplayOutcome.INDEXED
        else:
            outcome = ReplayOutcome.PENDING
        statuses.append(ReplayStatus(row, outcome, revision, again.get(id(row))))
    return statuses


def _indexed(
    rows: Sequence[ReplayEntry], ledger: ReplayLedger
) -> dict[tuple[str | None, str | None], int]:
    """The indexed revision by (aggregate type, aggregate id), one query per type."""
    wanted: dict[str, list[str]] = {}
    for row in rows:
        if row.aggregate_type is not None and row.aggregate_id is not None:
            wanted.setdefault(row.aggregate_type, []).append(row.aggregate_id)
    return {
        (kind, aggregate_id): revision
        for kind, ids in sorted(wanted.items())
        for aggregate_id, revision in ledger.indexed_revisions(kind, ids).items()
    }


def _counts(values: Any) -> dict[str, int]:
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))
