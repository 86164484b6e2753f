"""MariaDB fixtures for the integration tests (imported explicitly by the test modules).

Two session-scoped pools on the real server, one per database user, so the tests also prove the
grants of deploy/local/migrate.sh are enough (and no more than needed):

- `app_pool`: the application user (``searchsync_app``): writer, loadgen;
- `consumer_pool`: the consumer user (``searchsync``): truth reads, projection state, REBUILD
  events.

Settings come from the environment, defaulting to the local stack: ``SEARCHSYNC_MYSQL_HOST``,
``SEARCHSYNC_MYSQL_PORT``, ``SEARCHSYNC_MYSQL_DATABASE``, ``SEARCHSYNC_MYSQL_USER`` /
``SEARCHSYNC_MYSQL_PASSWORD`` (consumer) and ``APP_DB_USER`` /
``APP_DB_PASSWORD`` (application). An unreachable server FAILS the tests that need
it, with the address it tried: a skipped integration test would hide a broken stack.

The pools live on the session event loop, so test modules using them run there:
``pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]``.

Every outbox row a test writes becomes a Kafka event (Debezium reads the binlog), so tests use
fresh uuid-prefixed ids (`id_prefix`) and never truncate shared tables.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from datetime import UTC
from pathlib import Path
from typing import Any

import aiomysql
import pymysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.errors import ConfigError, TransientError
from searchsync.mysql.lineage import GapAck, MysqlGapAcks
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import create_pool, db_time, expand_in, transaction
from searchsync.mysql.projection_state import ProjectionStateWriter
from searchsync.types import Operation

from tests.fakes.projection_state import ProjectionState

__all__ = [
    "GapAckTable",
    "MysqlTarget",
    "StateTable",
    "app_pool",
    "consumer_pool",
    "fetch_all",
    "id_prefix",
    "mysql_target",
    "outbox_rows",
    "pymysql_connection",
    "recreate_ignoring_the_floor",
    "root_socket",
]


@dataclass(frozen=True, slots=True)
class MysqlTarget:
    host: str
    port: int
    database: str
    app_user: str
    app_password: str
    consumer_user: str
    consumer_password: str


def _target_from_env() -> MysqlTarget:
    env = os.environ.get
    return MysqlTarget(
        host=env("SEARCHSYNC_MYSQL_HOST", "127.0.0.1"),
        port=int(env("SEARCHSYNC_MYSQL_PORT", "3306")),
        database=env("SEARCHSYNC_MYSQL_DATABASE", "searchsync"),
        app_user=env("APP_DB_USER", "searchsync_app"),
        app_password=env("APP_DB_PASSWORD", "searchsync_app"),
        consumer_user=env("SEARCHSYNC_MYSQL_USER", "searchsync"),
        consumer_password=env("SEARCHSYNC_MYSQL_PASSWORD", "searchsync"),
    )


@pytest.fixture(scope="session")
def mysql_target() -> MysqlTarget:
    return _target_from_env()


async def _open(target: MysqlTarget, user: str, password: str) -> aiomysql.Pool:
    where = f"{user}@{target.host}:{target.port}/{target.database}"
    try:
        pool = await create_pool(
            host=target.host,
            port=target.port,
            user=user,
            password=password,
            database=target.database,
            minsize=1,
            maxsize=12,
        )
    except (TransientError, ConfigError) as exc:
        pytest.fail(
            f"MariaDB is not usable at {where}: {exc}. Start the local stack (make up) or point "
            "SEARCHSYNC_MYSQL_HOST/PORT/USER/PASSWORD (and _APP_USER/_APP_PASSWORD) at one.",
            pytrace=False,
        )
    try:
        async with transaction(pool) as conn, conn.cursor() as cur:
            await cur.execute("SELECT id FROM wiki_page LIMIT 0")
    except Exception as exc:
        pool.close()
        await pool.wait_closed()
        pytest.fail(
            f"MariaDB at {where} has no usable searchsync schema ({exc!r}): "
            "run deploy/local/migrate.sh.",
            pytrace=False,
        )
    return pool


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def app_pool(mysql_target: MysqlTarget) -> AsyncIterator[aiomysql.Pool]:
    pool = await _open(mysql_target, mysql_target.app_user, mysql_target.app_password)
    yield pool
    pool.close()
    await pool.wait_closed()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def consumer_pool(mysql_target: MysqlTarget) -> AsyncIterator[aiomysql.Pool]:
    pool = await _open(mysql_target, mysql_target.consumer_user, mysql_target.consumer_password)
    yield pool
    pool.close()
    await pool.wait_closed()


@pytest.fixture
def id_prefix() -> str:
    """A fresh id prefix for one test (ids are at most 64 characters: keep suffixes short)."""
    return f"it-{uuid.uuid4().hex[:12]}-"


def pymysql_connection(target: MysqlTarget) -> Any:
    """A PyMySQL connection of the application user, with the pool's session settings (for the
    synchronous writer, `searchsync.writer.AggregateWriter`). Close it after use."""
    return pymysql.connect(
        host=target.host,
        port=target.port,
        user=target.app_user,
        password=target.app_password,
        database=target.database,
        autocommit=False,
        charset="utf8mb4",
        init_command="SET SESSION tx_isolation = 'READ-COMMITTED', time_zone = '+00:00'",
    )


async def fetch_all(pool: aiomysql.Pool, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Rows of one SELECT as dicts, read in a transaction of their own (sees committed data)."""
    async with transaction(pool) as conn, conn.cursor(aiomysql.DictCursor) as cur:
        await cur.execute(sql, args)
        return list(await cur.fetchall())


