"""Whether a soft-deleted row's tombstone may be purged already (docs/design.md, "Tombstones and
their purge", the repair's rule): its ``deleted_at``, the instant its tombstone carries as
``tombstoned_at``, is before a cutoff (``now - retention.tombstone_minimum``, the caller's).

The repair reads this per row in two ways that must agree:

- in Python (`is_purged`) for rows read whole, whose values went through `ColumnTypes`: an
  aware value is the instant; a naive one is UTC (as `format_timestamp` reads it);
- in SQL for the light pages (`SoftDeleteState`): a state per row, 0 live, 1 soft-deleted,
  2 soft-deleted before the cutoff, with the cutoff as a parameter written as the column stores
  it: a TIMESTAMP compares in the session's zone (UTC), a DATETIME is a wall-clock time in
  ``[mysql] time_zone``. A column of another type (no instant, so no tombstone age) is never
  purged, in both ways.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any, Final

from searchsync.mysql.keys import DataTypes
from searchsync.mysql.pool import quote_identifier

LIVE: Final = 0
DELETED: Final = 1
PURGED: Final = 2
"""The states a light page reads per row."""


def is_purged(deleted_at: Any, before: datetime | None) -> bool:
    """Whether `deleted_at` (a row's value, None when live) is an instant before `before` (an
    aware cutoff; None: none is)."""
    if before is None or not isinstance(deleted_at, datetime):
        return False
    at = deleted_at.replace(tzinfo=UTC) if deleted_at.tzinfo is None else deleted_at
    return at < before


class SoftDeleteState:
    """The SQL of a row's state, per (table, column) type learnt once from
    ``information_schema`` (a column not found counts as no instant)."""

    def __init__(self, time_zone: tzinfo = UTC) -> None:
        self._zone = time_zone
        self._types = DataTypes()

    async def expression(
        self, conn: Any, table: str, column: str, before: datetime | None
    ) -> tuple[str, tuple[Any, ...]]:
        """The state of `table`.`column` (quoted here) as an SQL expression and its parameters:
        with `before` (aware) and an instant column, ``IF(c IS NULL, 0, IF(c < %s, 2, 1))``;
        else ``IF(c IS NULL, 0, 1)``."""
        quoted = quote_identifier(column)
        live_or_deleted = f"IF({quoted} IS NULL, {LIVE}, {DELETED})"
        if before is None:
            return live_or_deleted, ()
        zones = {"timestamp": UTC, "datetime": self._zone}
        zone = zones.get(await self._types.of(conn, table, column))
        if zone is None:
            return live_or_deleted, ()
        cutoff = before.astimezone(zone)
        return (
            f"IF({quoted} IS NULL, {LIVE}, IF({quoted} < %s, {PURGED}, {DELETED}))",
            (cutoff.replace(tzinfo=None),),
        )
