"""``search_outbox``: the one row builder every writer appends through (its ``payload`` is the thin
event as Debezium's Outbox Event Router publishes it), and `Outbox`, the operator jobs' port on the
table (prune pages and deletes, REBUILD appends, row count). Deleting an outbox row is never an
event: the connector has ``tombstones.on.delete=false`` and the router drops deletes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import aiomysql

from searchsync.clock import utc_now
from searchsync.events import encode_json
from searchsync.mysql.pool import (
    db_time,
    fetch_all,
    transaction,
    transaction_cursor,
    translate_errors,
)
from searchsync.types import Operation, ThinEvent

OUTBOX_DELETE: Final = "DELETE FROM search_outbox WHERE event_id = %s"
"""Debezium's own pattern (the writers' ``delete_outbox_row=True``): delete the row, by its
``event_id``, in the transaction that inserted it; the binlog still carries the insert."""


@dataclass(frozen=True, slots=True)
class OutboxInsert:
    """One outbox row's INSERT, for either driver: ``cursor.execute(insert.sql, insert.params)``."""

    event_id: str
    sql: str
    params: tuple[Any, ...]


def outbox_insert(
    aggregate_type: str,
    aggregate_id: str,
    operation: Operation | str,
    revision: int,
    *,
    now: datetime | None = None,
) -> OutboxInsert:
    """The INSERT of one outbox row with a fresh ``event_id``; ``payload`` is the thin event as
    `encode_json` writes it. ValueError for an unknown operation or a revision below 1."""
    op = Operation(operation)
    if revision < 1:
        raise ValueError(f"source_revision must be >= 1, got {revision}")
    event = ThinEvent(str(uuid.uuid4()), aggregate_type, aggregate_id, op, revision)
    at = db_time(now if now is not None else utc_now())
    payload = encode_json(event).decode("utf-8")
    params = (event.event_id, aggregate_type, aggregate_id, op.value, revision, payload, at, at, at)
    return OutboxInsert(event.event_id, _INSERT, params)


_INSERT: Final = (
    "INSERT INTO search_outbox (event_id, aggregate_type, aggregate_id, operation,"
    " source_revision, payload, available_at, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


async def append_outbox(
    conn: Any,
    aggregate_type: str,
    aggregate_id: str,
    operation: Operation | str,
    revision: int,
    *,
    now: datetime | None = None,
) -> str:
    """Insert one outbox row (`outbox_insert`) in `conn`'s open transaction; its ``event_id``."""
    insert = outbox_insert(aggregate_type, aggregate_id, operation, revision, now=now)
    with translate_errors("insert search_outbox"):
        async with conn.cursor() as cur:
            await cur.execute(insert.sql, insert.params)
    return insert.event_id


async def append_rebuilds(
    conn: Any, aggregate_type: str, revisions: Sequence[tuple[str, int]], *, now: datetime
) -> None:
    """One REBUILD row per (id, revision) in `conn`'s open transaction, in one multi-row INSERT."""
    inserts = [
        outbox_insert(aggregate_type, aggregate_id, Operation.REBUILD, revision, now=now)
        for aggregate_id, revision in revisions
    ]
    if not inserts:
        return
    with translate_errors("insert search_outbox"):
        async with conn.cursor() as cur:
            await cur.executemany(inserts[0].sql, [i.params for i in inserts])


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: int
    created_at: datetime  # naive UTC, as the DATETIME(6) column holds it
    status: str = "PENDING"  # the polling relay's (searchsync.relay); Debezium ignores it


class Outbox(Protocol):
    """``search_outbox`` as the operator jobs see it; each call is its own short transaction."""

    async def page(self, after_id: int, limit: int) -> list[OutboxRow]:
        """The next `limit` rows with ``id > after_id``, by id."""

    async def delete_range(
        self, first_id: int, last_id: int, created_before: datetime, *, published_only: bool = False
    ) -> int:
        """Delete the rows with ``first_id <= id <= last_id`` created before `created_before`
        (with `published_only`, only those the relay marked PUBLISHED); the number deleted."""

    async def append_rebuild(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        """Append one REBUILD event at `revision`."""

    async def append_orphan(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        """Raise the id's revision floor to `revision` and append a REBUILD at it, together."""

    async def stats(self) -> tuple[int, datetime | None]:
        """The rows in the table and the oldest ``created_at`` (None when empty)."""


class MysqlOutbox:
    """`Outbox` on MySQL (READ COMMITTED: no gap locks, the application's inserts never wait)."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def page(self, after_id: int, limit: int) -> list[OutboxRow]:
        rows = await fetch_all(
            self._pool,
            "read search_outbox",
            "SELECT id, created_at, status FROM search_outbox WHERE id > %s ORDER BY id LIMIT %s",
            (after_id, limit),
        )
        return [OutboxRow(int(r[0]), r[1], str(r[2])) for r in rows]

    async def delete_range(
        self, first_id: int, last_id: int, created_before: datetime, *, published_only: bool = False
    ) -> int:
        only = " AND status = 'PUBLISHED'" if published_only else ""
        async with transaction_cursor(self._pool, "delete search_outbox") as cur:
            await cur.execute(
                "DELETE FROM search_outbox WHERE id BETWEEN %s AND %s AND created_at < %s" + only,
                (first_id, last_id, db_time(created_before)),
            )
            return int(cur.rowcount)

    async def append_rebuild(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        async with transaction(self._pool) as conn:
            await append_outbox(conn, aggregate_type, aggregate_id, Operation.REBUILD, revision)

    async def append_orphan(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        now = utc_now()
        async with transaction_cursor(self._pool, "raise search_revision_floor") as cur:
            await cur.execute(
                "INSERT INTO search_revision_floor (aggregate_type, aggregate_id,"
                " revision, deleted_at) VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
                " revision = GREATEST(revision, VALUES(revision))",
                (aggregate_type, aggregate_id, revision, db_time(now)),
            )
            await append_outbox(
                cur.connection, aggregate_type, aggregate_id, Operation.REBUILD, revision, now=now
            )

    async def stats(self) -> tuple[int, datetime | None]:
        sql = "SELECT COUNT(*), MIN(created_at) FROM search_outbox"
        ((count, oldest),) = await fetch_all(self._pool, "read search_outbox", sql)
        return int(count), oldest
