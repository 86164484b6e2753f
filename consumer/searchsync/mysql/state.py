"""The ``search_projection_state`` writer: what searchsync last indexed for each aggregate.

One row per aggregate records the newest revision seen (``source_revision``), the newest revision
indexed with its ``projection_hash`` and ``projection_schema_version``, and the last error. The
repair job and operators read it; nothing in the hot path depends on it, so it is written in
one batched ``INSERT ... ON DUPLICATE KEY UPDATE`` per call.

Merge rules (the same in `merge` and in SQL):

- ``source_revision`` and ``indexed_revision`` never go down (``GREATEST``); a stale success
  (lower revision than the stored one) updates only ``last_success_at``.
- A success at a revision >= the stored one replaces hash and schema version (a rebuild with a
  new schema version re-indexes the same revision).
- The error columns are history, never cleared by a success. An aggregate is failing now iff
  ``last_error_at`` is later than ``last_success_at`` (`ProjectionState.failing`).
- Messages are cut to `MAX_ERROR_MESSAGE` (1024) characters and codes to 64 (the column sizes).

Within one call outcomes are written in key order, so concurrent writers lock rows in the same
order; a deadlock is retried a few times here because the upsert is idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Protocol

import aiomysql

from searchsync.clock import WallClock, utc_now
from searchsync.errors import MAX_ERROR_MESSAGE, ErrorCode, TransientError
from searchsync.mysql.pool import db_time, expand_in, transaction, translate_errors

__all__ = [
    "MAX_ERROR_CODE_LENGTH",
    "ProjectionState",
    "ProjectionStateWriter",
    "StateRecorder",
    "StateUpdate",
    "merge",
]

MAX_ERROR_CODE_LENGTH: Final = 64
_DEADLOCK_ATTEMPTS: Final = 3

_COLUMNS: Final = (
    "aggregate_type",
    "aggregate_id",
    "source_revision",
    "indexed_revision",
    "projection_schema_version",
    "projection_hash",
    "last_success_at",
    "last_error_code",
    "last_error_message",
    "last_error_at",
)
# MariaDB evaluates these assignments left to right and later ones see earlier results, so
# everything that compares against the stored indexed_revision comes before it is raised.
_NEWER: Final = (
    "VALUES(indexed_revision) IS NOT NULL"
    " AND VALUES(indexed_revision) >= COALESCE(indexed_revision, 0)"
)
_UPSERT_TAIL: Final = (
    " ON DUPLICATE KEY UPDATE"
    f" projection_hash = IF({_NEWER}, VALUES(projection_hash), projection_hash),"
    f" projection_schema_version = IF({_NEWER}, VALUES(projection_schema_version),"
    " projection_schema_version),"
    " last_success_at = IF(VALUES(indexed_revision) IS NULL, last_success_at,"
    " VALUES(last_success_at)),"
    " indexed_revision = IF(VALUES(indexed_revision) IS NULL, indexed_revision,"
    " GREATEST(COALESCE(indexed_revision, 0), VALUES(indexed_revision))),"
    " source_revision = GREATEST(source_revision, VALUES(source_revision)),"
    " last_error_at = IF(VALUES(last_error_code) IS NULL, last_error_at, VALUES(last_error_at)),"
    " last_error_message = IF(VALUES(last_error_code) IS NULL, last_error_message,"
    " VALUES(last_error_message)),"
    " last_error_code = IF(VALUES(last_error_code) IS NULL, last_error_code,"
    " VALUES(last_error_code))"
)


@dataclass(slots=True)
class StateUpdate:
    """One aggregate's outcome.

    A success sets `indexed_revision`, `schema_version` and `projection_hash` (all three) and no
    error; a failure sets `error_code` (and usually `error_message`) and no indexed fields. An
    update with neither only raises ``source_revision`` ("seen"). Treat it as read-only: it is
    not frozen because a frozen dataclass is built several times slower, and one is built per
    success.
    """

    aggregate_type: str
    aggregate_id: str
    source_revision: int
    indexed_revision: int | None = None
    schema_version: int | None = None
    projection_hash: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    at: datetime | None = None
    """When the outcome happened (``last_success_at``/``last_error_at``); None: when written."""

    def __post_init__(self) -> None:
        indexed, schema, digest = self.indexed_revision, self.schema_version, self.projection_hash
        if indexed is not None or schema is not None or digest is not None:
            if indexed is None or schema is None or digest is None:
                raise ValueError(
                    "a success needs indexed_revision, schema_version and projection_hash"
                )
            if self.error_code is not None:
                raise ValueError("an outcome is either a success or an error, not both")
        if self.error_message is not None and self.error_code is None:
            raise ValueError("error_message needs an error_code")
        if self.source_revision < 0 or (indexed is not None and indexed < 0):
            raise ValueError("revisions are non-negative")

    @property
    def is_success(self) -> bool:
        return self.indexed_revision is not None


@dataclass(frozen=True, slots=True)
class ProjectionState:
    """One ``search_projection_state`` row."""

    aggregate_type: str
    aggregate_id: str
    source_revision: int
    indexed_revision: int | None
    projection_schema_version: int | None
    projection_hash: str | None
    last_success_at: datetime | None
    last_error_code: str | None
    last_error_message: str | None
    last_error_at: datetime | None

    @property
    def failing(self) -> bool:
        """The last outcome recorded was an error."""
        if self.last_error_at is None:
            return False
        return self.last_success_at is None or self.last_error_at > self.last_success_at


class StateRecorder(Protocol):
    """``search_projection_state``: the pipeline records outcomes; the CLI and tests read rows."""

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        """Apply `outcomes` in order (duplicates allowed: later ones win as `merge` says)."""
        ...

    async def read(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, ProjectionState]:
        """The stored state of `ids`; an id without a row is absent."""
        ...


def merge(current: ProjectionState | None, update: StateUpdate, now: datetime) -> ProjectionState:
    """The row after applying `update` at `now`, or at its own `at` (the module docstring's
    rules)."""
    if update.at is not None:
        now = update.at
    code = None if update.error_code is None else update.error_code[:MAX_ERROR_CODE_LENGTH]
    message = None if update.error_message is None else update.error_message[:MAX_ERROR_MESSAGE]
    if current is None:
        success = update.is_success
        return ProjectionState(
            aggregate_type=update.aggregate_type,
            aggregate_id=update.aggregate_id,
            source_revision=update.source_revision,
            indexed_revision=update.indexed_revision,
            projection_schema_version=update.schema_version,
            projection_hash=update.projection_hash,
            last_success_at=now if success else None,
            last_error_code=code,
            last_error_message=message,
            last_error_at=now if code is not None else None,
        )
    state = replace(current, source_revision=max(current.source_revision, update.source_revision))
    if update.indexed_revision is not None:
        stored = current.indexed_revision or 0
        if update.indexed_revision >= stored:
            state = replace(
                state,
                indexed_revision=update.indexed_revision,
                projection_hash=update.projection_hash,
                projection_schema_version=update.schema_version,
            )
        state = replace(state, last_success_at=now)
    if code is not None:
        state = replace(state, last_error_code=code, last_error_message=message, last_error_at=now)
    return state


class ProjectionStateWriter:
    """`StateRecorder` on MySQL: one batched upsert per `record` call."""

    def __init__(self, pool: aiomysql.Pool, *, clock: WallClock = utc_now) -> None:
        self._pool = pool
        self._clock = clock

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        if not outcomes:
            return
        now = db_time(self._clock())
        ordered = sorted(
            range(len(outcomes)),
            key=lambda i: (outcomes[i].aggregate_type, outcomes[i].aggregate_id, i),
        )
        rows = [_row(outcomes[i], now) for i in ordered]
        for attempt in range(1, _DEADLOCK_ATTEMPTS + 1):
            try:
                async with transaction(self._pool) as conn:
                    with translate_errors("write search_projection_state"):
                        async with conn.cursor() as cur:
                            await cur.execute(_upsert_sql(rows, conn.escape))
                return
            except TransientError as exc:
                if exc.code is not ErrorCode.MYSQL_DEADLOCK or attempt == _DEADLOCK_ATTEMPTS:
                    raise

    async def read(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, ProjectionState]:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return {}
        async with transaction(self._pool) as conn:
            with translate_errors("read search_projection_state"):
                async with conn.cursor(aiomysql.DictCursor) as cur:
                    sql = (
                        f"SELECT {', '.join(_COLUMNS)} FROM search_projection_state"
                        " WHERE aggregate_type = %s AND aggregate_id IN %s"
                    )
                    await cur.execute(expand_in(sql, len(unique)), (aggregate_type, *unique))
                    fetched: list[dict[str, Any]] = list(await cur.fetchall())
        return {row["aggregate_id"]: _state(row) for row in fetched}


_NO_SUCCESS: Final = (None, None, None, None)
_INSERT: Final = f"INSERT INTO search_projection_state ({', '.join(_COLUMNS)}) VALUES "


def _row(update: StateUpdate, now: datetime) -> tuple[Any, ...]:
    """`update`'s row in `_COLUMNS` order: what `merge(None, update, now)` holds."""
    at = update.at or now
    if update.indexed_revision is not None:  # a success: never an error too
        success = (update.indexed_revision, update.schema_version, update.projection_hash, at)
        return (update.aggregate_type, update.aggregate_id, update.source_revision, *success)
    code = None if update.error_code is None else update.error_code[:MAX_ERROR_CODE_LENGTH]
    message = None if update.error_message is None else update.error_message[:MAX_ERROR_MESSAGE]
    error = (code, message, at if code is not None else None)
    return (
        update.aggregate_type,
        update.aggregate_id,
        update.source_revision,
        *_NO_SUCCESS,
        *error,
    )


