"""The two writers, each running `WriterBase`'s plans on its driver: `AggregateWriter` on a PyMySQL
connection, `AsyncAggregateWriter` on an aiomysql pool."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from typing import Any, cast

import aiomysql

from searchsync.mysql.pool import db_time, transaction, translate_errors
from searchsync.writer._plan import Begun, Plan, T, WriterBase
from searchsync.writer._table import Change


class AggregateWriter(WriterBase[Any, contextlib.AbstractContextManager[Change]]):
    """Changes the rows of one aggregate type on one PyMySQL connection (autocommit off, one
    thread), one transaction per change.

    On refusal nothing was written: `AggregateNotFound`, `AggregateExists`,
    `AggregateStateConflict`, or a `TransientError` (``MYSQL_DEADLOCK``, ``MYSQL_LOCK_TIMEOUT``:
    retry; ``MYSQL_UNAVAILABLE``: the connection is gone). ``delete_outbox_row=True`` also deletes
    each outbox row in its transaction.
    """

    @contextlib.contextmanager
    def _change(
        self, aggregate_id: str, begin: Callable[[datetime], Plan[Begun]]
    ) -> Iterator[Change]:
        now = db_time(self._clock())
        plan = begin(now)  # checks the arguments before the transaction
        conn = self._db
        with translate_errors("begin"):
            conn.begin()
        try:
            with conn.cursor() as cur:
                doing = f"write {self.table.aggregate_type} {aggregate_id!r}"
                begun = run_plan(cur, plan, doing)
                yield self._opened(aggregate_id, begun, conn, cur)
                run_plan(cur, self._finish(aggregate_id, begun, now), doing)
            with translate_errors("commit"):
                conn.commit()
        except BaseException:
            try:
                conn.rollback()
            except Exception:  # the connection is gone: close it, raise what happened
                with contextlib.suppress(Exception):
                    conn.close()
            raise


class AsyncAggregateWriter(
    WriterBase[aiomysql.Pool, contextlib.AbstractAsyncContextManager[Change]]
):
    """`AggregateWriter` on an aiomysql pool: one pooled connection and transaction per change, each
    method an async context manager yielding its `Change`."""

    @contextlib.asynccontextmanager
    async def _change(
        self, aggregate_id: str, begin: Callable[[datetime], Plan[Begun]]
    ) -> AsyncIterator[Change]:
        now = db_time(self._clock())
        plan = begin(now)  # checks the arguments before a connection is taken
        doing = f"write {self.table.aggregate_type} {aggregate_id!r}"
        async with transaction(self._db) as conn, conn.cursor() as cur:
            begun = await run_plan_async(cur, plan, doing)
            yield self._opened(aggregate_id, begun, conn, cur)
            await run_plan_async(cur, self._finish(aggregate_id, begun, now), doing)


def run_plan(cursor: Any, plan: Plan[T], doing: str) -> T:
    """Run `plan` on a PyMySQL cursor; driver errors are thrown into the plan, then translated
    (naming `doing`)."""
    try:
        statement = next(plan)
        while True:
            try:
                with translate_errors(doing):
                    cursor.execute(statement.sql, statement.params)
                    row = cursor.fetchone() if statement.fetch else None
            except Exception as exc:
                statement = plan.throw(exc)
            else:
                statement = plan.send(row)
    except StopIteration as done:
        return cast(T, done.value)


async def run_plan_async(cursor: Any, plan: Plan[T], doing: str) -> T:
    """`run_plan` on an aiomysql cursor."""
    try:
        statement = next(plan)
        while True:
            try:
                with translate_errors(doing):
                    await cursor.execute(statement.sql, statement.params)
                    row = await cursor.fetchone() if statement.fetch else None
            except Exception as exc:
                statement = plan.throw(exc)
            else:
                statement = plan.send(row)
    except StopIteration as done:
        return cast(T, done.value)
