"""The application-side writer on the real MariaDB: docs/design.md invariants 1 and 2.

Each test uses fresh uuid-prefixed ids; every outbox row written here also reaches Kafka.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiomysql
import pytest
from searchsync.devtools.loadgen import run_loadgen
from searchsync.errors import (
    AggregateExists,
    AggregateNotFound,
    AggregateStateConflict,
    ErrorCode,
    TransientError,
)
from searchsync.events import decode
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import transaction
from searchsync.types import Operation
from searchsync.writer import WIKI_PAGE, AsyncAggregateWriter, PageWriter

from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import fetch_all, outbox_rows, recreate_ignoring_the_floor

# The MariaDB fixtures, made visible to pytest in this module (see conftest_mysql's docstring).
mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

RELATIONS = {
    "RELATED_CHARACTER": [
        {"entity_id": "character_qixia", "entity_type": "character", "title": "齐夏"}
    ]
}


class Crash(Exception):
    """Raised in a change's block: between the row write and the outbox insert."""


async def page_row(pool: aiomysql.Pool, page_id: str) -> dict[str, Any] | None:
    rows = await fetch_all(
        pool,
        "SELECT id, title, content, relations_json, revision, deleted_at FROM wiki_page"
        " WHERE id = %s",
        (page_id,),
    )
    return rows[0] if rows else None


async def floor_of(pool: aiomysql.Pool, page_id: str) -> int | None:
    rows = await fetch_all(
        pool,
        "SELECT revision FROM search_revision_floor"
        " WHERE aggregate_type = 'wiki_page' AND aggregate_id = %s",
        (page_id,),
    )
    return int(rows[0]["revision"]) if rows else None


def assert_thin_events(rows: list[dict[str, Any]]) -> None:
    """Each outbox row's payload is a valid thin event equal to the row's own columns."""
    for row in rows:
        event = decode(row["payload"].encode(), max_bytes=4096, known_types={"wiki_page"})
        assert event.event_id == row["event_id"]
        assert event.aggregate_type == row["aggregate_type"] == "wiki_page"
        assert event.aggregate_id == row["aggregate_id"]
        assert event.operation.value == row["operation"]
        assert event.source_revision == row["source_revision"]
        assert row["status"] == "PENDING"
    assert len({row["event_id"] for row in rows}) == len(rows)


async def test_every_change_raises_revision_by_one_with_one_outbox_row(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}p"

    revisions = [
        await writer.create(page_id, "终焉之地", "第一版", RELATIONS),
        await writer.update(page_id, title="终焉之地 2", content="第二版"),
        await writer.soft_delete(page_id),
        await writer.restore(page_id),
    ]

    assert revisions == [1, 2, 3, 4]
    row = await page_row(app_pool, page_id)
    assert row is not None
    assert (row["revision"], row["title"], row["content"]) == (4, "终焉之地 2", "第二版")
    assert row["deleted_at"] is None
    rows = await outbox_rows(app_pool, page_id)
    assert [(r["operation"], r["source_revision"]) for r in rows] == [
        ("UPSERT", 1),
        ("UPSERT", 2),
        ("TOMBSTONE", 3),
        ("UPSERT", 4),
    ]
    assert_thin_events(rows)


async def test_soft_deleted_page_keeps_deleted_at_until_restored(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}p"
    await writer.create(page_id, "t", "c", {})
    await writer.soft_delete(page_id)

    assert await writer.update(page_id, relations=RELATIONS) == 3  # editing a deleted page

    page = await writer.get(page_id)
    assert page is not None
    assert page.is_deleted
    assert page.relations == RELATIONS
    assert (await outbox_rows(app_pool, page_id))[-1]["operation"] == "UPSERT"


