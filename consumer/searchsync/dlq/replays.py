"""The DLQ replay ledger: which dead letter was replayed, when, where to, and with which selection,
in the append-only table ``search_dlq_replay`` (``schemas/sql/004_dlq_replays.sql``; docs/design.md,
"DLQ replay ledger")."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import aiomysql
import orjson

from searchsync.mysql.pool import db_time, expand_in, fetch_all


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


_COLUMNS: Final = tuple(ReplayEntry.__dataclass_fields__)  # the table's, in this order


class ReplayLedger(Protocol):
    """Where replays are recorded, and what the projection state says was indexed since."""

    def replays(self, dlq_topic: str) -> list[ReplayEntry]:
        """Every recorded replay of dead letters of `dlq_topic`, oldest first."""

    def record(self, entry: ReplayEntry) -> None:
        """Append one replay (called once the broker acknowledged the re-produced message)."""

    def indexed_revisions(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, int]:
        """``search_projection_state.indexed_revision`` of each id that has one."""

    def close(self) -> None: ...


class PoolSource(Protocol):
    """Where the ledger's pool comes from (`searchsync.runtime.Runtime`): opened on first use,
    closed by `aclose`."""

    async def pool(self) -> aiomysql.Pool: ...

    async def aclose(self) -> None: ...


class MysqlReplayLedger:
    """`ReplayLedger` on MySQL, blocking: each call runs on a private event loop that also owns
    the pool of `source`, opened by the first call (a command that never needs the ledger never
    connects). `close` it."""

    def __init__(self, source: PoolSource) -> None:
        self._source = source
        self._runner = asyncio.Runner()

    def replays(self, dlq_topic: str) -> list[ReplayEntry]:
        sql = (
            f"SELECT {', '.join(_COLUMNS)} FROM search_dlq_replay WHERE dlq_topic = %s"
            " ORDER BY replayed_at, id"
        )
        rows = self._execute("read search_dlq_replay", sql, (dlq_topic,))
        return [_entry(row) for row in rows]

    def record(self, entry: ReplayEntry) -> None:
        values = [getattr(entry, c) for c in _COLUMNS]
        values[_COLUMNS.index("selection")] = orjson.dumps(dict(entry.selection)).decode()
        values[_COLUMNS.index("replayed_at")] = db_time(entry.replayed_at)
        sql = (
            f"INSERT INTO search_dlq_replay ({', '.join(_COLUMNS)})"
            f" VALUES ({', '.join(['%s'] * len(_COLUMNS))})"
        )
        self._execute("write search_dlq_replay", sql, values)

    def indexed_revisions(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, int]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        sql = expand_in(
            "SELECT aggregate_id, indexed_revision FROM search_projection_state"
            " WHERE aggregate_type = %s AND aggregate_id IN %s AND indexed_revision IS NOT NULL",
            len(unique),
        )
        rows = self._execute("read search_projection_state", sql, (aggregate_type, *unique))
        return {str(i): int(r) for i, r in rows}

    def close(self) -> None:
        try:
            self._runner.run(self._source.aclose())
        finally:
            self._runner.close()

    def _execute(self, doing: str, sql: str, args: Sequence[Any]) -> list[Any]:
        """Run `sql` in a transaction of its own; its rows (none for a write)."""

        async def go() -> list[Any]:
            return list(await fetch_all(await self._source.pool(), doing, sql, args))

        return self._runner.run(go())


def _entry(row: Sequence[Any]) -> ReplayEntry:
    fields = dict(zip(_COLUMNS, row, strict=True))
    if isinstance(fields["selection"], str | bytes):
        fields["selection"] = orjson.loads(fields["selection"])
    fields["replayed_at"] = fields["replayed_at"].replace(tzinfo=UTC)
    return ReplayEntry(**fields)