class GapAckTable(MysqlGapAcks):
    """`MysqlGapAcks` that also reads back the rows (`FakeGapAcks.of_group`)."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        super().__init__(pool)
        self._reads = pool

    async def of_group(self, group: str) -> list[GapAck]:
        rows = await fetch_all(
            self._reads,
            "SELECT group_id, topic, kafka_partition, committed_offset, log_start_offset,"
            " lost_records, accepted_by, accepted_at FROM search_offset_gap_ack"
            " WHERE group_id = %s ORDER BY id",
            (group,),
        )
        return [
            GapAck(
                group=r["group_id"],
                topic=r["topic"],
                partition=r["kafka_partition"],
                committed=r["committed_offset"],
                log_start=r["log_start_offset"],
                missing=r["lost_records"],
                accepted_by=r["accepted_by"],
                accepted_at=r["accepted_at"].replace(tzinfo=UTC),
            )
            for r in rows
        ]


class StateTable(ProjectionStateWriter):
    """`ProjectionStateWriter` that also reads back the rows (`FakeProjectionState.read`)."""

    def __init__(self, pool: aiomysql.Pool, **kwargs: Any) -> None:
        super().__init__(pool, **kwargs)
        self._reads = pool

    async def read(self, aggregate_type: str, ids: list[str]) -> dict[str, ProjectionState]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        columns = ", ".join(f.name for f in fields(ProjectionState))
        sql = expand_in(
            f"SELECT {columns} FROM search_projection_state"
            " WHERE aggregate_type = %s AND aggregate_id IN %s",
            len(unique),
        )
        rows = await fetch_all(self._reads, sql, (aggregate_type, *unique))
        return {row["aggregate_id"]: ProjectionState(**row) for row in rows}


async def revision_floors(pool: aiomysql.Pool, ids: list[str]) -> dict[str, int]:
    """The revision floors of wiki_page `ids` that have one."""
    rows = await fetch_all(
        pool,
        "SELECT aggregate_id, revision FROM search_revision_floor WHERE aggregate_type ="
        " 'wiki_page' AND aggregate_id IN (" + ",".join(["%s"] * len(ids)) + ")",
        tuple(ids),
    )
    return {r["aggregate_id"]: int(r["revision"]) for r in rows}


async def outbox_rows(pool: aiomysql.Pool, aggregate_id: str) -> list[dict[str, Any]]:
    """The outbox rows of one wiki_page id, in insertion order."""
    return await fetch_all(
        pool,
        "SELECT id, event_id, aggregate_type, aggregate_id, operation, source_revision, payload,"
        " status, available_at, created_at FROM search_outbox"
        " WHERE aggregate_type = 'wiki_page' AND aggregate_id = %s ORDER BY id",
        (aggregate_id,),
    )


async def recreate_ignoring_the_floor(
    pool: aiomysql.Pool, page_id: str, title: str, content: str
) -> int:
    """UNSAFE on purpose: insert the wiki_page `page_id` at revision 1 with its UPSERT event,
    ignoring the id's revision floor, as an application that bypasses the writer would (for the
    revision-regression tests). Returns the revision written, 1."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            await cur.execute(
                "INSERT INTO wiki_page (id, title, content, relations_json, revision, deleted_at,"
                " updated_at) VALUES (%s, %s, %s, '{}', 1, NULL, %s)",
                (page_id, title, content, db_time(utc_now())),
            )
        await append_outbox(conn, "wiki_page", page_id, Operation.UPSERT, 1)
    return 1


def root_socket() -> str:
    """MariaDB's socket of the stack under test, as deploy/local/env.sh names it (under the
    clone's `.stack`, or under /var/lib/searchsync-stack for a clone in a closed directory): for
    DDL and grants as root (`tests.scratch.admin_execute`)."""
    env_sh = Path(__file__).resolve().parents[2] / "deploy" / "local" / "env.sh"
    done = subprocess.run(
        ["bash", "-c", 'source "$1" >/dev/null 2>&1; printf %s "$MYSQL_SOCKET"', "_", str(env_sh)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout
