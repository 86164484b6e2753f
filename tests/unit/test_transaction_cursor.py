"""`transaction_cursor`: one cursor in one transaction, with driver errors translated; a
connection's first transaction sets up its session first (READ COMMITTED)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiomysql
import pytest
from searchsync.errors import ErrorCode, TransientError
from searchsync.mysql.dialect import ISOLATION, SERVER_PROBE
from searchsync.mysql.pool import transaction_cursor


class _Cursor:
    def __init__(self, log: list[str], fail: BaseException | None) -> None:
        self._log, self._fail = log, fail

    async def __aenter__(self) -> _Cursor:
        self._log.append("open")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._log.append("close")

    async def execute(self, sql: str) -> None:
        self._log.append(sql)
        if self._fail is not None and sql != ISOLATION:
            raise self._fail


class _Conn:
    closed = False

    def get_server_info(self) -> str:
        return "10.11.19-MariaDB"

    def __init__(self, log: list[str], fail: BaseException | None) -> None:
        self._log, self._fail = log, fail

    async def begin(self) -> None:
        self._log.append("begin")

    async def commit(self) -> None:
        self._log.append("commit")

    async def rollback(self) -> None:
        self._log.append("rollback")

    def cursor(self) -> _Cursor:
        return _Cursor(self._log, self._fail)


class _Pool:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.log: list[str] = []
        self._conn = _Conn(self.log, fail)

    async def acquire(self) -> _Conn:
        return self._conn

    async def release(self, conn: Any) -> None:
        self.log.append("release")


async def _run(pool: _Pool) -> None:
    async with transaction_cursor(pool, "read t") as cur:
        await cur.execute("SELECT 1")


def test_the_body_runs_on_one_cursor_in_a_committed_transaction() -> None:
    pool = _Pool()
    asyncio.run(_run(pool))
    session = ["open", ISOLATION, "close"]  # a pool made elsewhere: the handshake's family
    assert pool.log == [*session, "begin", "open", "SELECT 1", "close", "commit", "release"]
    asyncio.run(_run(pool))  # the same connection again: its session is set up already
    assert pool.log.count(ISOLATION) == 1 and SERVER_PROBE not in pool.log
    assert pool.log[-6:][0] == "begin"


def test_a_driver_error_is_translated_with_what_was_being_done_and_rolled_back() -> None:
    pool = _Pool(aiomysql.OperationalError(1213, "Deadlock found"))
    with pytest.raises(TransientError) as caught:
        asyncio.run(_run(pool))
    assert caught.value.code is ErrorCode.MYSQL_DEADLOCK
    assert "read t: (1213" in str(caught.value)
    assert pool.log[3:] == ["begin", "open", "SELECT 1", "close", "rollback", "release"]


def test_other_errors_pass_through_unchanged_and_roll_back() -> None:
    pool = _Pool(aiomysql.IntegrityError(1062, "Duplicate entry"))
    with pytest.raises(aiomysql.IntegrityError):
        asyncio.run(_run(pool))
    assert pool.log[-2:] == ["rollback", "release"]
