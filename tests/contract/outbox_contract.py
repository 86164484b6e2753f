"""The `Outbox` contract: each case takes an `OutboxWorld` and runs unchanged against
`FakeOutbox` (tests/unit/test_mysql_contracts.py) and `MysqlOutbox` on MariaDB
(tests/integration/test_mysql_contracts_real.py).

The real table is shared and written to all the time: a case pages from the highest id it saw
before it appended, deletes only the ids it appended, and asserts on its own rows or on what
holds whatever else is there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

import pytest
from searchsync.clock import utc_now
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.pool import db_time

from tests.fakes.outbox import FakeOutbox

TYPE = "wiki_page"
SLACK = timedelta(seconds=5)  # between the case's clock and the database's


class OutboxWorld(Protocol):
    outbox: Outbox
    prefix: str
    """Every aggregate id a case appends starts with it."""

    async def last_id(self) -> int:
        """The highest row id now (0: none)."""
        ...

    async def row_id(self, aggregate_id: str) -> int:
        """The id of the last row appended for `aggregate_id`."""
        ...

    async def floor(self, aggregate_id: str) -> int | None:
        """The revision floor of `aggregate_id` (``search_revision_floor``), if any."""
        ...


class FakeOutboxWorld:
    def __init__(self, prefix: str = "c-") -> None:
        self.outbox = FakeOutbox()
        self.prefix = prefix

    async def last_id(self) -> int:
        return max(self.outbox.rows, default=0)

    async def row_id(self, aggregate_id: str) -> int:
        return max(i for i, e in self.outbox.appended.items() if e[1] == aggregate_id)

    async def floor(self, aggregate_id: str) -> int | None:
        return self.outbox.floors.get((TYPE, aggregate_id))


async def _append(w: OutboxWorld, suffix: str, revision: int = 1) -> int:
    """Append one REBUILD of ``prefix + suffix``; the id of its row."""
    await w.outbox.append_rebuild(TYPE, w.prefix + suffix, revision)
    return await w.row_id(w.prefix + suffix)


async def contract_an_append_is_the_next_row_created_now(w: OutboxWorld) -> None:
    start = db_time(utc_now())
    before = await w.last_id()
    mine = await _append(w, "a", 3)
    end = db_time(utc_now())
    assert mine > before and await w.last_id() >= mine
    [row] = await w.outbox.page(mine - 1, 1)
    assert row.id == mine and start - SLACK <= row.created_at <= end + SLACK


async def contract_page_respects_its_limit_and_order(w: OutboxWorld) -> None:
    ids = [await _append(w, f"p{n}", n + 1) for n in range(3)]
    first = await w.outbox.page(ids[0] - 1, 2)
    assert len(first) == 2 and first[0].id == ids[0] and ids[0] < first[1].id <= ids[1]
    rest = await w.outbox.page(first[-1].id, 2)
    assert rest and first[-1].id < rest[0].id <= ids[2]


async def contract_an_append_needs_a_positive_revision(w: OutboxWorld) -> None:
    with pytest.raises(ValueError):
        await w.outbox.append_rebuild(TYPE, w.prefix + "zero", 0)


async def contract_delete_range_deletes_only_rows_older_than_the_cutoff(w: OutboxWorld) -> None:
    mine = await _append(w, "d")
    long_ago = datetime(2001, 1, 1)
    assert await w.outbox.delete_range(mine, mine, long_ago) == 0
    assert [r.id for r in await w.outbox.page(mine - 1, 1)] == [mine]
    later = db_time(utc_now()) + timedelta(days=1)
    assert await w.outbox.delete_range(mine, mine, later) == 1
    assert await w.outbox.delete_range(mine, mine, later) == 0
    assert all(r.id != mine for r in await w.outbox.page(mine - 1, 1))


async def contract_stats_count_rows_and_know_the_oldest(w: OutboxWorld) -> None:
    mine = await _append(w, "s")
    [row] = await w.outbox.page(mine - 1, 1)
    count, oldest = await w.outbox.stats()
    assert count >= 1 and oldest is not None and oldest <= row.created_at


async def contract_an_orphan_append_raises_the_floor_and_appends(w: OutboxWorld) -> None:
    doc = w.prefix + "orphan"
    assert await w.floor(doc) is None
    before = await w.last_id()
    await w.outbox.append_orphan(TYPE, doc, 5)
    assert await w.floor(doc) == 5 and await w.row_id(doc) > before
    await w.outbox.append_orphan(TYPE, doc, 3)  # never lowers the floor
    assert await w.floor(doc) == 5
    await w.outbox.append_orphan(TYPE, doc, 8)
    assert await w.floor(doc) == 8


OUTBOX_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_an_append_is_the_next_row_created_now,
    contract_page_respects_its_limit_and_order,
    contract_an_append_needs_a_positive_revision,
    contract_delete_range_deletes_only_rows_older_than_the_cutoff,
    contract_stats_count_rows_and_know_the_oldest,
    contract_an_orphan_append_raises_the_floor_and_appends,
]
