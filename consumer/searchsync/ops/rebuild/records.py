"""The persisted progress of a rebuild (table ``search_rebuild_state``, migration 002): all that
``--resume`` needs to continue without starting over. At most one unfinished rebuild exists per
alias: the unique key on ``active_alias`` refuses a second one, even from two commands at once."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Protocol

import aiomysql
import orjson

from searchsync.errors import OperationRefused
from searchsync.mysql.pool import db_time, transaction_cursor
from searchsync.types import TopicPartition

Watermark = Mapping[TopicPartition, int]
"""The end offset of every partition of the type's outbox topics, taken before the scan."""

_ER_DUP_ENTRY: Final = 1062
_MUTABLE: Final = (
    "last_id",
    "rows_done",
    "rows_failed",
    "status",
    "message",
    "active_alias",
    "updated_at",
    "finished_at",
)
_COLUMNS: Final = (
    "rebuild_id",
    "aggregate_type",
    "alias_name",
    "source_index",
    "target_index",
    "schema_version",
    "catchup_group",
    "watermark",
    "started_at",
    *_MUTABLE,
)


class Status(enum.StrEnum):
    """The step a rebuild reached; all but the last two are unfinished (it can be resumed)."""

    BACKFILLING = "backfilling"
    CATCHING_UP = "catching_up"  # the catch-up group's offsets are set: do not set them again
    VERIFYING = "verifying"
    REFUSED = "refused"  # verification failed; --resume verifies again after catching up
    SWAPPED = "swapped"  # the alias points at the new index; the catch-up group still runs
    DONE = "done"
    ABANDONED = "abandoned"

    @property
    def finished(self) -> bool:
        return self in (Status.DONE, Status.ABANDONED)


@dataclass(frozen=True, slots=True)
class RebuildRecord:
    rebuild_id: str
    aggregate_type: str
    alias: str
    source_index: str  # the alias's write index when the rebuild began
    target_index: str
    schema_version: int  # the projector's, which fills the target
    catchup_group: str
    watermark: Watermark
    last_id: str | None
    rows_done: int
    rows_failed: int
    status: Status
    message: str | None
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None


class RebuildStateStore(Protocol):
    async def unfinished(self, alias: str) -> RebuildRecord | None: ...

    async def create(self, record: RebuildRecord) -> None:
        """Store a new record; `OperationRefused` when the alias has an unfinished one."""

    async def save(self, record: RebuildRecord) -> None:
        """Store the progress fields (last id, counts, status, message, times) of `record`."""


def watermark_keys(watermark: Watermark) -> dict[str, int]:
    """``{"topic/partition": offset}``, sorted: the watermark as summaries and ``_meta`` show it."""
    return {f"{t}/{p}": o for (t, p), o in sorted(watermark.items())}


def unfinished_exists(alias: str) -> OperationRefused:
    """The refusal of a second unfinished rebuild of `alias`."""
    return OperationRefused(
        f"alias {alias} already has an unfinished rebuild: continue it with `--resume`, "
        "or give it up with `--abandon`"
    )


class MysqlRebuildState:
    """`RebuildStateStore` on the ``search_rebuild_state`` table."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def unfinished(self, alias: str) -> RebuildRecord | None:
        sql = (
            f"SELECT {', '.join(f'`{c}`' for c in _COLUMNS)} FROM `search_rebuild_state`"
            " WHERE `active_alias` = %s"
        )
        async with transaction_cursor(self._pool, "read search_rebuild_state") as cur:
            await cur.execute(sql, (alias,))
            row = await cur.fetchone()
        return None if row is None else _record(dict(zip(_COLUMNS, row, strict=True)))

    async def create(self, record: RebuildRecord) -> None:
        values = _values(record)
        sql = (
            f"INSERT INTO `search_rebuild_state` ({', '.join(f'`{c}`' for c in _COLUMNS)})"
            f" VALUES ({', '.join(['%s'] * len(_COLUMNS))})"
        )
        try:
            async with transaction_cursor(self._pool, "write search_rebuild_state") as cur:
                await cur.execute(sql, tuple(values[c] for c in _COLUMNS))
        except aiomysql.IntegrityError as exc:
            if exc.args and exc.args[0] == _ER_DUP_ENTRY:
                raise unfinished_exists(record.alias) from exc
            raise

    async def save(self, record: RebuildRecord) -> None:
        values = _values(record)
        sql = (
            f"UPDATE `search_rebuild_state` SET {', '.join(f'`{c}` = %s' for c in _MUTABLE)}"
            " WHERE `rebuild_id` = %s"
        )
        async with transaction_cursor(self._pool, "write search_rebuild_state") as cur:
            await cur.execute(sql, (*(values[c] for c in _MUTABLE), record.rebuild_id))


def _values(r: RebuildRecord) -> dict[str, Any]:
    """The record's column values (the watermark as ``{"topic": {"partition": offset}}``)."""
    watermark: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(r.watermark.items()):
        watermark.setdefault(topic, {})[str(partition)] = offset
    values = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    values.update(
        alias_name=r.alias,
        watermark=orjson.dumps(watermark, option=orjson.OPT_SORT_KEYS).decode(),
        status=r.status.value,
        active_alias=None if r.status.finished else r.alias,
        started_at=db_time(r.started_at),
        updated_at=db_time(r.updated_at),
        finished_at=None if r.finished_at is None else db_time(r.finished_at),
    )
    return values


def _record(row: dict[str, Any]) -> RebuildRecord:
    fields: dict[str, Any] = {f.name: row.get(f.name) for f in dataclasses.fields(RebuildRecord)}
    fields.update(
        alias=row["alias_name"],
        watermark={
            (str(topic), int(p)): int(offset)
            for topic, partitions in orjson.loads(row["watermark"]).items()
            for p, offset in partitions.items()
        },
        status=Status(row["status"]),
    )
    return RebuildRecord(**fields)
