"""The DLQ replay ledger: which dead letter was replayed, when, where to, and with which selection.

It is the append-only MySQL table ``search_dlq_replay`` (``schemas/sql/004_dlq_replays.sql``;
docs/design.md, "DLQ replay ledger"). `ReplayLedger` is the port; `MysqlReplayLedger` implements
it for the blocking operator commands (one private event loop drives the aiomysql pool code).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import aiomysql
import orjson

from searchsync.config import MysqlSettings
from searchsync.mysql.pool import db_time, expand_in, open_pool, transaction, translate_errors
from searchsync.types import TopicPartition

__all__ = ["MysqlReplayLedger", "ReplayEntry", "ReplayLedger"]


@dataclass(frozen=True, slots=True)
class ReplayEntry:
    """One dead letter replayed once. `replayed_to_offset` is the offset the broker gave the
    re-produced message (None when the delivery report did not say)."""

    dlq_topic: str
    dlq_partition: int
    dlq_offset: int
    event_id: str | None
    aggregate_type: str | None
    aggregate_id: str | None
    source_revision: int | None
    error_code: str
    replayed_to_topic: str
    replayed_to_partition: int
    replayed_to_offset: int | None
    selection: Mapping[str, Any]
    run_id: str
    replayed_at: datetime

    @property
    def dlq_position(self) -> tuple[str, int, int]:
        return (self.dlq_topic, self.dlq_partition, self.dlq_offset)

    @property
    def replayed_to(self) -> tuple[TopicPartition, int] | None:
        if self.replayed_to_offset is None:
            return None
        return ((self.replayed_to_topic, self.replayed_to_partition), self.replayed_to_offset)


_COLUMNS: Final = tuple(ReplayEntry.__dataclass_fields__)  # the table's, in this order


class ReplayLedger(Protocol):
    """Where replays are recorded, and what the projection state says was indexed since."""

    def replays(self, dlq_topic: str) -> list[ReplayEntry]:
        """Every recorded replay of dead letters of `dlq_topic`, oldest first."""
        ...

    def record(self, entry: ReplayEntry) -> None:
        """Append one replay (called once the broker acknowledged the re-produced message)."""
        ...

    def indexed_revisions(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, int]:
        """``search_projection_state.indexed_revision`` of each id that has one."""
        ...

    def close(self) -> None: ...


class MysqlReplayLedger:
    """`ReplayLedger` on ``search_dlq_replay`` and ``search_projection_state``.

    Blocking: each call runs on a private event loop that also owns the pool, which opens on
    the first call. `close` it.
    """

    def __init__(self, mysql: MysqlSettings) -> None:
        self._mysql = mysql
        self._runner = asyncio.Runner()
        self._pool: aiomysql.Pool | None = None

    def _connected(self) -> aiomysql.Pool:
        """The pool, opened on first use: a command that never needs the ledger never connects."""
        if self._pool is None:
            self._pool = self._runner.run(open_pool(self._mysql, maxsize=1))
        return self._pool

    def replays(self, dlq_topic: str) -> list[ReplayEntry]:
        return self._runner.run(self._replays(self._connected(), dlq_topic))

    def record(self, entry: ReplayEntry) -> None:
        self._runner.run(self._record(self._connected(), entry))

    def indexed_revisions(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, int]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        return self._runner.run(self._indexed(self._connected(), aggregate_type, unique))

    def close(self) -> None:
        try:
            if self._pool is not None:
                self._pool.close()
                self._runner.run(self._pool.wait_closed())
        finally:
            self._pool = None
            self._runner.close()

    async def _replays(self, pool: aiomysql.Pool, dlq_topic: str) -> list[ReplayEntry]:
        sql = (
            f"SELECT {', '.join(_COLUMNS)} FROM search_dlq_replay WHERE dlq_topic = %s"
            " ORDER BY replayed_at, id"
        )
        async with transaction(pool) as conn:
            with translate_errors("read search_dlq_replay"):
                async with conn.cursor(aiomysql.DictCursor) as cur:
                    await cur.execute(sql, (dlq_topic,))
                    rows: list[dict[str, Any]] = list(await cur.fetchall())
        return [_entry(row) for row in rows]

    async def _record(self, pool: aiomysql.Pool, entry: ReplayEntry) -> None:
        values = [getattr(entry, c) for c in _COLUMNS]
        values[_COLUMNS.index("selection")] = orjson.dumps(dict(entry.selection)).decode()
        values[_COLUMNS.index("replayed_at")] = db_time(entry.replayed_at)
        sql = (
            f"INSERT INTO search_dlq_replay ({', '.join(_COLUMNS)})"
            f" VALUES ({', '.join(['%s'] * len(_COLUMNS))})"
        )
        async with transaction(pool) as conn:
            with translate_errors("write search_dlq_replay"):
                async with conn.cursor() as cur:
                    await cur.execute(sql, values)

    async def _indexed(
        self, pool: aiomysql.Pool, aggregate_type: str, ids: list[str]
    ) -> dict[str, int]:
        sql = expand_in(
            "SELECT aggregate_id, indexed_revision FROM search_projection_state"
            " WHERE aggregate_type = %s AND aggregate_id IN %s AND indexed_revision IS NOT NULL",
            len(ids),
        )
        async with transaction(pool) as conn:
            with translate_errors("read search_projection_state"):
                async with conn.cursor() as cur:
                    await cur.execute(sql, (aggregate_type, *ids))
                    rows = list(await cur.fetchall())
        return {str(i): int(r) for i, r in rows}


def _entry(row: dict[str, Any]) -> ReplayEntry:
    """A row of ``search_dlq_replay`` (its integer columns come back as ints)."""
    selection = row["selection"]
    if isinstance(selection, str | bytes):
        selection = orjson.loads(selection)
    return ReplayEntry(
        **{**row, "selection": selection, "replayed_at": row["replayed_at"].replace(tzinfo=UTC)}
    )
