"""The `Truth` contract: each case takes a `TruthWorld` and runs unchanged against `FakeTruth`
(tests/unit/test_mysql_contracts.py) and `MysqlTruth` on MariaDB
(tests/integration/test_mysql_contracts_real.py).

A world's table may hold other rows than the case's (the real one is shared): every id a case
writes starts with the world's `prefix`, and a case only asserts on those, or on what holds
whatever else is there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest
from searchsync.mysql.truth import Truth, TruthEntry
from searchsync.projection import Row, sync_hash, wiki_page
from searchsync.types import HASH_SPACE, BucketCursor

from tests.fakes.truth import FakeTruth

PROJECTOR = wiki_page.projector()
TYPE = PROJECTOR.aggregate_type
DELETED_AT = datetime(2026, 1, 2, 3, 4, 5)


class TruthWorld(Protocol):
    truth: Truth
    prefix: str
    """Every id a case writes starts with it; the `truth` pages buckets of these ids only."""

    async def put(self, row: Row) -> None:
        """Store one wiki_page row (all its columns)."""
        ...

    async def put_floor(self, aggregate_id: str, revision: int) -> None:
        """Record a hard delete of `aggregate_id` at `revision` (``search_revision_floor``)."""
        ...


class FakeTruthWorld:
    def __init__(self, prefix: str = "c-") -> None:
        self.truth = FakeTruth()
        self.prefix = prefix

    async def put(self, row: Row) -> None:
        self.truth.put(row, table=PROJECTOR.table)

    async def put_floor(self, aggregate_id: str, revision: int) -> None:
        self.truth.put_floor(TYPE, aggregate_id, revision)


def row(w: TruthWorld, suffix: str, revision: int = 1, *, deleted: bool = False) -> Row:
    return {
        "id": w.prefix + suffix,
        "title": f"齐夏 {suffix} r{revision}",
        "content": f"content of {suffix}",
        "relations_json": "{}",
        "revision": revision,
        "deleted_at": DELETED_AT if deleted else None,
    }


def _seen(r: Row) -> tuple[Any, ...]:
    """What a case compares of a row (the driver's types of the other columns may differ)."""
    return (r["id"], int(r["revision"]), r["title"], r["deleted_at"] is not None)


async def _put_rows(w: TruthWorld, *suffixes: str) -> list[Row]:
    rows = [row(w, s, n + 1, deleted=n % 3 == 2) for n, s in enumerate(suffixes)]
    for r in rows:
        await w.put(r)
    return rows


async def contract_rows_by_id_reads_rows_and_skips_missing_ids(w: TruthWorld) -> None:
    rows = await _put_rows(w, "a", "b", "c")
    ids = [r["id"] for r in rows]
    got = await w.truth.rows_by_id(PROJECTOR, [*ids, w.prefix + "missing", ids[0]])
    assert sorted(got) == sorted(ids)
    assert {_seen(r) for r in got.values()} == {_seen(r) for r in rows}
    assert set(got[ids[0]]) == set(PROJECTOR.columns)
    assert got[ids[2]]["deleted_at"] is not None  # soft-deleted rows are rows
    primary = await w.truth.rows_by_id(PROJECTOR, ids, primary=True)
    assert {_seen(r) for r in primary.values()} == {_seen(r) for r in rows}
    assert await w.truth.rows_by_id(PROJECTOR, []) == {}


async def contract_ids_must_be_a_sequence_not_a_string(w: TruthWorld) -> None:
    with pytest.raises(TypeError):
        await w.truth.rows_by_id(PROJECTOR, w.prefix + "a")
    with pytest.raises(TypeError):
        await w.truth.revision_floors(TYPE, w.prefix + "a")


async def contract_revision_floors_of_hard_deleted_ids(w: TruthWorld) -> None:
    await w.put_floor(w.prefix + "gone", 7)
    await w.put_floor(w.prefix + "old", 2)
    ids = [w.prefix + "gone", w.prefix + "old", w.prefix + "never"]
    assert await w.truth.revision_floors(TYPE, ids) == {w.prefix + "gone": 7, w.prefix + "old": 2}
    assert await w.truth.revision_floors(TYPE, ids, primary=True) == {
        w.prefix + "gone": 7,
        w.prefix + "old": 2,
    }
    assert await w.truth.revision_floors("no_such_type", ids) == {}


async def contract_scan_pages_by_id_without_gaps_or_repeats(w: TruthWorld) -> None:
    rows = await _put_rows(w, "e", "a", "d", "b", "c")
    want = sorted(r["id"] for r in rows)
    got: list[str] = []
    after: str | None = w.prefix  # every id of the case sorts after its prefix, and first
    while True:
        page = await w.truth.scan(PROJECTOR, after, 2)
        assert len(page) <= 2
        ids = [str(r["id"]) for r in page]
        assert ids == sorted(ids) and all(after is None or i > after for i in ids)
        got.extend(i for i in ids if i.startswith(w.prefix))
        if not page or not ids[-1].startswith(w.prefix):
            break
        after = ids[-1]
    assert got == want
    first = await w.truth.scan(PROJECTOR, None, 3)
    assert 1 <= len(first) <= 3
    assert [r["id"] for r in first] == sorted(r["id"] for r in first)
    with pytest.raises(ValueError):
        await w.truth.scan(PROJECTOR, None, 0)


async def contract_floor_page_walks_the_floors_by_id(w: TruthWorld) -> None:
    for n, suffix in enumerate(["c", "a", "b"]):
        await w.put_floor(w.prefix + suffix, n + 2)
    got: list[tuple[str, int]] = []
    after = w.prefix
    while True:
        page = await w.truth.floor_page(TYPE, after, 2)
        assert len(page) <= 2 and [i for i, _ in page] == sorted(i for i, _ in page)
        got.extend(p for p in page if p[0].startswith(w.prefix))
        if not page or not page[-1][0].startswith(w.prefix):
            break
        after = page[-1][0]
    p = w.prefix
    assert got == [(p + "a", 3), (p + "b", 4), (p + "c", 2)]
    with pytest.raises(ValueError):
        await w.truth.floor_page(TYPE, None, 0)


async def contract_count_counts_every_row(w: TruthWorld) -> None:
    await _put_rows(w, "a", "b", "c")
    assert await w.truth.count(PROJECTOR) >= 3


async def _bucket(
    w: TruthWorld, lo: int, hi: int, *, content: bool, purged_before: datetime | None = None
) -> list[TruthEntry]:
    out: list[TruthEntry] = []
    after: BucketCursor | None = None
    while page := await w.truth.bucket_page(
        PROJECTOR, lo, hi, after, 2, content=content, purged_before=purged_before
    ):
        assert len(page) <= 2
        out.extend(page)
        after = (sync_hash(TYPE, page[-1].id), page[-1].id)
    return out


async def contract_bucket_pages_hold_each_row_of_the_range_once(w: TruthWorld) -> None:
    rows = await _put_rows(w, "a", "b", "c", "d", "e", "f", "g")
    light = await _bucket(w, 0, HASH_SPACE, content=False)
    assert sorted((e.id, e.revision, e.deleted) for e in light) == sorted(
        (r["id"], r["revision"], r["deleted_at"] is not None) for r in rows
    )
    assert all(e.row is None for e in light)
    half = HASH_SPACE // 2
    low, high = (
        await _bucket(w, 0, half, content=False),
        await _bucket(w, half, HASH_SPACE, content=False),
    )
    assert all(sync_hash(TYPE, e.id) < half for e in low)
    assert all(sync_hash(TYPE, e.id) >= half for e in high)
    assert sorted(e.id for e in low + high) == sorted(e.id for e in light)
    full = await _bucket(w, 0, HASH_SPACE, content=True)
    assert {e.id: _seen(e.row) for e in full if e.row is not None} == {
        str(r["id"]): _seen(r) for r in rows
    }


async def contract_bucket_pages_say_which_deleted_rows_are_past_the_cutoff(
    w: TruthWorld,
) -> None:
    """A soft-deleted row is purged when its ``deleted_at`` (a naive DATETIME: UTC) is before
    the cutoff, in light pages and in whole ones; never without a cutoff or when live."""
    rows = await _put_rows(w, "a", "b", "c", "d", "e", "f")
    deleted = {r["id"] for r in rows if r["deleted_at"] is not None}
    assert deleted
    at = DELETED_AT.replace(tzinfo=UTC)
    for before, purged in [(at + timedelta(seconds=1), deleted), (at, set()), (None, set())]:
        for content in (False, True):
            got = await _bucket(w, 0, HASH_SPACE, content=content, purged_before=before)
            assert {e.id for e in got if e.deleted} == deleted
            assert {e.id for e in got if e.purged} == purged, (before, content)


TRUTH_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_rows_by_id_reads_rows_and_skips_missing_ids,
    contract_ids_must_be_a_sequence_not_a_string,
    contract_revision_floors_of_hard_deleted_ids,
    contract_scan_pages_by_id_without_gaps_or_repeats,
    contract_floor_page_walks_the_floors_by_id,
    contract_count_counts_every_row,
    contract_bucket_pages_hold_each_row_of_the_range_once,
    contract_bucket_pages_say_which_deleted_rows_are_past_the_cutoff,
]