@pytest.mark.parametrize("change", ["create", "update", "soft_delete", "restore", "hard_delete"])
async def test_failure_between_row_and_outbox_writes_neither(
    app_pool: aiomysql.Pool, id_prefix: str, change: str
) -> None:
    page_id = f"{id_prefix}p"
    plain = PageWriter(app_pool)
    if change != "create":
        await plain.create(page_id, "before", "before", {})
    if change == "restore":
        await plain.soft_delete(page_id)
    before_row = await page_row(app_pool, page_id)
    before_outbox = await outbox_rows(app_pool, page_id)
    seen: list[int] = []

    async def crash(conn: Any, hooked_id: str, revision: int) -> None:
        # The row write happened in this transaction: prove it, then crash.
        async with conn.cursor() as cur:
            await cur.execute("SELECT COUNT(*) FROM wiki_page WHERE id = %s", (hooked_id,))
            (count,) = await cur.fetchone()
        seen.append(count)
        raise Crash(f"crash after writing {hooked_id} at revision {revision}")

    crashing = AsyncAggregateWriter(app_pool, WIKI_PAGE)  # what PageWriter runs on
    after = {"title": "after", "content": "after", "relations_json": "{}"}
    call = {
        "create": lambda: crashing.create(page_id, after),
        "update": lambda: crashing.update(page_id, {"content": "after"}),
        "soft_delete": lambda: crashing.soft_delete(page_id),
        "restore": lambda: crashing.restore(page_id),
        "hard_delete": lambda: crashing.hard_delete(page_id),
    }[change]

    with pytest.raises(Crash):
        async with call() as open_change:  # the block runs after the row write, before the event
            await crash(open_change.connection, open_change.aggregate_id, open_change.revision)

    assert seen == [0 if change == "hard_delete" else 1]  # the hook ran after the row write
    assert await page_row(app_pool, page_id) == before_row
    assert await outbox_rows(app_pool, page_id) == before_outbox
    assert await floor_of(app_pool, page_id) is None


async def test_connection_lost_between_writes_is_rolled_back_by_the_server(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    page_id = f"{id_prefix}p"
    writer = PageWriter(app_pool)
    await writer.create(page_id, "t", "c", {})

    async def die(conn: Any, _page_id: str, _revision: int) -> None:
        conn.close()  # the process "dies": the socket goes away mid-transaction

    with pytest.raises(TransientError) as caught:
        async with AsyncAggregateWriter(app_pool, WIKI_PAGE).update(
            page_id, {"content": "lost"}
        ) as open_change:
            await die(open_change.connection, page_id, open_change.revision)
    assert caught.value.code == ErrorCode.MYSQL_UNAVAILABLE

    # This update must wait for the dead transaction's row lock, i.e. for the server's rollback.
    assert await writer.update(page_id, content="kept") == 2
    row = await page_row(app_pool, page_id)
    assert row is not None
    assert (row["revision"], row["content"]) == (2, "kept")
    assert [r["source_revision"] for r in await outbox_rows(app_pool, page_id)] == [1, 2]


async def test_refused_changes_write_nothing(app_pool: aiomysql.Pool, id_prefix: str) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}p"

    with pytest.raises(AggregateNotFound):
        await writer.update(page_id, content="x")
    with pytest.raises(AggregateNotFound):
        await writer.soft_delete(page_id)
    with pytest.raises(AggregateNotFound):
        await writer.hard_delete(page_id)
    await writer.create(page_id, "t", "c", {})
    with pytest.raises(AggregateExists):
        await writer.create(page_id, "t", "c", {})
    with pytest.raises(AggregateStateConflict):
        await writer.restore(page_id)
    await writer.soft_delete(page_id)
    with pytest.raises(AggregateStateConflict):
        await writer.soft_delete(page_id)
    with pytest.raises(AggregateExists):
        await writer.create(page_id, "t", "c", {})  # soft-deleted still exists

    assert [r["source_revision"] for r in await outbox_rows(app_pool, page_id)] == [1, 2]


async def test_hard_delete_then_create_continues_above_the_floor(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}p"
    await writer.create(page_id, "t", "c", {})
    await writer.update(page_id, content="c2")

    assert await writer.hard_delete(page_id) == 3
    assert await page_row(app_pool, page_id) is None
    assert await writer.get(page_id) is None
    assert await floor_of(app_pool, page_id) == 3

    assert await writer.create(page_id, "again", "c3", {}) == 4
    assert await writer.hard_delete(page_id) == 5
    assert await floor_of(app_pool, page_id) == 5

    rows = await outbox_rows(app_pool, page_id)
    assert [(r["operation"], r["source_revision"]) for r in rows] == [
        ("UPSERT", 1),
        ("UPSERT", 2),
        ("TOMBSTONE", 3),
        ("UPSERT", 4),
        ("TOMBSTONE", 5),
    ]
    assert_thin_events(rows)


async def test_unsafe_recreate_restarts_at_revision_one(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}p"
    await writer.create(page_id, "t", "c", {})
    await writer.hard_delete(page_id)

    assert await recreate_ignoring_the_floor(app_pool, page_id, "t", "c") == 1

    rows = await outbox_rows(app_pool, page_id)
    assert [(r["operation"], r["source_revision"]) for r in rows] == [
        ("UPSERT", 1),
        ("TOMBSTONE", 2),
        ("UPSERT", 1),
    ]


