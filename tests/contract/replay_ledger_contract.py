"""The `ReplayLedger` (``search_dlq_replay``) contract: each case takes a `ReplayLedgerWorld` and
runs unchanged against `FakeReplayLedger` (tests/unit/test_mysql_contracts.py) and
`MysqlReplayLedger` on MariaDB (tests/integration/test_mysql_contracts_real.py). The ledger is
blocking, so the cases are plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from searchsync.dlq.replays import ReplayEntry, ReplayLedger

from tests.fakes.replay_ledger import FakeReplayLedger

T0 = datetime(2026, 3, 1, 12, 0, 0, 500000, tzinfo=UTC)


class ReplayLedgerWorld(Protocol):
    ledger: ReplayLedger
    prefix: str
    """Every DLQ topic and aggregate id a case uses starts with it."""

    def mark_indexed(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        """Record in the projection state that `revision` of the aggregate was indexed."""
        ...


class FakeReplayLedgerWorld:
    def __init__(self, prefix: str = "c-") -> None:
        self.ledger = FakeReplayLedger()
        self.prefix = prefix

    def mark_indexed(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        self.ledger.indexed[(aggregate_type, aggregate_id)] = revision


def entry(w: ReplayLedgerWorld, offset: int, *, at: int = 0, **changes: Any) -> ReplayEntry:
    fields: dict[str, Any] = {
        "dlq_topic": w.prefix + "dlq",
        "dlq_partition": 1,
        "dlq_offset": offset,
        "event_id": f"e-{offset}",
        "aggregate_type": "wiki_page",
        "aggregate_id": f"{w.prefix}p{offset}",
        "source_revision": offset + 1,
        "error_code": "PROJECTION_FAILED",
        "replayed_to_topic": "outbox.event.wiki_page",
        "replayed_to_partition": 2,
        "replayed_to_offset": 100 + offset,
        "selection": {"error_code": ["PROJECTION_FAILED"], "since": "齐夏"},
        "run_id": "r" * 32,
        "replayed_at": T0 + timedelta(seconds=at),
    }
    fields.update(changes)
    return ReplayEntry(**fields)


def contract_recorded_replays_come_back_oldest_first(w: ReplayLedgerWorld) -> None:
    assert w.ledger.replays(w.prefix + "dlq") == []
    late, early = entry(w, 7, at=9), entry(w, 3, at=1)
    w.ledger.record(late)
    w.ledger.record(early)
    w.ledger.record(entry(w, 1, dlq_topic=w.prefix + "other"))
    assert w.ledger.replays(w.prefix + "dlq") == [early, late]
    assert (early.dlq_topic, early.dlq_partition, early.dlq_offset) == (w.prefix + "dlq", 1, 3)


def contract_optional_fields_stay_empty(w: ReplayLedgerWorld) -> None:
    bare = entry(
        w,
        5,
        event_id=None,
        aggregate_type=None,
        aggregate_id=None,
        source_revision=None,
        replayed_to_offset=None,
        selection={},
    )
    w.ledger.record(bare)
    [got] = w.ledger.replays(w.prefix + "dlq")
    assert got == bare and got.replayed_to_offset is None


def contract_indexed_revisions_read_the_projection_state(w: ReplayLedgerWorld) -> None:
    done, other = w.prefix + "done", w.prefix + "other"
    w.mark_indexed("wiki_page", done, 4)
    w.mark_indexed("wiki_page", other, 2)
    ids = [done, w.prefix + "never", done]
    assert w.ledger.indexed_revisions("wiki_page", ids) == {done: 4}
    assert w.ledger.indexed_revisions("wiki_page", []) == {}


REPLAY_LEDGER_CASES: list[Callable[[Any], None]] = [
    contract_recorded_replays_come_back_oldest_first,
    contract_optional_fields_stay_empty,
    contract_indexed_revisions_read_the_projection_state,
]
