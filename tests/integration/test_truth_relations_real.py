"""Children and lookups read by `MysqlTruth` on MariaDB: the relations contract
(tests/contract/truth_relations_contract.py) on the example tables ``article``, ``article_tag``
and ``author`` (schemas/sql/examples/article.sql), and the number of queries a batch costs.
Rows are written as the application's user under a fresh prefix and deleted after each case.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.mysql import truth_relations
from searchsync.mysql.pool import db_time, transaction
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import Child, Row

from tests.contract.truth_relations_contract import PROJECTOR, RELATIONS_CASES
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget, root_socket
from tests.scratch import admin_execute

mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
AsyncCase = Callable[[Any], Awaitable[None]]


async def _execute(pool: aiomysql.Pool, sql: str, args: tuple[Any, ...]) -> None:
    async with transaction(pool) as conn, conn.cursor() as cur:
        await cur.execute(sql, args)


class RealRelationsWorld:
    """`MysqlTruth` as the consumer's user; rows written as the application's."""

    def __init__(self, app: aiomysql.Pool, truth: MysqlTruth, prefix: str) -> None:
        self.truth = truth
        self.prefix = prefix
        self._app = app

    async def put_article(self, row: Row) -> None:
        columns = [*PROJECTOR.columns, "updated_at"]
        values = [row[c] for c in PROJECTOR.columns] + [db_time(utc_now())]
        await _execute(
            self._app,
            f"INSERT INTO article ({', '.join(columns)})"
            f" VALUES ({', '.join(['%s'] * len(columns))})",
            tuple(values),
        )

    async def put_tag(self, article_id: str, tag: str, position: int) -> None:
        await _execute(
            self._app,
            "INSERT INTO article_tag (article_id, tag, position) VALUES (%s, %s, %s)",
            (article_id, tag, position),
        )

    async def put_author(self, author_id: str, name: str) -> None:
        await _execute(
            self._app,
            "INSERT INTO author (id, name, revision, updated_at) VALUES (%s, %s, 1, %s)",
            (author_id, name, db_time(utc_now())),
        )

    async def clean(self) -> None:
        like = self.prefix + "%"
        for sql in (
            "DELETE FROM article_tag WHERE article_id LIKE %s",
            "DELETE FROM article WHERE id LIKE %s",
            "DELETE FROM author WHERE id LIKE %s",
        ):
            await _execute(self._app, sql, (like,))


@pytest_asyncio.fixture(loop_scope="session")
async def world(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> AsyncIterator[RealRelationsWorld]:
    w = RealRelationsWorld(app_pool, MysqlTruth(consumer_pool, id_prefix=id_prefix), id_prefix)
    try:
        yield w
    finally:
        await w.clean()


@pytest.mark.parametrize("case", RELATIONS_CASES, ids=lambda case: case.__name__)
async def test_truth_relations_contract(case: AsyncCase, world: RealRelationsWorld) -> None:
    await case(world)


async def test_a_batch_costs_one_query_per_table_however_many_roots(
    app_pool: aiomysql.Pool, mysql_target: MysqlTarget, id_prefix: str
) -> None:
    """Sixty articles with three tags each and one author each, read by id and by scan: one
    query for the roots, one for article_tag, one for author (the session's Com_select on a
    one-connection pool), once the truth has learnt that article_tag can be read packed and that
    the key is text (two more queries, once); packed or not, the same rows."""
    pool = await aiomysql.create_pool(
        host=mysql_target.host,
        port=mysql_target.port,
        user=mysql_target.consumer_user,
        password=mysql_target.consumer_password,
        db=mysql_target.database,
        minsize=1,
        maxsize=1,
    )
    w = RealRelationsWorld(app_pool, MysqlTruth(pool), id_prefix)
    try:
        ids = [f"{id_prefix}{n:03}" for n in range(60)]
        for n, article_id in enumerate(ids):
            await w.put_author(f"{article_id}u", f"author {n}")
            await w.put_article(
                {"id": article_id, "title": "t", "body": "b", "author_id": f"{article_id}u",
                 "revision": 1, "deleted_at": None}
            )  # fmt: skip
            for position in range(3):
                await w.put_tag(article_id, f"tag{position}", position)

        async def selects() -> int:
            async with pool.acquire() as conn, conn.cursor() as cur:
                await cur.execute("SHOW SESSION STATUS LIKE 'Com_select'")
                (_, value) = await cur.fetchone()
            return int(value)

        before = await selects()
        first = await w.truth.rows_by_id(PROJECTOR, ids)  # article_tag read as rows
        learnt = await selects()
        rows = await w.truth.rows_by_id(PROJECTOR, ids)  # article_tag read packed
        after_by_id = await selects()
        page = await w.truth.scan(PROJECTOR, ids[0][:-1], 60)
        after_scan = await selects()
        assert len(rows) == 60 and all(len(r["tags"]) == 3 and r["author"] for r in rows.values())
        assert [r["id"] for r in page] == ids
        assert rows == first and {str(r["id"]): r for r in page} == rows
        # the first batch also reads article_tag packed, and whether the key is an integer, once
        assert learnt - before == 5
        assert after_by_id - learnt == 3  # article, article_tag, author
        assert after_scan - after_by_id == 3
    finally:
        await w.clean()
        pool.close()
        await pool.wait_closed()


async def test_a_tag_written_while_the_truth_learns_packing_does_not_keep_it_unpacked(
    world: RealRelationsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application adds a tag right after the first batch's plain read of article_tag, before
    the truth checks that the table can be read packed (READ COMMITTED: the check sees the new
    row, the plain read did not). The check compares each row with itself, so it still holds:
    the next batch reads article_tag packed, and finds both tags."""
    article_id = f"{world.prefix}a1"
    await world.put_article({"id": article_id, "title": "t", "body": "b", "author_id": None,
                             "revision": 1, "deleted_at": None})  # fmt: skip
    await world.put_tag(article_id, "t0", 0)
    plain, packed = truth_relations._read, truth_relations._read_packed
    calls: list[str] = []

    async def read_then_write(conn: Any, table: str, *args: Any) -> list[Row]:
        rows = await plain(conn, table, *args)
        if table == "article_tag":
            calls.append("plain")
            await world.put_tag(article_id, f"t{len(calls)}", len(calls))
        return rows

    async def read_packed(conn: Any, child: Child, ids: list[str]) -> list[Row] | None:
        calls.append("packed")
        return await packed(conn, child, ids)

    monkeypatch.setattr(truth_relations, "_read", read_then_write)
    monkeypatch.setattr(truth_relations, "_read_packed", read_packed)
    first = await world.truth.rows_by_id(PROJECTOR, [article_id])
    second = await world.truth.rows_by_id(PROJECTOR, [article_id])
    assert [t["tag"] for t in first[article_id]["tags"]] == ["t0"]
    assert [t["tag"] for t in second[article_id]["tags"]] == ["t0", "t1"]
    assert calls == ["plain", "packed"]


