"""The persisted progress of an initial load (table ``search_load_state``, migration 010): one row
per part, all of a load's parts inserted together by the first process, so every process of the
load reads the same key ranges."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

import aiomysql

from searchsync.mysql.key_scope import KeyScope
from searchsync.ops.rebuild.records import StateTable, Watermark, column_values, record_of

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

    async def save(self, record: LoadRecord) -> None: ...


class MysqlLoadState:
    def __init__(self, pool: aiomysql.Pool) -> None:
        self._table = StateTable(pool, "search_load_state", LoadRecord, _MUTABLE)

    async def parts(self, load_key: str) -> list[LoadRecord]:
        rows = await self._table.select("`load_key` = %s ORDER BY `part`", (load_key,))
        return [record_of(LoadRecord, Status, row) for row in rows]

    async def plan(self, records: list[LoadRecord]) -> bool:
        return await self._table.insert([column_values(r) for r in records])

    async def save(self, record: LoadRecord) -> None:
        await self._table.update(column_values(record), "load_key", "part")
