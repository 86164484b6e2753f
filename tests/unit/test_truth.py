"""The truth port in memory: rows by id, revision floors, keyset scan (no SQL anywhere).

tests/integration/test_truth_state.py holds `MysqlTruth` to the same behaviour on MariaDB.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.mysql.truth import MysqlTruth, Row
from searchsync.projection import Projector, wiki_page

from tests.fakes.truth import FakeTruth

T0 = datetime(2030, 1, 1)
PAGE = wiki_page.projector()


async def test_rows_by_id_returns_present_rows_and_models_a_lagging_replica() -> None:
    truth = FakeTruth()
    truth.put({"id": "a", "revision": 1, "deleted_at": None}, table="wiki_page")
    truth.put({"id": "b", "revision": 2, "deleted_at": T0}, table="wiki_page")
    truth.put({"id": "a", "revision": 3, "deleted_at": None}, table="wiki_page", primary_only=True)
    truth.put({"id": "c", "revision": 9}, table="other_table")

    replica = await truth.rows_by_id(PAGE, ["a", "missing", "b", "a", "c"])
    primary = await truth.rows_by_id(PAGE, ["a"], primary=True)

    assert {k: v["revision"] for k, v in replica.items()} == {"a": 1, "b": 2}
    assert replica["b"]["deleted_at"] == T0  # soft-deleted rows are rows too
    assert primary["a"]["revision"] == 3
    assert truth.calls == [(("a", "missing", "b", "c"), False), (("a",), True)]


async def test_rows_by_id_returns_the_projectors_columns_only() -> None:
    truth = FakeTruth()
    truth.put({"id": "a", "revision": 1, "title": "t", "secret": "x"}, table="wiki_page")
    [row] = (await truth.rows_by_id(PAGE, ["a"])).values()
    assert set(row) == {"id", "revision", "title"}


async def test_revision_floors_are_per_aggregate_type() -> None:
    truth = FakeTruth()
    truth.put_floor("wiki_page", "gone", 7)
    truth.put_floor("note", "gone", 99)
    truth.put_floor("wiki_page", "other", 3)
    assert await truth.revision_floors("wiki_page", ["gone", "never", "gone"]) == {"gone": 7}
    assert await truth.revision_floors("note", ["gone"], primary=True) == {"gone": 99}
    assert await truth.revision_floors("wiki_page", []) == {}


async def test_ids_must_be_a_sequence_and_limits_positive() -> None:
    truth = FakeTruth()
    with pytest.raises(TypeError):
        await truth.rows_by_id(PAGE, "abc")
    with pytest.raises(TypeError):
        await truth.revision_floors("wiki_page", "abc")
    with pytest.raises(ValueError):
        await truth.scan(PAGE, None, 0)
    with pytest.raises(ValueError):
        MysqlTruth(pool=None, batch_size=0)


async def test_scan_pages_by_id_after_the_last_one() -> None:
    truth = FakeTruth()
    for row_id in ("c", "a", "e", "b", "d"):
        truth.put({"id": row_id, "revision": 1}, table="wiki_page")
    first = await truth.scan(PAGE, None, 2)
    second = await truth.scan(PAGE, "b", 2)
    last = await truth.scan(PAGE, "d", 2)
    assert [r["id"] for r in first] == ["a", "b"]
    assert [r["id"] for r in second] == ["c", "d"]
    assert [r["id"] for r in last] == ["e"]
    assert await truth.scan(PAGE, "e", 2) == []
    assert await truth.scan(PAGE, "bb", 10) == second + last


async def _scan_all(truth: FakeTruth, projector: Projector, limit: int) -> list[Row]:
    out: list[Row] = []
    after: str | None = None
    while page := await truth.scan(projector, after, limit):
        assert len(page) <= limit
        out.extend(page)
        after = str(page[-1]["id"])
    return out


@given(
    ids=st.sets(st.text(min_size=1, max_size=6), max_size=40),
    limit=st.integers(1, 12),
)
def test_a_full_scan_reads_every_row_once_in_id_order(ids: set[str], limit: int) -> None:
    truth = FakeTruth()
    for row_id in ids:
        truth.put({"id": row_id, "revision": 1}, table="wiki_page")
    rows = asyncio.run(_scan_all(truth, PAGE, limit))
    assert [r["id"] for r in rows] == sorted(ids)
