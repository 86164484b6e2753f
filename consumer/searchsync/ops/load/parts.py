"""The persisted progress of an initial load (table ``search_load_state``, migration 010): one row
per part, all of a load's parts inserted together by the first process, so every process of the
load reads the same key ranges."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import aiomysql
import orjson

from searchsync.mysql.key_scope import KeyScope
from searchsync.mysql.pool import db_time, transaction_cursor
from searchsync.ops.rebuild.records import Watermark

_ER_DUP_ENTRY: Final = 1062
_MUTABLE: Final = (
    "watermark",
    "last_id",
    "rows_done",
    "rows_failed",
    "chunks_done",
    "runs",
    "status",
    "message",
    "started_at",
    "updated_at",
    "finished_at",
)
_COLUMNS: Final = (
    "load_key",
    "part",
    "parts",
    "aggregate_type",
    "alias_name",
    "target_index",
    "where_sql",
    "low_id",
    "high_id",
    *_MUTABLE,
)


class Status(enum.StrEnum):
    PENDING = "pending"  # planned, not started
    LOADING = "loading"  # the watermark is recorded; chunks are being written
    SCANNED = "scanned"  # every chunk written; waiting for the live group to pass the watermark
    DONE = "done"


@dataclass(frozen=True, slots=True)
class LoadRecord:
    load_key: str
    part: int  # 0-based
    parts: int
    aggregate_type: str
    alias: str
    target_index: str  # the alias's write index when the load was planned
    where: str | None
    low_id: str | None  # exclusive; None: from the first key
    high_id: str | None  # inclusive; None: to the last key
    status: Status
    updated_at: datetime
    watermark: Watermark | None = None
    last_id: str | None = None
    rows_done: int = 0  # rows of finished chunks, over every run
    rows_failed: int = 0
    chunks_done: int = 0
    runs: int = 0
    message: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def scope(self) -> KeyScope:
        return KeyScope(self.low_id, self.high_id, self.where)


class LoadStateStore(Protocol):
    async def parts(self, load_key: str) -> list[LoadRecord]:
        """Every part of the load `load_key`, by part (empty: not planned yet)."""

    async def plan(self, records: list[LoadRecord]) -> bool:
        """Store every part of a new load in one transaction; False (nothing stored) when the
        load was planned already, by another process."""

    async def save(self, record: LoadRecord) -> None:
        """Store the progress fields of `record`."""


class MysqlLoadState:
    """`LoadStateStore` on the ``search_load_state`` table."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def parts(self, load_key: str) -> list[LoadRecord]:
        sql = (
            f"SELECT {', '.join(f'`{c}`' for c in _COLUMNS)} FROM `search_load_state`"
            " WHERE `load_key` = %s ORDER BY `part`"
        )
        async with transaction_cursor(self._pool, "read search_load_state") as cur:
            await cur.execute(sql, (load_key,))
            rows = await cur.fetchall()
        return [_record(dict(zip(_COLUMNS, row, strict=True))) for row in rows]

    async def plan(self, records: list[LoadRecord]) -> bool:
        sql = (
            f"INSERT INTO `search_load_state` ({', '.join(f'`{c}`' for c in _COLUMNS)})"
            f" VALUES ({', '.join(['%s'] * len(_COLUMNS))})"
        )
        try:
            async with transaction_cursor(self._pool, "write search_load_state") as cur:
                for record in records:
                    values = _values(record)
                    await cur.execute(sql, tuple(values[c] for c in _COLUMNS))
        except aiomysql.IntegrityError as exc:
            if exc.args and exc.args[0] == _ER_DUP_ENTRY:
                return False
            raise
        return True

    async def save(self, record: LoadRecord) -> None:
        values = _values(record)
        sql = (
            f"UPDATE `search_load_state` SET {', '.join(f'`{c}` = %s' for c in _MUTABLE)}"
            " WHERE `load_key` = %s AND `part` = %s"
        )
        async with transaction_cursor(self._pool, "write search_load_state") as cur:
            await cur.execute(sql, (*(values[c] for c in _MUTABLE), record.load_key, record.part))


def _values(r: LoadRecord) -> dict[str, Any]:
    values = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    watermark: dict[str, dict[str, int]] | None = None
    if r.watermark is not None:
        watermark = {}
        for (topic, partition), offset in sorted(r.watermark.items()):
            watermark.setdefault(topic, {})[str(partition)] = offset
    values.update(
        alias_name=r.alias,
        where_sql=r.where,
        watermark=None
        if watermark is None
        else orjson.dumps(watermark, option=orjson.OPT_SORT_KEYS).decode(),
        status=r.status.value,
        started_at=None if r.started_at is None else db_time(r.started_at),
        updated_at=db_time(r.updated_at),
        finished_at=None if r.finished_at is None else db_time(r.finished_at),
    )
    return values


def _record(row: dict[str, Any]) -> LoadRecord:
    fields: dict[str, Any] = {f.name: row.get(f.name) for f in dataclasses.fields(LoadRecord)}
    raw = row["watermark"]
    fields.update(
        alias=row["alias_name"],
        where=row["where_sql"],
        watermark=None
        if raw is None
        else {
            (str(topic), int(p)): int(offset)
            for topic, partitions in orjson.loads(raw).items()
            for p, offset in partitions.items()
        },
        status=Status(row["status"]),
    )
    return LoadRecord(**fields)
