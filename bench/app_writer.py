"""The application-side writers' cost on the local stack: changes per second of
`AggregateWriter` (PyMySQL, one thread per writer) and `AsyncAggregateWriter` (aiomysql, one task
per writer), on distinct ids and on one hot id (where the row lock serializes every change).

    .venv/bin/python -m bench.app_writer [--changes N] [--writers W]

A scratch aggregate type of its own (``bw<hex>_thing``, created as MariaDB's root over the
stack's socket, dropped at the end), so its outbox events go to a topic nobody reads. Each change
updates one column and replaces one child row, as an application with children would. Prints one
line per (driver, shape); asserts that the hot id's revisions rose by exactly one per change.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pymysql
from searchsync.config import MysqlSettings
from searchsync.writer import AggregateTable, AggregateWriter, AsyncAggregateWriter

from bench.common import app_user, host_line, open_app_pool
from tests.scratch import admin_execute

_ENV_SH = Path(__file__).resolve().parents[1] / "deploy" / "local" / "env.sh"


def _root_socket() -> str:
    cmd = 'source "$1" >/dev/null 2>&1; printf %s "$MYSQL_SOCKET"'
    done = subprocess.run(
        ["bash", "-c", cmd, "_", str(_ENV_SH)], check=True, capture_output=True, text=True
    )
    return done.stdout


def _child_sql(table: AggregateTable, aggregate_id: str, n: int) -> list[tuple[str, Any]]:
    return [
        (f"DELETE FROM `{table.table}_tag` WHERE thing_id = %s", (aggregate_id,)),
        (f"INSERT INTO `{table.table}_tag` VALUES (%s, %s)", (aggregate_id, f"t{n}")),
    ]


async def _timed(label: str, changes: int, run: Awaitable[Any]) -> None:
    started = time.perf_counter()
    await run
    seconds = time.perf_counter() - started
    print(f"{label:<28} {changes:>6} changes  {changes / seconds:>8.0f} changes/s")


async def main(changes: int, writers: int) -> None:
    mysql = MysqlSettings()
    user, password = app_user()
    name = f"bw{uuid.uuid4().hex[:8]}_thing"
    table = AggregateTable(name, name)
    ddl = [
        f"CREATE TABLE `{name}` (id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL,"
        " revision BIGINT UNSIGNED NOT NULL, deleted_at DATETIME(6) NULL,"
        " updated_at DATETIME(6) NOT NULL)",
        f"CREATE TABLE `{name}_tag` (thing_id VARCHAR(64), tag VARCHAR(64),"
        " PRIMARY KEY (thing_id, tag))",
        *(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{t}` TO '{user}'@'%'"
            for t in (name, f"{name}_tag")
        ),
    ]
    await admin_execute(_root_socket(), mysql.database, ddl)
    pool = await open_app_pool(mysql, minsize=writers, maxsize=writers)
    print(host_line())
    try:
        per = changes // writers

        def sync_job(ids: list[str], create: bool) -> None:
            conn = pymysql.connect(
                host=mysql.host, port=mysql.port, user=user, password=password,
                database=mysql.database, autocommit=False, charset="utf8mb4",
                init_command="SET SESSION tx_isolation = 'READ-COMMITTED'",
            )  # fmt: skip
            writer = AggregateWriter(conn, table)
            try:
                for n, aggregate_id in enumerate(ids):
                    cm = (
                        writer.create(aggregate_id, {"name": "x"})
                        if create
                        else writer.update(aggregate_id, {"name": f"n{n}"})
                    )
                    with cm as change:
                        for sql, args in _child_sql(table, aggregate_id, n):
                            change.cursor.execute(sql, args)
            finally:
                conn.close()

        async def async_job(ids: list[str], create: bool) -> None:
            writer = AsyncAggregateWriter(pool, table)
            for n, aggregate_id in enumerate(ids):
                cm = (
                    writer.create(aggregate_id, {"name": "x"})
                    if create
                    else writer.update(aggregate_id, {"name": f"n{n}"})
                )
                async with cm as change:
                    for sql, args in _child_sql(table, aggregate_id, n):
                        await change.cursor.execute(sql, args)

        for driver in ("sync", "async"):
            ids = [[f"{driver}-{w}-{i}" for i in range(per)] for w in range(writers)]
            hot = f"{driver}-hot"
            await async_job([hot], create=True)

            def jobs(shape: list[list[str]], create: bool, d: str = driver) -> Any:
                if d == "sync":
                    return asyncio.gather(*(asyncio.to_thread(sync_job, i, create) for i in shape))
                return asyncio.gather(*(async_job(i, create) for i in shape))

            total = per * writers
            await _timed(f"{driver} create, distinct ids", total, jobs(ids, True))
            await _timed(f"{driver} update, distinct ids", total, jobs(ids, False))
            hot_ids = [[hot] * per for _ in range(writers)]
            await _timed(f"{driver} update, one hot id", total, jobs(hot_ids, False))
            async with AsyncAggregateWriter(pool, table).update(hot) as last:
                pass
            assert last.revision == total + 2, (last.revision, total)
    finally:
        pool.close()
        await pool.wait_closed()
        await admin_execute(
            _root_socket(),
            mysql.database,
            [
                *(
                    f"REVOKE ALL PRIVILEGES ON `{t}` FROM '{user}'@'%'"
                    for t in (name, f"{name}_tag")
                ),
                f"DROP TABLE IF EXISTS `{name}`, `{name}_tag`",
            ],
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=4)
    options = parser.parse_args()
    asyncio.run(main(options.changes, options.writers))