def _upsert_sql(rows: Sequence[tuple[Any, ...]], escape: Callable[[Any], str]) -> str:
    """The one upsert statement of `rows` (`_row`'s), each value escaped by the connection's
    `escape` (an int is written as it is; a value repeated across rows is escaped once). A
    success's row has no error columns: they are NULL."""
    seen: dict[Any, str] = {}

    def literal(value: Any) -> str:
        if value is None:
            return "NULL"
        if type(value) is int:
            return str(value)
        text = seen.get(value)
        if text is None:
            text = seen[value] = escape(value)
        return text

    parts: list[str] = []
    for row in rows:
        head = f"({literal(row[0])}, {escape(row[1])}, {', '.join(map(literal, row[2:]))}"
        parts.append(head + (", NULL, NULL, NULL)" if len(row) == 7 else ")"))
    return _INSERT + ", ".join(parts) + _UPSERT_TAIL


def _state(row: dict[str, Any]) -> ProjectionState:
    def opt_int(value: Any) -> int | None:
        return None if value is None else int(value)

    return ProjectionState(
        aggregate_type=row["aggregate_type"],
        aggregate_id=row["aggregate_id"],
        source_revision=int(row["source_revision"]),
        indexed_revision=opt_int(row["indexed_revision"]),
        projection_schema_version=opt_int(row["projection_schema_version"]),
        projection_hash=row["projection_hash"],
        last_success_at=row["last_success_at"],
        last_error_code=row["last_error_code"],
        last_error_message=row["last_error_message"],
        last_error_at=row["last_error_at"],
    )
