"""`AsyncAggregateWriter`: the application-side writer on an aiomysql pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import aiomysql

from searchsync.mysql.pool import db_time, transaction, translate_errors
from searchsync.writer._plan import Begun, Plan, WriterBase
from searchsync.writer._table import Change

T = TypeVar("T")


class AsyncAggregateWriter(WriterBase[aiomysql.Pool, AbstractAsyncContextManager[Change]]):
    """`AggregateWriter` on an aiomysql pool: one pooled connection and transaction per change, each
    method an async context manager yielding its `Change`."""

    @asynccontextmanager
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


async def run_plan_async(cursor: Any, plan: Plan[T], doing: str) -> T:
    """Run `plan` on an aiomysql cursor; driver errors are thrown into the plan, then translated
    (naming `doing`)."""
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
        result: T = done.value
        return result
