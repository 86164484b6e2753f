"""The truth reader and the projection-state writer on the real MariaDB, as the consumer user.

Truth rows are written through `PageWriter` (so they also produce outbox events, with fresh
ids); state rows use their own aggregate type ``itest_state`` and are deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import aiomysql
import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from searchsync.errors import MAX_ERROR_MESSAGE, ConfigError, ErrorCode, TransientError
from searchsync.mysql.pool import create_pool, transaction
from searchsync.mysql.projection_state import StateUpdate
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import wiki_page
from searchsync.writer import PageWriter

from tests.contract.projection_state_contract import failing
from tests.fakes.projection_state import ProjectionState, merge
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget

# The MariaDB fixtures, made visible to pytest in this module (see conftest_mysql's docstring).
mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

STATE_TYPE = "itest_state"
T0 = datetime(2030, 1, 1, 12, 0, 0)


class StepClock:
    """Each call is one second after the previous one (DATETIME(6) keeps microseconds)."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest_asyncio.fixture(loop_scope="session")  # the pools live on the session loop
async def state_prefix(consumer_pool: aiomysql.Pool, id_prefix: str) -> AsyncIterator[str]:
    yield id_prefix
    async with transaction(consumer_pool) as conn, conn.cursor() as cur:
        await cur.execute(
            "DELETE FROM search_projection_state"
            " WHERE aggregate_type = %s AND aggregate_id LIKE %s",
            (STATE_TYPE, f"{id_prefix}%"),
        )


# ---------------------------------------------------------------------------------- truth


PAGE = wiki_page.projector()


