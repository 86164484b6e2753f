"""``search_projection_state``: what searchsync last indexed for each aggregate, for the repair job
and operators (off the hot path). The upsert's merge rules: revisions never go down; a success at
a revision >= the stored one replaces hash and schema version, a stale one only
``last_success_at``; errors are history a success never clears; code and message are cut to the
column sizes. Outcomes are written in key order (one lock order), and a deadlock is retried: the
upsert is idempotent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Final, Protocol

import aiomysql

from searchsync.clock import WallClock, utc_now
from searchsync.errors import MAX_ERROR_MESSAGE, ErrorCode, TransientError
from searchsync.mysql.pool import db_time, transaction_cursor

MAX_ERROR_CODE_LENGTH: Final = 64
_DEADLOCK_ATTEMPTS: Final = 3

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
    """One aggregate's outcome: a success (`indexed_revision`, `schema_version` and
    `projection_hash`), a failure (`error_code`, usually `error_message`), or neither ("seen":
    raises ``source_revision`` only). Read-only by convention (frozen would be slower to build).
    """

    aggregate_type: str
    aggregate_id: str
    source_revision: int
    indexed_revision: int | None = None
    schema_version: int | None = None
    projection_hash: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    at: datetime | None = None  # when it happened; None: when written

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


class StateRecorder(Protocol):
    """``search_projection_state``: the pipeline records outcomes (operators read the rows)."""

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        """Apply `outcomes` in order (duplicates allowed: later ones win by the merge rules)."""


class ProjectionStateWriter:
    """`StateRecorder` on MySQL: one batched upsert per `record` call."""

    def __init__(self, pool: aiomysql.Pool, *, clock: WallClock = utc_now) -> None:
        self._pool = pool
        self._clock = clock

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        if not outcomes:
            return
        now = db_time(self._clock())
        ordered = sorted(outcomes, key=lambda u: (u.aggregate_type, u.aggregate_id))  # stable
        rows = [_row(u, now) for u in ordered]
        for attempt in range(1, _DEADLOCK_ATTEMPTS + 1):
            try:
                async with transaction_cursor(self._pool, "write search_projection_state") as cur:
                    await cur.execute(_upsert_sql(rows, cur.connection.escape))
                return
            except TransientError as exc:
                if exc.code is not ErrorCode.MYSQL_DEADLOCK or attempt == _DEADLOCK_ATTEMPTS:
                    raise


_INSERT: Final = (
    "INSERT INTO search_projection_state (aggregate_type, aggregate_id, source_revision,"
    " indexed_revision, projection_schema_version, projection_hash, last_success_at,"
    " last_error_code, last_error_message, last_error_at) VALUES "
)


def _row(update: StateUpdate, now: datetime) -> tuple[Any, ...]:
    """`update`'s row in `_INSERT`'s column order, as a new row holds it; a success's row stops
    before the error columns (they are NULL)."""
    at = update.at or now
    key = (update.aggregate_type, update.aggregate_id, update.source_revision)
    if update.indexed_revision is not None:  # a success: never an error too
        return (*key, update.indexed_revision, update.schema_version, update.projection_hash, at)
    code, message = update.error_code, update.error_message  # cut to the column sizes
    code, message = code and code[:MAX_ERROR_CODE_LENGTH], message and message[:MAX_ERROR_MESSAGE]
    return (*key, None, None, None, None, code, message, at if code is not None else None)


def _upsert_sql(rows: Sequence[tuple[Any, ...]], escape: Callable[[Any], str]) -> str:
    """The one upsert of `rows` (`_row`'s), values escaped by the connection's `escape` (ints as
    they are, a value repeated across rows escaped once)."""
    escaped = cache(escape)

    def literal(value: Any) -> str:
        return "NULL" if value is None else str(value) if type(value) is int else escaped(value)

    parts: list[str] = []
    for row in rows:
        head = f"({literal(row[0])}, {escape(row[1])}, {', '.join(map(literal, row[2:]))}"
        parts.append(head + (", NULL, NULL, NULL)" if len(row) == 7 else ")"))
    return _INSERT + ", ".join(parts) + _UPSERT_TAIL
