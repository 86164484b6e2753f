"""The `FanoutStore` contract (tests/contract/fanout_contract.py) against MariaDB: `MysqlFanout`
as the consumer's user, the dependents (``article`` rows) written as the application's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.mysql.fanout import MysqlFanout
from searchsync.mysql.pool import db_time, transaction

from tests.contract.fanout_contract import FANOUT_CASES
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import fetch_all

mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
AsyncCase = Callable[[Any], Awaitable[None]]


class RealFanoutWorld:
    def __init__(self, app: aiomysql.Pool, consumer: aiomysql.Pool, prefix: str) -> None:
        self.store = MysqlFanout(consumer)
        self.prefix = prefix
        self.kind = f"it_{uuid.uuid4().hex[:12]}"  # nobody else's jobs have this type
        self._app, self._consumer = app, consumer

    async def put(self, dependent_id: str, author_id: str | None, revision: int) -> None:
        async with transaction(self._app) as conn, conn.cursor() as cur:
            await cur.execute(
                "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
                " VALUES (%s, 't', 'b', %s, %s, %s)",
                (dependent_id, author_id, revision, db_time(utc_now())),
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
        served = [(self.kind, "article", "author")]
        while (job := await self.store.claim(owner, -1.0, served)) is not None:
            assert await self.store.finish(job, owner)


@pytest_asyncio.fixture(loop_scope="session")
async def world(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> AsyncIterator[RealFanoutWorld]:
    w = RealFanoutWorld(app_pool, consumer_pool, id_prefix)
    try:
        yield w
    finally:
        await w.clean()


@pytest.mark.parametrize("case", FANOUT_CASES, ids=lambda case: case.__name__)
async def test_fanout_contract(case: AsyncCase, world: RealFanoutWorld) -> None:
    await case(world)
