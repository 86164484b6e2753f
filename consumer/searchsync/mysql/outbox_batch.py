"""Many REBUILD events in one multi-row INSERT of the one outbox row (`outbox_insert`): the
fan-out appends a page of them per transaction (`searchsync.mysql.fanout`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from searchsync.mysql.outbox import outbox_insert
from searchsync.mysql.pool import translate_errors
from searchsync.types import Operation

__all__ = ["append_rebuilds"]


async def append_rebuilds(
    conn: Any, aggregate_type: str, revisions: Sequence[tuple[str, int]], *, now: datetime
) -> None:
    """Insert one REBUILD row per (id, revision) into `conn`'s open transaction, in one statement:
    the rows `outbox_insert` builds, so ``payload`` is the thin event as for any append."""
    inserts = [
        outbox_insert(aggregate_type, aggregate_id, Operation.REBUILD, revision, now=now)
        for aggregate_id, revision in revisions
    ]
    if not inserts:
        return
    with translate_errors("insert search_outbox"):
        async with conn.cursor() as cur:
            await cur.executemany(inserts[0].sql, [i.params for i in inserts])
