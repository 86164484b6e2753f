"""The persisted progress of a rebuild (table ``search_rebuild_state``, migration 002): all that
``--resume`` needs to continue without starting over. At most one unfinished rebuild exists per
alias: the unique key on ``active_alias`` refuses a second one, even from two commands at once."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

import aiomysql
import orjson

from searchsync.errors import OperationRefused
from searchsync.mysql.pool import db_time, fetch_all, transaction_cursor
from searchsync.types import TopicPartition

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
Watermark = Mapping[TopicPartition, int]
"""The end offset of every partition of the type's outbox topics, taken before the scan."""

_ER_DUP_ENTRY: Final = 1062
_RENAMED: Final = {"alias": "alias_name", "where": "where_sql"}  # field: its column
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


@dataclass(frozen=True, slots=True, kw_only=True)
class RebuildRecord:
    rebuild_id: str
    aggregate_type: str
    alias: str
    source_index: str  # the alias's write index when the rebuild began
    target_index: str
    schema_version: int  # the projector's, which fills the target
    catchup_group: str
    watermark: Watermark
    last_id: str | None = None
    rows_done: int = 0
    rows_failed: int = 0
    status: Status = Status.BACKFILLING
    message: str | None = None
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


def record_summary(record: DataclassInstance, *left_out: str) -> dict[str, Any]:
    """Every field of `record` but `left_out`, for ``--json``: the watermark by `watermark_keys`,
    the status's value, times in ISO 8601."""
    names = [f.name for f in dataclasses.fields(record) if f.name not in left_out]
    summary = {name: getattr(record, name) for name in names}
    for name, value in summary.items():
        if name == "watermark" and value is not None:
            summary[name] = watermark_keys(value)
        elif isinstance(value, enum.Enum | datetime):
            summary[name] = value.value if isinstance(value, enum.Enum) else value.isoformat()
    return summary


def unfinished_exists(alias: str) -> OperationRefused:
    return OperationRefused(
        f"alias {alias} already has an unfinished rebuild: continue it with `--resume`, "
        "or give it up with `--abandon`"
    )


class MysqlRebuildState:
    def __init__(self, pool: aiomysql.Pool) -> None:
        self._table = StateTable(pool, "search_rebuild_state", RebuildRecord, _MUTABLE)

    async def unfinished(self, alias: str) -> RebuildRecord | None:
        rows = await self._table.select("`active_alias` = %s", (alias,))
        return record_of(RebuildRecord, Status, rows[0]) if rows else None

    async def create(self, record: RebuildRecord) -> None:
        if not await self._table.insert([_values(record)]):
            raise unfinished_exists(record.alias)

    async def save(self, record: RebuildRecord) -> None:
        await self._table.update(_values(record), "rebuild_id")


def _values(r: RebuildRecord) -> dict[str, Any]:
    return column_values(r, active_alias=None if r.status.finished else r.alias)


class StateTable:
    """The SQL of a state table whose rows are records (`column_values`, `record_of`): a column
    per field of `record_type`, and the `mutable` ones it lacks; all inserted at once, the
    `mutable` ones updated."""

    def __init__(
        self,
        pool: aiomysql.Pool,
        table: str,
        record_type: type[DataclassInstance],
        mutable: tuple[str, ...],
    ) -> None:
        own = [_RENAMED.get(f.name, f.name) for f in dataclasses.fields(record_type)]
        self._columns = (*own, *(c for c in mutable if c not in own))
        self._pool, self._table, self._mutable = pool, table, mutable
        self._names = ", ".join(f"`{c}`" for c in self._columns)
        self._marks = ", ".join(["%s"] * len(self._columns))
        self._sets = ", ".join(f"`{c}` = %s" for c in mutable)

    async def select(self, where: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        """The rows matching `where` (a constant condition; the values in `args`)."""
        sql = f"SELECT {self._names} FROM `{self._table}` WHERE {where}"
        rows = await fetch_all(self._pool, f"read {self._table}", sql, args)
        return [dict(zip(self._columns, row, strict=True)) for row in rows]

    async def insert(self, rows: list[dict[str, Any]]) -> bool:
        """Store `rows` in one transaction; False (nothing stored) on a duplicate key."""
        sql = f"INSERT INTO `{self._table}` ({self._names}) VALUES ({self._marks})"
        try:
            async with transaction_cursor(self._pool, f"write {self._table}") as cur:
                for row in rows:
                    await cur.execute(sql, tuple(row[c] for c in self._columns))
        except aiomysql.IntegrityError as exc:
            if exc.args and exc.args[0] == _ER_DUP_ENTRY:
                return False
            raise
        return True

    async def update(self, row: dict[str, Any], *key: str) -> None:
        """Store the mutable columns of `row`, found by its `key` columns."""
        match = " AND ".join(f"`{c}` = %s" for c in key)
        sql = f"UPDATE `{self._table}` SET {self._sets} WHERE {match}"
        async with transaction_cursor(self._pool, f"write {self._table}") as cur:
            await cur.execute(sql, tuple(row[c] for c in (*self._mutable, *key)))


def column_values(record: Any, **extra: Any) -> dict[str, Any]:
    """The column values of a record dataclass: times as the database holds them, the status's
    value, the watermark as ``{"topic": {"partition": offset}}`` JSON; then `extra`."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if isinstance(value, datetime):
            value = db_time(value)
        elif isinstance(value, enum.Enum):
            value = value.value
        values[_RENAMED.get(f.name, f.name)] = value
    if record.watermark is not None:
        watermark: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted(record.watermark.items()):
            watermark.setdefault(topic, {})[str(partition)] = offset
        values["watermark"] = orjson.dumps(watermark, option=orjson.OPT_SORT_KEYS).decode()
    return {**values, **extra}


def record_of(record_type: type[R], status: type[enum.Enum], row: dict[str, Any]) -> R:
    """The `record_type` whose column values `row` holds (`column_values` reversed)."""
    fields = {
        f.name: row.get(_RENAMED.get(f.name, f.name)) for f in dataclasses.fields(record_type)
    }
    fields["status"] = status(row["status"])
    if row["watermark"] is not None:
        fields["watermark"] = {
            (str(topic), int(p)): int(offset)
            for topic, partitions in orjson.loads(row["watermark"]).items()
            for p, offset in partitions.items()
        }
    return record_type(**fields)
