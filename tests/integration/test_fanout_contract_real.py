"""The `FanoutStore` contract (tests/contract/fanout_contract.py) against MariaDB: `MysqlFanout`
as the consumer's user, the dependents (``article`` rows) written as the application's, and a
scratch child table of articles (``it_<hex>_ref``, with the index ``(ref_id, article_id)``) for
the route through a child table."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.mysql.fanout import MysqlFanout
from searchsync.mysql.fanout_dependents import DependentIndexes, dependents_sql
from searchsync.mysql.pool import db_time, transaction
from searchsync.projection import Child

from tests.contract.fanout_contract import FANOUT_CASES, REF, ref_child
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget, fetch_all
from tests.integration.scratch_tables import scratch_tables

mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
AsyncCase = Callable[[Any], Awaitable[None]]


class RealFanoutWorld:
    def __init__(
        self, app: aiomysql.Pool, consumer: aiomysql.Pool, prefix: str, child: Child
    ) -> None:
        self.store = MysqlFanout(consumer)
        self.prefix = prefix
        self.kind = f"it_{uuid.uuid4().hex[:12]}"  # nobody else's jobs have this type
        self.child = child
        self._app, self._consumer = app, consumer

    async def put(self, dependent_id: str, author_id: str | None, revision: int) -> None:
        async with transaction(self._app) as conn, conn.cursor() as cur:
            await cur.execute(
                "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
                " VALUES (%s, 't', 'b', %s, %s, %s)",
                (dependent_id, author_id, revision, db_time(utc_now())),
            )

    async def put_link(self, dependent_id: str, ref_id: str, position: int) -> None:
        async with transaction(self._app) as conn, conn.cursor() as cur:
            await cur.execute(
                f"INSERT INTO `{self.child.table}` (article_id, {REF}, position)"
                " VALUES (%s, %s, %s)",
                (dependent_id, ref_id, position),
            )

    async def rebuilds(self, ids: list[str]) -> list[tuple[str, str, int]]:
        rows = await fetch_all(
            self._consumer,
            "SELECT aggregate_type, aggregate_id, source_revision FROM search_outbox"
            " WHERE aggregate_type = 'article' AND operation = 'REBUILD' AND aggregate_id IN ("
            + ", ".join(["%s"] * len(ids))
            + ") ORDER BY id",
            tuple(ids),
        )
        return [(r["aggregate_type"], r["aggregate_id"], int(r["source_revision"])) for r in rows]

    async def clean(self) -> None:
        """Delete the case's articles and finish its jobs (nobody serves their type)."""
        async with transaction(self._app) as conn, conn.cursor() as cur:
            await cur.execute("DELETE FROM article WHERE id LIKE %s", (self.prefix + "%",))
        owner = f"{self.prefix}cleaner"
        served = [(self.kind, "article", "author"), (self.kind, "article", "ref")]
        while (job := await self.store.claim(owner, -1.0, served)) is not None:
            assert await self.store.finish(job, owner)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def child(mysql_target: MysqlTarget) -> AsyncIterator[Child]:
    table = f"it_{uuid.uuid4().hex[:12]}_ref"
    ddl = (
        f"CREATE TABLE `{table}` (article_id VARCHAR(64) NOT NULL, {REF} VARCHAR(64) NOT NULL,"
        f" position INT NOT NULL, PRIMARY KEY (article_id, position),"
        f" KEY ref_article ({REF}, article_id)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    )
    async with scratch_tables(mysql_target, [table], [ddl]):
        yield ref_child(table)


@pytest_asyncio.fixture(loop_scope="session")
async def world(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str, child: Child
) -> AsyncIterator[RealFanoutWorld]:
    w = RealFanoutWorld(app_pool, consumer_pool, id_prefix, child)
    try:
        yield w
    finally:
        await w.clean()


@pytest.mark.parametrize("case", FANOUT_CASES, ids=lambda case: case.__name__)
async def test_fanout_contract(case: AsyncCase, world: RealFanoutWorld) -> None:
    await case(world)


async def test_a_page_through_a_child_is_one_range_of_its_via_key_index(
    consumer_pool: aiomysql.Pool, child: Child
) -> None:
    """EXPLAIN of the page query the store runs: the child's index ``(ref_id, article_id)``
    found and read as a range on both columns (from the cursor on, not from the reference's
    first entry), the root by primary key, no sort and no temporary table."""
    async with transaction(consumer_pool) as conn:
        async with conn.cursor() as cur:
            index = await DependentIndexes().name(cur, child, REF)
            # no index starts with (position, article_id): the page runs unhinted
            assert await DependentIndexes().name(cur, child, "position") is None
        assert index == "ref_article"
        assert "FORCE INDEX" not in dependents_sql("article", "position", child, None)
        async with conn.cursor(aiomysql.DictCursor) as cur:
            await cur.execute(
                "EXPLAIN " + dependents_sql("article", REF, child, index), ("x", "after", 500)
            )
            plan = await cur.fetchall()
    assert [(r["table"], r["type"], r["key"]) for r in plan] == [
        ("c", "range", "ref_article"),
        ("r", "eq_ref", "PRIMARY"),
    ]
    assert not any(w in (r["Extra"] or "") for r in plan for w in ("filesort", "temporary"))