async def test_hot_key_concurrent_updates_are_gap_free(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}hot"
    await writer.create(page_id, "hot", "0", {})
    n = 40

    got = await asyncio.gather(*(writer.update(page_id, content=str(i)) for i in range(n)))

    assert sorted(got) == list(range(2, n + 2))
    rows = await outbox_rows(app_pool, page_id)
    assert sorted(r["source_revision"] for r in rows) == list(range(1, n + 2))
    row = await page_row(app_pool, page_id)
    assert row is not None
    assert row["revision"] == n + 1


async def test_concurrent_creates_of_one_id_let_exactly_one_win(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    writer = PageWriter(app_pool)
    page_id = f"{id_prefix}race"

    results = await asyncio.gather(
        *(writer.create(page_id, f"t{i}", "c", {}) for i in range(8)), return_exceptions=True
    )

    assert results.count(1) == 1
    assert all(isinstance(r, AggregateExists) for r in results if r != 1)
    assert len(await outbox_rows(app_pool, page_id)) == 1


async def test_consumer_user_appends_rebuild_events_but_cannot_write_pages(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    page_id = f"{id_prefix}p"
    await PageWriter(app_pool).create(page_id, "t", "c", {})

    async with transaction(consumer_pool) as conn:
        event_id = await append_outbox(conn, "wiki_page", page_id, Operation.REBUILD, 1)

    rows = await outbox_rows(app_pool, page_id)
    assert [(r["event_id"], r["operation"]) for r in rows][-1] == (event_id, "REBUILD")
    assert_thin_events(rows)
    with pytest.raises(aiomysql.OperationalError) as caught:  # 1142: command denied
        await PageWriter(consumer_pool).update(page_id, content="no")
    assert caught.value.args[0] == 1142
    # least privilege (docs/security.md): no other write to the business table, no DDL, no
    # grant, no write to another table; each refused by the server and nothing changed
    refused = {
        "INSERT INTO wiki_page (id, title, content, relations_json, revision, updated_at)"
        " VALUES (%s, 't', 'c', '{}', 1, NOW(6))": (f"{id_prefix}x",),
        "UPDATE wiki_page SET revision = revision + 1 WHERE id = %s": (page_id,),
        "DELETE FROM wiki_page WHERE id = %s": (page_id,),
        "UPDATE search_outbox SET payload = '{}' WHERE aggregate_id = %s": (page_id,),
        "CREATE TABLE least_privilege_probe (id INT PRIMARY KEY)": (),
        "ALTER TABLE wiki_page ADD COLUMN x INT": (),
        "CREATE INDEX x ON wiki_page (title)": (),
        "TRUNCATE TABLE wiki_page": (),
        "DROP TABLE wiki_page": (),
        "GRANT SELECT ON wiki_page TO CURRENT_USER()": (),
    }
    for sql, args in refused.items():
        with pytest.raises(aiomysql.OperationalError) as caught:
            await fetch_all(consumer_pool, sql, args)
        # 1143: a column the user may not update (it may update only the relay's claim columns)
        assert caught.value.args[0] in (1044, 1142, 1143, 1227), (sql, caught.value)
    row = await page_row(app_pool, page_id)
    assert row is not None and row["revision"] == 1 and row["content"] == "c"
    assert await page_row(app_pool, f"{id_prefix}x") is None


async def test_loadgen_counts_match_revisions_and_outbox(
    app_pool: aiomysql.Pool, id_prefix: str
) -> None:
    calls: list[tuple[int, int]] = []
    report = await run_loadgen(
        PageWriter(app_pool),
        pages=6,
        updates=120,
        concurrency=8,
        delete_ratio=0.15,
        hard_delete_ratio=0.05,
        seed=7,
        id_prefix=id_prefix,
        progress=lambda done, total: calls.append((done, total)),
    )

    assert report.created == 6
    done = report.updated + report.soft_deleted + report.restored + report.hard_deleted
    assert done + report.recreated + report.skipped == 120
    assert calls[-1] == (126, 126)
    assert sum(report.final_revisions.values()) == report.changes
    rows = await fetch_all(
        app_pool,
        "SELECT aggregate_id, source_revision FROM search_outbox"
        " WHERE aggregate_type = 'wiki_page' AND aggregate_id LIKE %s",
        (f"{id_prefix}%",),
    )
    assert len(rows) == report.changes
    by_page: dict[str, list[int]] = {}
    for r in rows:
        by_page.setdefault(r["aggregate_id"], []).append(int(r["source_revision"]))
    for page_id, final in report.final_revisions.items():
        assert sorted(by_page[page_id]) == list(range(1, final + 1)), page_id
    for page_id in report.hard_deleted_ids:
        assert await page_row(app_pool, page_id) is None
    assert report.updated > 0