async def test_a_child_table_of_other_types_is_read_as_rows_never_packed(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, mysql_target: MysqlTarget
) -> None:
    """A child with a DATETIME and a DECIMAL column (a scratch table): the truth tries no packed
    read, and build gets the driver's datetime and Decimal values, batch after batch."""
    u = uuid.uuid4().hex[:12]
    table, article_id = f"it_{u}_child", f"it-{u}-a1"
    db, user = mysql_target.database, mysql_target.consumer_user
    await admin_execute(
        root_socket(),
        db,
        [
            f"CREATE TABLE `{table}` (article_id VARCHAR(64) NOT NULL, at DATETIME(6) NOT NULL,"
            " amount DECIMAL(10, 2) NOT NULL, PRIMARY KEY (article_id, at))"
            " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
            f"INSERT INTO `{table}` VALUES ('{article_id}', '2026-01-02 03:04:05.5', 1.25),"
            f" ('{article_id}', '2026-01-01 00:00:00', 2.00)",
            f"GRANT SELECT ON `{db}`.`{table}` TO '{user}'@'%'",
        ],
    )
    try:
        child = Child("events", table, key="article_id", columns=("article_id", "at", "amount"),
                      order_by=("at",))  # fmt: skip
        projector = dataclasses.replace(PROJECTOR, children=(child,), lookups=())
        truth = MysqlTruth(consumer_pool)
        w = RealRelationsWorld(app_pool, truth, f"it-{u}-")
        await w.put_article({"id": article_id, "title": "t", "body": "b", "author_id": None,
                             "revision": 1, "deleted_at": None})  # fmt: skip
        for _ in range(2):
            rows = await truth.rows_by_id(projector, [article_id])
            assert [(e["at"], e["amount"]) for e in rows[article_id]["events"]] == [
                (datetime(2026, 1, 1), Decimal("2.00")),
                (datetime(2026, 1, 2, 3, 4, 5, 500000), Decimal("1.25")),
            ]
    finally:
        await _execute(app_pool, "DELETE FROM article WHERE id = %s", (article_id,))
        await admin_execute(root_socket(), db, [f"DROP TABLE `{table}`"])
