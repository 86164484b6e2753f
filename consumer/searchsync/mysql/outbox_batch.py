"""Many REBUILD events in one multi-row INSERT, made by the one outbox append (`append_outbox`):
the fan-out appends a page of them per transaction (`searchsync.mysql.fanout`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import translate_errors
from searchsync.types import Operation

__all__ = ["append_rebuilds"]


async def append_rebuilds(
    conn: Any, aggregate_type: str, revisions: Sequence[tuple[str, int]], *, now: datetime
) -> None:
    """Insert one REBUILD row per (id, revision) into `conn`'s open transaction, in one statement:
    the rows `append_outbox` makes, so ``payload`` is the thin event as ever."""
    rows = _Rows()
    for aggregate_id, revision in revisions:
        await append_outbox(
            rows, aggregate_type, aggregate_id, Operation.REBUILD, revision, now=now
        )
    if not rows.params:
        return
    with translate_errors("insert search_outbox"):
        async with conn.cursor() as cur:
            await cur.executemany(rows.sql, rows.params)


class _Rows:
    """Stands in for a connection: keeps the INSERT `append_outbox` would execute, per row."""

    def __init__(self) -> None:
        self.sql = ""
        self.params: list[tuple[Any, ...]] = []

    def cursor(self) -> _Rows:
        return self

    async def __aenter__(self) -> _Rows:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        self.sql = sql
        self.params.append(params)