async def test_rows_by_id_returns_soft_deleted_rows_and_omits_missing_ids(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    ids = [f"{id_prefix}{i}" for i in range(7)]
    for page_id in ids:
        await writer.create(page_id, f"标题 {page_id}", "内容", {})
    for page_id in ids[1::3]:
        await writer.soft_delete(page_id)
    missing = [f"{id_prefix}missing{i}" for i in range(4)]
    asked = [missing[0], *ids[:4], missing[1], *ids[4:], missing[2], ids[0], missing[3]]

    rows = await MysqlTruth(consumer_pool, batch_size=3).rows_by_id(PAGE, asked)

    assert set(rows) == set(ids)
    for page_id in ids:
        row = rows[page_id]
        assert row["id"] == page_id
        assert row["title"] == f"标题 {page_id}"
        deleted = page_id in ids[1::3]
        assert row["revision"] == (2 if deleted else 1)
        assert (row["deleted_at"] is not None) == deleted
        assert tuple(row) == PAGE.columns  # exactly the projector's columns, in its order
    one_batch = await MysqlTruth(consumer_pool, batch_size=1000).rows_by_id(PAGE, asked)
    assert one_batch == rows
    assert await MysqlTruth(consumer_pool).rows_by_id(PAGE, []) == {}


async def test_primary_read_uses_the_primary_pool(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    page_id = f"{id_prefix}p"
    await PageWriter(app_pool).create(page_id, "t", "c", {})
    dead = await create_pool(
        host="127.0.0.1", port=1, user="x", password="x", database="x", minsize=0, maxsize=1
    )
    try:
        truth = MysqlTruth(dead, primary_pool=consumer_pool)

        rows = await truth.rows_by_id(PAGE, [page_id], primary=True)
        assert rows[page_id]["revision"] == 1
        assert await truth.revision_floors("wiki_page", [page_id], primary=True) == {}
        with pytest.raises(TransientError) as caught:
            await truth.rows_by_id(PAGE, [page_id])
        assert caught.value.code is ErrorCode.MYSQL_UNAVAILABLE
        with pytest.raises(TransientError) as caught:
            await truth.revision_floors("wiki_page", [page_id])
        assert caught.value.code is ErrorCode.MYSQL_UNAVAILABLE
        with pytest.raises(TransientError) as caught:
            await truth.scan(PAGE, page_id, 1)  # scans read the ordinary pool
        assert caught.value.code is ErrorCode.MYSQL_UNAVAILABLE
    finally:
        dead.close()
        await dead.wait_closed()


async def test_truth_rows_feed_the_projector(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    page_id = f"{id_prefix}p"
    relations = {
        "RELATED_CHARACTER": [
            {"entity_id": "character_qixia", "entity_type": "character", "title": "齐夏"}
        ]
    }
    writer = PageWriter(app_pool)
    await writer.create(page_id, "终焉之地", "内容", relations)
    await writer.soft_delete(page_id)

    rows = await MysqlTruth(consumer_pool).rows_by_id(PAGE, [page_id])
    document = wiki_page.projector().project(rows[page_id])

    assert document.source_revision == 2
    assert document.is_deleted
    assert document.body["relations"] == {"RELATED_CHARACTER": ["character:character_qixia"]}
    assert document.body["relation_target_ids"] == ["character:character_qixia"]


async def test_revision_floors_are_the_hard_deletes_revisions_for_that_type(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    gone, live, recreated = (f"{id_prefix}{name}" for name in ("gone", "live", "again"))
    for page_id in (gone, live, recreated):
        await writer.create(page_id, "t", "c", {})
    await writer.update(gone, title="t2")
    deleted_at = await writer.hard_delete(gone)  # revision 3, kept as the floor
    await writer.hard_delete(recreated)  # floor 2
    await writer.create(recreated, "t", "c", {})  # continues at 3; the floor stays
    asked = [gone, live, recreated, f"{id_prefix}never", gone]

    floors = await MysqlTruth(consumer_pool, batch_size=2).revision_floors("wiki_page", asked)

    assert floors == {gone: deleted_at, recreated: 2}
    assert deleted_at == 3
    assert await MysqlTruth(consumer_pool).revision_floors("itest_other_type", asked) == {}
    assert await MysqlTruth(consumer_pool).revision_floors("wiki_page", []) == {}

    # the rebuild pages through the floors by id: one page at a time, from just before ours
    truth = MysqlTruth(consumer_pool)
    after = f"{id_prefix}"  # every id of this test sorts after its own prefix
    first = await truth.floor_page("wiki_page", after, 1)
    assert len(first) == 1
    paged = first + await truth.floor_page("wiki_page", first[0][0], 1)
    mine = {i: r for i, r in paged if i.startswith(id_prefix)}
    assert mine == {recreated: 2, gone: deleted_at}  # "again" < "gone": id order


async def test_scan_pages_through_the_table_in_id_order_with_a_keyset(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    # utf8mb4_bin orders by code point, as Python does: "B" < "a" < "é" < "齐".
    ids = sorted(f"{id_prefix}{suffix}" for suffix in ("a", "B", "c0", "c1", "é", "齐", "z"))
    for page_id in reversed(ids):
        await writer.create(page_id, f"title {page_id}", "c", {})
    await writer.soft_delete(ids[2])
    truth = MysqlTruth(consumer_pool)

    seen: list[str] = []
    after = id_prefix  # every id of this test sorts after its bare prefix
    while True:
        page = await truth.scan(PAGE, after, 3)
        assert len(page) <= 3
        mine = [r for r in page if str(r["id"]).startswith(id_prefix)]
        seen.extend(str(r["id"]) for r in mine)
        if len(mine) < len(page) or len(page) < 3:
            break  # left this test's ids (other tests' rows follow) or reached the end
        after = str(page[-1]["id"])

    assert seen == ids
    [deleted] = await truth.scan(PAGE, ids[1], 1)
    assert deleted["id"] == ids[2] and deleted["deleted_at"] is not None  # soft-deleted rows too
    assert tuple(deleted) == PAGE.columns
    first = await truth.scan(PAGE, None, 2)
    assert len(first) == 2 and str(first[0]["id"]) < str(first[1]["id"])
    with pytest.raises(ValueError):
        await truth.scan(PAGE, None, 0)


async def test_a_scan_longer_than_its_read_pieces_returns_every_row_once_in_order(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    ids = [f"{id_prefix}{n:04d}" for n in range(150)]  # more than two of the scan's pieces
    for page_id in ids:
        await writer.create(page_id, f"title {page_id}", "c", {})
    page = await MysqlTruth(consumer_pool).scan(PAGE, id_prefix, len(ids))
    assert [str(r["id"]) for r in page] == ids
    assert all(tuple(r) == PAGE.columns for r in page)


async def test_unreachable_server_and_bad_credentials_are_told_apart(
    mysql_target: MysqlTarget,
) -> None:
    with pytest.raises(TransientError) as caught:
        await create_pool(
            host="127.0.0.1", port=1, user="x", password="x", database="x", connect_timeout=2.0
        )
    assert caught.value.code == ErrorCode.MYSQL_UNAVAILABLE
    with pytest.raises(ConfigError):
        await create_pool(
            host=mysql_target.host,
            port=mysql_target.port,
            user=mysql_target.consumer_user,
            password="wrong-password",
            database=mysql_target.database,
        )


# ---------------------------------------------------------------------------------- state


def success(aggregate_id: str, revision: int, digest: str, version: int = 1) -> StateUpdate:
    return StateUpdate(
        STATE_TYPE,
        aggregate_id,
        source_revision=revision,
        indexed_revision=revision,
        schema_version=version,
        projection_hash=digest * 64,
    )


def failure(aggregate_id: str, revision: int, code: str, message: str) -> StateUpdate:
    return StateUpdate(
        STATE_TYPE, aggregate_id, source_revision=revision, error_code=code, error_message=message
    )


async def test_state_never_lowers_indexed_revision_and_keeps_error_history(
    consumer_pool: aiomysql.Pool, state_prefix: str
) -> None:
    clock = StepClock()
    writer = fx.StateTable(consumer_pool, clock=clock)
    key = f"{state_prefix}a"

    await writer.record([success(key, 3, "c")])
    await writer.record([success(key, 2, "b")])  # stale: only last_success_at moves
    state = (await writer.read(STATE_TYPE, [key]))[key]
    assert (state.indexed_revision, state.source_revision) == (3, 3)
    assert state.projection_hash == "c" * 64
    assert state.last_success_at == T0 + timedelta(seconds=2)

    await writer.record([failure(key, 5, "ES_429", "x" * 5000)])
    state = (await writer.read(STATE_TYPE, [key]))[key]
    assert (state.indexed_revision, state.source_revision) == (3, 5)
    assert state.last_error_code == "ES_429"
    assert state.last_error_message == "x" * MAX_ERROR_MESSAGE
    assert failing(state)

    await writer.record([success(key, 5, "e", version=2)])
    state = (await writer.read(STATE_TYPE, [key]))[key]
    assert (state.indexed_revision, state.projection_schema_version) == (5, 2)
    assert state.last_error_code == "ES_429"  # history is kept ...
    assert not failing(state)  # ... but a later success means it is not failing now


async def test_one_call_writes_many_aggregates_and_duplicates_in_order(
    consumer_pool: aiomysql.Pool, state_prefix: str
) -> None:
    writer = fx.StateTable(consumer_pool, clock=StepClock())
    keys = [f"{state_prefix}{i:03d}" for i in range(300)]
    batch = [success(k, 1, "a") for k in reversed(keys)]
    batch += [success(keys[0], 4, "d"), success(keys[0], 3, "c"), failure(keys[1], 2, "E", "m")]

    await writer.record(batch)

    states = await writer.read(STATE_TYPE, keys)
    assert set(states) == set(keys)
    assert (states[keys[0]].indexed_revision, states[keys[0]].projection_hash) == (4, "d" * 64)
    assert states[keys[1]].indexed_revision == 1
    assert states[keys[1]].source_revision == 2
    assert states[keys[1]].last_error_code == "E"


_updates = st.lists(
    st.tuples(
        st.integers(0, 2),  # which aggregate
        st.integers(0, 6),  # revision
        st.sampled_from(["ok", "error", "seen"]),
        st.integers(1, 3),  # schema version
        st.sampled_from("abc"),  # hash digit
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(updates=_updates, cut=st.integers(1, 12))
async def test_sql_upsert_agrees_with_merge(
    consumer_pool: aiomysql.Pool,
    state_prefix: str,
    updates: list[tuple[int, int, str, int, str]],
    cut: int,
) -> None:
    """Whatever the outcomes and however they are batched, MySQL holds what `merge` computes."""

    run = f"{state_prefix}{uuid.uuid4().hex[:8]}-"
    outcomes = []
    for which, revision, kind, version, digit in updates:
        key = f"{run}{which}"
        if kind == "ok":
            outcomes.append(success(key, revision, digit, version))
        elif kind == "error":
            outcomes.append(failure(key, revision, f"E{digit}", f"failed {digit}"))
        else:
            outcomes.append(StateUpdate(STATE_TYPE, key, source_revision=revision))
    writer_clock, model_clock = StepClock(), StepClock()
    writer = fx.StateTable(consumer_pool, clock=writer_clock)
    expected: dict[str, ProjectionState] = {}
    for start in range(0, len(outcomes), cut):
        chunk = outcomes[start : start + cut]
        await writer.record(chunk)
        now = model_clock()
        for update in chunk:
            expected[update.aggregate_id] = merge(expected.get(update.aggregate_id), update, now)

    got = await writer.read(STATE_TYPE, list(expected))

    assert got == expected
