"""The MySQL-side port contracts (tests/contract) against MariaDB, through the adapters the
product uses; tests/unit/test_mysql_contracts.py runs the same cases against the fakes.

The tables are the shared ones of the local stack: every case works under its own fresh prefix
(ids, aliases, DLQ topics, the wheel's scope), and the truth rows it writes are deleted after it.
Outbox rows become Kafka events (Debezium), of ids no row has.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.config import MysqlSettings, Secret, load_settings
from searchsync.dlq.replays import MysqlReplayLedger
from searchsync.mysql.lineage import MysqlTopicLineage
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.pool import db_time, pool_of, transaction
from searchsync.mysql.projection_state import ProjectionStateWriter, StateUpdate
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.rebuild.records import MysqlRebuildState
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.lease import MysqlLeaseStore
from searchsync.projection import Row
from searchsync.runtime import Runtime

from tests.contract.gap_acks_contract import GAP_ACKS_CASES
from tests.contract.lineage_lease_contract import LEASE_CASES, LINEAGE_CASES
from tests.contract.outbox_contract import OUTBOX_CASES
from tests.contract.projection_state_contract import PROJECTION_STATE_CASES
from tests.contract.rebuild_state_contract import REBUILD_STATE_CASES
from tests.contract.replay_ledger_contract import REPLAY_LEDGER_CASES
from tests.contract.truth_contract import PROJECTOR, TRUTH_CASES, TYPE
from tests.contract.wheel_state_contract import WHEEL_STATE_CASES
from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget, fetch_all

# The MariaDB fixtures, made visible to pytest in this module (see conftest_mysql's docstring).
mysql_target = fx.mysql_target
app_pool = fx.app_pool
consumer_pool = fx.consumer_pool
id_prefix = fx.id_prefix

pytestmark = pytest.mark.integration
session_loop = pytest.mark.asyncio(loop_scope="session")
AsyncCase = Callable[[Any], Awaitable[None]]


async def _execute(pool: aiomysql.Pool, sql: str, args: tuple[Any, ...]) -> None:
    async with transaction(pool) as conn, conn.cursor() as cur:
        await cur.execute(sql, args)


class RealTruthWorld:
    """`MysqlTruth` as the consumer's user; rows and floors written as the application's."""

    def __init__(self, app: aiomysql.Pool, consumer: aiomysql.Pool, prefix: str) -> None:
        self.truth = MysqlTruth(consumer, id_prefix=prefix)
        self.prefix = prefix
        self._app = app

    async def put(self, row: Row) -> None:
        columns = [*PROJECTOR.columns, "updated_at"]
        values = [row[c] for c in PROJECTOR.columns] + [db_time(utc_now())]
        await _execute(
            self._app,
            f"INSERT INTO wiki_page ({', '.join(columns)})"
            f" VALUES ({', '.join(['%s'] * len(columns))})",
            tuple(values),
        )

    async def put_floor(self, aggregate_id: str, revision: int) -> None:
        await _execute(
            self._app,
            "INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision, deleted_at)"
            " VALUES (%s, %s, %s, %s)",
            (TYPE, aggregate_id, revision, db_time(utc_now())),
        )

    async def clean(self) -> None:
        like = self.prefix + "%"
        await _execute(self._app, "DELETE FROM wiki_page WHERE id LIKE %s", (like,))
        await _execute(
            self._app, "DELETE FROM search_revision_floor WHERE aggregate_id LIKE %s", (like,)
        )


class RealOutboxWorld:
    def __init__(self, consumer: aiomysql.Pool, prefix: str) -> None:
        self.outbox = MysqlOutbox(consumer)
        self.prefix = prefix
        self._pool = consumer

    async def _one(self, sql: str, args: tuple[Any, ...]) -> Any:
        [row] = await fetch_all(self._pool, sql, args)
        return next(iter(row.values()))

    async def last_id(self) -> int:
        return int(await self._one("SELECT COALESCE(MAX(id), 0) AS m FROM search_outbox", ()))

    async def row_id(self, aggregate_id: str) -> int:
        return int(
            await self._one(
                "SELECT MAX(id) AS m FROM search_outbox WHERE aggregate_type = 'wiki_page'"
                " AND aggregate_id = %s",
                (aggregate_id,),
            )
        )

    async def floor(self, aggregate_id: str) -> int | None:
        rows = await fetch_all(
            self._pool,
            "SELECT revision FROM search_revision_floor WHERE aggregate_type = 'wiki_page'"
            " AND aggregate_id = %s",
            (aggregate_id,),
        )
        return int(rows[0]["revision"]) if rows else None


class RealStateWorld:
    def __init__(self, consumer: aiomysql.Pool, prefix: str) -> None:
        self.state = fx.StateTable(consumer)
        self.store = MysqlRebuildState(consumer)
        self.prefix = prefix


class RealWheelWorld:
    def __init__(self, consumer: aiomysql.Pool, prefix: str) -> None:
        self.state = MysqlWheelState(consumer, scope=prefix)


class RealLedgerWorld:
    """`MysqlReplayLedger` on its own loop and pool, as the DLQ commands run it."""

    def __init__(self, mysql: MysqlSettings, prefix: str) -> None:
        self.ledger = MysqlReplayLedger(Runtime(replace(load_settings({}), mysql=mysql)))
        self.prefix = prefix
        self._mysql = mysql

    def mark_indexed(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        async def write() -> None:
            async with pool_of(self._mysql, maxsize=1) as pool:
                update = StateUpdate(aggregate_type, aggregate_id, revision, revision, 1, "0" * 64)
                await ProjectionStateWriter(pool).record([update])

        asyncio.run(write())


@pytest_asyncio.fixture(loop_scope="session")
async def truth_world(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> AsyncIterator[RealTruthWorld]:
    world = RealTruthWorld(app_pool, consumer_pool, id_prefix)
    try:
        yield world
    finally:
        await world.clean()


def _underscored() -> str:
    return f"it_{uuid.uuid4().hex[:12]}_"


@pytest.mark.parametrize("case", TRUTH_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_truth_contract(case: AsyncCase, truth_world: RealTruthWorld) -> None:
    await case(truth_world)


@pytest.mark.parametrize("case", OUTBOX_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_outbox_contract(
    case: AsyncCase, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    await case(RealOutboxWorld(consumer_pool, id_prefix))


@pytest.mark.parametrize("case", PROJECTION_STATE_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_projection_state_contract(
    case: AsyncCase, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    await case(RealStateWorld(consumer_pool, id_prefix))


@pytest.mark.parametrize("case", REBUILD_STATE_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_rebuild_state_contract(case: AsyncCase, consumer_pool: aiomysql.Pool) -> None:
    await case(RealStateWorld(consumer_pool, _underscored()))


@pytest.mark.parametrize("case", WHEEL_STATE_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_wheel_state_contract(case: AsyncCase, consumer_pool: aiomysql.Pool) -> None:
    await case(RealWheelWorld(consumer_pool, _underscored()))


class RealGapAcksWorld:
    def __init__(self, pool: aiomysql.Pool, prefix: str) -> None:
        self.acks = fx.GapAckTable(pool)
        self.prefix = prefix


@pytest.mark.parametrize("case", GAP_ACKS_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_gap_acks_contract(case: AsyncCase, consumer_pool: aiomysql.Pool) -> None:
    await case(RealGapAcksWorld(consumer_pool, _underscored()))


class RealLineageWorld:
    def __init__(self, pool: aiomysql.Pool, prefix: str) -> None:
        self.lineage = MysqlTopicLineage(pool)
        self.prefix = prefix


class RealLeaseWorld:
    def __init__(self, pool: aiomysql.Pool, prefix: str) -> None:
        self.leases = MysqlLeaseStore(pool)
        self.prefix = prefix


@pytest.mark.parametrize("case", LINEAGE_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_topic_lineage_contract(case: AsyncCase, consumer_pool: aiomysql.Pool) -> None:
    await case(RealLineageWorld(consumer_pool, _underscored()))


@pytest.mark.parametrize("case", LEASE_CASES, ids=lambda case: case.__name__)
@session_loop
async def test_repair_lease_contract(case: AsyncCase, consumer_pool: aiomysql.Pool) -> None:
    await case(RealLeaseWorld(consumer_pool, _underscored()))


@pytest.fixture
def ledger_world(mysql_target: MysqlTarget) -> Iterator[RealLedgerWorld]:
    mysql = MysqlSettings(
        host=mysql_target.host,
        port=mysql_target.port,
        user=mysql_target.consumer_user,
        password=Secret(mysql_target.consumer_password),
        database=mysql_target.database,
    )
    world = RealLedgerWorld(mysql, _underscored())
    try:
        yield world
    finally:
        world.ledger.close()


@pytest.mark.parametrize("case", REPLAY_LEDGER_CASES, ids=lambda case: case.__name__)
def test_replay_ledger_contract(case: Callable[[Any], None], ledger_world: RealLedgerWorld) -> None:
    case(ledger_world)
