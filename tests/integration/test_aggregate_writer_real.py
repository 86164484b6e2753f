"""`AggregateWriter` (PyMySQL) and `AsyncAggregateWriter` (aiomysql) on the real MariaDB.

A scratch aggregate type of its own (a root table ``it<hex>_thing`` and a child table
``it<hex>_thing_tag``, created as root and granted to the application user like the example's
tables, dropped afterwards) so no other test's table or topic sees these rows: the outbox rows
route to ``outbox.event.it<hex>_thing``, a topic no consumer reads.

Proves, for both drivers: concurrent changes of one id serialize and commit strictly rising
revisions, each with exactly one outbox row; a create after a hard delete starts at floor + 1;
the outbox row is there if and only if the transaction committed (an exception in the block
leaves neither row, children nor event).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.errors import AggregateExists, AggregateNotFound, ErrorCode, TransientError
from searchsync.events import decode
from searchsync.writer import AggregateTable, AggregateWriter, AsyncAggregateWriter

from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import (
    MysqlTarget,
    fetch_all,
    pymysql_connection,
    root_socket,
)
from tests.scratch import admin_execute

mysql_target = fx.mysql_target
app_pool = fx.app_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

WRITERS = 4  # concurrent writers of one id, per driver
CHANGES = 10  # changes each


class Boom(Exception):
    """Raised inside a change's block."""


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def thing(mysql_target: MysqlTarget) -> AsyncIterator[AggregateTable]:
    name = f"it{uuid.uuid4().hex[:8]}_thing"
    t = mysql_target
    tables = [name, f"{name}_tag"]
    await admin_execute(
        root_socket(),
        t.database,
        [
            f"CREATE TABLE `{name}` (id VARCHAR(64) NOT NULL, name VARCHAR(100) NOT NULL,"
            " revision BIGINT UNSIGNED NOT NULL, deleted_at DATETIME(6) NULL,"
            " updated_at DATETIME(6) NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB",
            f"CREATE TABLE `{name}_tag` (thing_id VARCHAR(64) NOT NULL, tag VARCHAR(64) NOT NULL,"
            " PRIMARY KEY (thing_id, tag)) ENGINE=InnoDB",
            *(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{table}` TO '{t.app_user}'@'%'"
                for table in tables
            ),
        ],
    )
    try:
        yield AggregateTable(name, name)
    finally:  # a dropped table keeps its grants in MariaDB: revoke them first
        await admin_execute(
            root_socket(),
            t.database,
            [
                *(
                    f"REVOKE ALL PRIVILEGES ON `{table}` FROM '{t.app_user}'@'%'"
                    for table in tables
                ),
                *(f"DROP TABLE IF EXISTS `{table}`" for table in tables),
            ],
        )


@pytest.fixture
def sync_writer(mysql_target: MysqlTarget, thing: AggregateTable) -> Iterator[AggregateWriter]:
    conn = pymysql_connection(mysql_target)
    try:
        yield AggregateWriter(conn, thing)
    finally:
        conn.close()


async def state(pool: aiomysql.Pool, table: AggregateTable, aggregate_id: str) -> dict[str, Any]:
    """The root row, its tags and its outbox rows (operation, revision) in insertion order."""
    rows = await fetch_all(
        pool,
        f"SELECT name, revision, deleted_at FROM `{table.table}` WHERE id = %s",
        (aggregate_id,),
    )
    tags = await fetch_all(
        pool,
        f"SELECT tag FROM `{table.table}_tag` WHERE thing_id = %s ORDER BY tag",
        (aggregate_id,),
    )
    outbox = await fetch_all(
        pool,
        "SELECT event_id, aggregate_type, aggregate_id, operation, source_revision, payload"
        " FROM search_outbox WHERE aggregate_type = %s AND aggregate_id = %s ORDER BY id",
        (table.aggregate_type, aggregate_id),
    )
    for row in outbox:  # each payload is the thin event of its own row
        event = decode(row["payload"].encode(), max_bytes=4096, known_types={table.aggregate_type})
        assert (event.event_id, event.operation.value, event.source_revision) == (
            row["event_id"],
            row["operation"],
            row["source_revision"],
        )
    return {
        "row": rows[0] if rows else None,
        "tags": [t["tag"] for t in tags],
        "events": [(r["operation"], r["source_revision"]) for r in outbox],
    }


def set_tags(
    table: AggregateTable, aggregate_id: str, tags: list[str]
) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The statements that replace an id's tags (run with ``cursor.execute``, sync or async)."""
    yield f"DELETE FROM `{table.table}_tag` WHERE thing_id = %s", (aggregate_id,)
    for tag in tags:
        yield (
            f"INSERT INTO `{table.table}_tag` (thing_id, tag) VALUES (%s, %s)",
            (aggregate_id, tag),
        )


# --------------------------------------------------------------------------- the whole life


async def test_sync_writer_lifecycle_with_children(
    sync_writer: AggregateWriter, app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    a = f"{id_prefix}a"
    revisions = []
    with sync_writer.create(a, {"name": "first"}) as change:
        for sql, args in set_tags(thing, a, ["x", "y"]):
            change.cursor.execute(sql, args)
    revisions.append(change.revision)
    with sync_writer.update(a) as change:  # children only
        for sql, args in set_tags(thing, a, ["z"]):
            change.cursor.execute(sql, args)
    revisions.append(change.revision)
    for method in (sync_writer.soft_delete, sync_writer.restore):
        with method(a) as change:
            pass
        revisions.append(change.revision)
    with sync_writer.update(a, {"name": "second"}) as change:
        pass
    revisions.append(change.revision)

    assert revisions == [1, 2, 3, 4, 5]
    seen = await state(app_pool, thing, a)
    assert (seen["row"]["name"], seen["row"]["revision"], seen["row"]["deleted_at"]) == (
        "second",
        5,
        None,
    )
    assert seen["tags"] == ["z"]
    assert seen["events"] == [
        ("UPSERT", 1),
        ("UPSERT", 2),
        ("TOMBSTONE", 3),
        ("UPSERT", 4),
        ("UPSERT", 5),
    ]


async def test_async_writer_lifecycle_with_children(
    app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    writer = AsyncAggregateWriter(app_pool, thing)
    a = f"{id_prefix}a"
    async with writer.create(a, {"name": "first"}) as change:
        for sql, args in set_tags(thing, a, ["x", "y"]):
            await change.cursor.execute(sql, args)
    assert change.revision == 1
    async with writer.soft_delete(a, {"name": "deleted"}) as change:
        pass
    assert (await state(app_pool, thing, a))["row"]["name"] == "deleted"
    async with writer.update(a, {"name": "edited while deleted"}) as change:
        pass
    assert change.revision == 3

    seen = await state(app_pool, thing, a)
    assert seen["row"]["deleted_at"] is not None  # an update keeps a soft delete
    assert seen["tags"] == ["x", "y"]
    assert seen["events"] == [("UPSERT", 1), ("TOMBSTONE", 2), ("UPSERT", 3)]
    with pytest.raises(AggregateExists):
        async with writer.create(a, {"name": "again"}):
            pass
    with pytest.raises(AggregateNotFound):
        async with writer.update(f"{id_prefix}never"):
            pass
    assert (await state(app_pool, thing, a))["events"] == seen["events"]


# --------------------------------------------------------------------------- hard delete


async def test_create_after_hard_delete_starts_at_floor_plus_one(
    sync_writer: AggregateWriter, app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    s, a = f"{id_prefix}s", f"{id_prefix}a"
    with sync_writer.create(s, {"name": "one"}):
        pass
    with sync_writer.update(s, {"name": "two"}):
        pass
    with sync_writer.hard_delete(s) as gone:
        change_sql = f"DELETE FROM `{thing.table}_tag` WHERE thing_id = %s"
        gone.cursor.execute(change_sql, (s,))
    with sync_writer.create(s, {"name": "reborn"}) as reborn:
        pass
    assert (gone.revision, reborn.revision) == (3, 4)

    writer = AsyncAggregateWriter(app_pool, thing)
    async with writer.create(a, {"name": "one"}):
        pass
    async with writer.hard_delete(a) as gone:
        pass
    async with writer.create(a, {"name": "reborn"}) as reborn:
        pass
    async with writer.hard_delete(a) as gone_again:
        pass
    with sync_writer.create(a, {"name": "reborn by the other driver"}) as again:
        pass
    assert (gone.revision, reborn.revision, gone_again.revision, again.revision) == (2, 3, 4, 5)

    for aggregate_id, floor, events in (
        (s, 3, [("UPSERT", 1), ("UPSERT", 2), ("TOMBSTONE", 3), ("UPSERT", 4)]),
        (a, 4, [("UPSERT", 1), ("TOMBSTONE", 2), ("UPSERT", 3), ("TOMBSTONE", 4), ("UPSERT", 5)]),
    ):
        floors = await fetch_all(
            app_pool,
            "SELECT revision FROM search_revision_floor WHERE aggregate_type = %s"
            " AND aggregate_id = %s",
            (thing.aggregate_type, aggregate_id),
        )
        assert [f["revision"] for f in floors] == [floor]
        seen = await state(app_pool, thing, aggregate_id)
        assert seen["events"] == events
        assert seen["row"]["revision"] == events[-1][1]


# --------------------------------------------------------------------------- atomicity


async def test_an_exception_in_the_block_writes_nothing(
    sync_writer: AggregateWriter, app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    writer = AsyncAggregateWriter(app_pool, thing)
    s, a = f"{id_prefix}s", f"{id_prefix}a"
    with pytest.raises(Boom), sync_writer.create(s, {"name": "never"}) as change:
        for sql, args in set_tags(thing, s, ["lost"]):
            change.cursor.execute(sql, args)
        raise Boom
    with pytest.raises(Boom):
        async with writer.create(a, {"name": "never"}) as change:
            for sql, args in set_tags(thing, a, ["lost"]):
                await change.cursor.execute(sql, args)
            raise Boom
    for aggregate_id in (s, a):
        assert await state(app_pool, thing, aggregate_id) == {"row": None, "tags": [], "events": []}

    with sync_writer.create(s, {"name": "kept"}):
        pass
    async with writer.create(a, {"name": "kept"}):
        pass
    changes = [
        sync_writer.update(s, {"name": "lost"}),
        sync_writer.soft_delete(s),
        sync_writer.hard_delete(s),
    ]
    for cm in changes:
        with pytest.raises(Boom), cm as change:
            for sql, args in set_tags(thing, s, ["lost"]):
                change.cursor.execute(sql, args)
            raise Boom
    for acm in (writer.update(a, {"name": "lost"}), writer.soft_delete(a), writer.hard_delete(a)):
        with pytest.raises(Boom):
            async with acm as change:
                for sql, args in set_tags(thing, a, ["lost"]):
                    await change.cursor.execute(sql, args)
                raise Boom

    for aggregate_id in (s, a):
        seen = await state(app_pool, thing, aggregate_id)
        assert (seen["row"]["name"], seen["row"]["revision"]) == ("kept", 1)
        assert seen["tags"] == []
        assert seen["events"] == [("UPSERT", 1)]
    floors = await fetch_all(
        app_pool,
        "SELECT revision FROM search_revision_floor WHERE aggregate_type = %s"
        " AND aggregate_id IN (%s, %s)",
        (thing.aggregate_type, s, a),
    )
    assert floors == []
    # the sync writer's connection is usable after a rollback
    with sync_writer.update(s) as change:
        pass
    assert change.revision == 2


# --------------------------------------------------------------------------- concurrency


async def test_concurrent_changes_of_one_id_serialize_with_rising_revisions(
    mysql_target: MysqlTarget, app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    """WRITERS threads on PyMySQL and WRITERS tasks on aiomysql change one id at once."""
    hot = f"{id_prefix}hot"
    async with AsyncAggregateWriter(app_pool, thing).create(hot, {"name": "0"}):
        pass
    committed: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(WRITERS)

    def sync_worker(n: int) -> None:
        conn = pymysql_connection(mysql_target)
        try:
            writer = AggregateWriter(conn, thing)
            start.wait(timeout=30)
            for i in range(CHANGES):
                with writer.update(hot, {"name": f"s{n}-{i}"}) as change:
                    for sql, args in set_tags(thing, hot, [f"s{n}-{i}"]):
                        change.cursor.execute(sql, args)
                with lock:
                    committed.append(change.revision)
        finally:
            conn.close()

    async def async_worker(n: int) -> None:
        writer = AsyncAggregateWriter(app_pool, thing)
        for i in range(CHANGES):
            async with writer.update(hot, {"name": f"a{n}-{i}"}) as change:
                for sql, args in set_tags(thing, hot, [f"a{n}-{i}"]):
                    await change.cursor.execute(sql, args)
            with lock:
                committed.append(change.revision)

    await asyncio.gather(
        *(asyncio.to_thread(sync_worker, n) for n in range(WRITERS)),
        *(async_worker(n) for n in range(WRITERS)),
    )

    total = 2 * WRITERS * CHANGES
    assert sorted(committed) == list(range(2, total + 2))  # each change its own revision
    seen = await state(app_pool, thing, hot)
    revisions = [revision for _, revision in seen["events"]]
    assert revisions == list(range(1, total + 2))  # one event each, strictly rising in commit order
    assert seen["row"]["revision"] == total + 1
    assert seen["tags"] == [seen["row"]["name"]]  # the children of the last change only


async def test_sync_connection_lost_in_the_block_commits_nothing(
    mysql_target: MysqlTarget, app_pool: aiomysql.Pool, thing: AggregateTable, id_prefix: str
) -> None:
    a = f"{id_prefix}a"
    async with AsyncAggregateWriter(app_pool, thing).create(a, {"name": "kept"}):
        pass
    conn = pymysql_connection(mysql_target)
    writer = AggregateWriter(conn, thing)
    with pytest.raises(TransientError) as caught, writer.update(a, {"name": "lost"}) as change:
        for sql, args in set_tags(thing, a, ["lost"]):
            change.cursor.execute(sql, args)
        conn.close()  # the process "dies": the socket goes away mid-transaction
    assert caught.value.code == ErrorCode.MYSQL_UNAVAILABLE

    # this change waits for the dead transaction's row lock, i.e. for the server's rollback
    async with AsyncAggregateWriter(app_pool, thing).update(a) as change:
        pass
    assert change.revision == 2
    seen = await state(app_pool, thing, a)
    assert (seen["row"]["name"], seen["tags"]) == ("kept", [])
    assert seen["events"] == [("UPSERT", 1), ("UPSERT", 2)]
