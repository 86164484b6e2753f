"""The `GapAcks` (``search_offset_gap_ack``) contract: each case takes a `GapAcksWorld` and runs
unchanged against `FakeGapAcks` (tests/unit/test_mysql_contracts.py) and `MysqlGapAcks` on
MariaDB (tests/integration/test_mysql_contracts_real.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from searchsync.mysql.lineage import GapAck, GapAcks

from tests.fakes.gap_acks import FakeGapAcks

T0 = datetime(2026, 3, 1, 12, 0, 0, 750000, tzinfo=UTC)


class GapAcksWorld(Protocol):
    acks: GapAcks
    prefix: str
    """Every group a case uses starts with it."""


class FakeGapAcksWorld:
    def __init__(self) -> None:
        self.acks = FakeGapAcks()
        self.prefix = "c-"


def ack(w: GapAcksWorld, group: str, partition: int, *, at: int = 0) -> GapAck:
    return GapAck(
        group=f"{w.prefix}{group}",
        topic="outbox.event.wiki_page",
        partition=partition,
        committed=5,
        log_start=8,
        missing=3,
        accepted_by="ops@host",
        accepted_at=T0 + timedelta(seconds=at),
    )


async def acks_come_back_in_order_as_written(w: GapAcksWorld) -> None:
    first, second = ack(w, "g", 0), ack(w, "g", 1, at=5)
    await w.acks.record([first])
    await w.acks.record([second])
    assert await w.acks.of_group(first.group) == [first, second]


async def groups_are_apart_and_an_empty_record_writes_nothing(w: GapAcksWorld) -> None:
    mine, theirs = ack(w, "mine", 0), ack(w, "theirs", 0)
    await w.acks.record([mine, theirs])
    await w.acks.record([])
    assert await w.acks.of_group(mine.group) == [mine]
    assert await w.acks.of_group(f"{w.prefix}nobody") == []


GAP_ACKS_CASES: list[Callable[[GapAcksWorld], Awaitable[None]]] = [
    acks_come_back_in_order_as_written,
    groups_are_apart_and_an_empty_record_writes_nothing,
]
