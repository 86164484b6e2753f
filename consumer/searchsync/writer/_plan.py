"""The writer's SQL without I/O, and the change methods both writers share (`WriterBase`): each
change is a *plan*, a generator yielding `Statement`s and
receiving each fetched row (driver errors are thrown into it), so both drivers share lock order,
revision arithmetic and outbox row. Lock order: root row, ``search_revision_floor`` row, outbox
insert."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Generic, TypeVar

import pymysql

from searchsync.clock import WallClock, utc_now
from searchsync.errors import AggregateExists, AggregateNotFound, AggregateStateConflict
from searchsync.mysql.outbox import OUTBOX_DELETE, outbox_insert
from searchsync.mysql.pool import mysql_error_code, quote_identifier
from searchsync.types import Operation
from searchsync.writer._table import AggregateTable, Change

T = TypeVar("T")
CM = TypeVar("CM")
DB = TypeVar("DB")
_ER_DUP_ENTRY: Final = 1062


@dataclass(frozen=True, slots=True)
class Statement:
    sql: str
    params: tuple[Any, ...]
    fetch: bool = False


Plan = Generator[Statement, Any, T]
"""Yields statements, receives each one's fetched row (or None), returns its result."""


@dataclass(frozen=True, slots=True)
class Begun:
    """What a change's opening statements decided: its revision and its event."""

    revision: int
    operation: Operation


def begin_create(
    table: AggregateTable, aggregate_id: str, values: Mapping[str, Any], now: datetime
) -> Plan[Begun]:
    """Insert at revision ``floor + 1`` with `values`; `AggregateExists` if the id exists (also on a
    lost race). Arguments are checked before the first statement, as in every ``begin_*``."""
    return _create(table, aggregate_id, _checked(table, aggregate_id, values), now)


def _create(
    table: AggregateTable, aggregate_id: str, pairs: list[tuple[str, Any]], now: datetime
) -> Plan[Begun]:
    if (yield _lock_row(table, aggregate_id)) is not None:
        raise AggregateExists(table.aggregate_type, aggregate_id)
    floor = yield Statement(
        "SELECT revision FROM search_revision_floor"
        " WHERE aggregate_type = %s AND aggregate_id = %s FOR UPDATE",
        (table.aggregate_type, aggregate_id),
        fetch=True,
    )
    revision = (0 if floor is None else int(floor[0])) + 1
    row = [
        (quote_identifier(table.id_column), aggregate_id),
        (quote_identifier(table.revision_column), revision),
        *_stamp(table, now),
        *pairs,
    ]
    columns = ", ".join(column for column, _ in row)
    marks = ", ".join(["%s"] * len(row))
    try:
        yield Statement(
            f"INSERT INTO {quote_identifier(table.table)} ({columns}) VALUES ({marks})",
            tuple(value for _, value in row),
        )
    except pymysql.err.IntegrityError as exc:
        # A concurrent create won the race (READ COMMITTED takes no gap lock).
        if mysql_error_code(exc) == _ER_DUP_ENTRY:
            raise AggregateExists(table.aggregate_type, aggregate_id) from exc
        raise
    return Begun(revision, Operation.UPSERT)


def begin_update(
    table: AggregateTable,
    aggregate_id: str,
    values: Mapping[str, Any],
    now: datetime,
    *,
    deleted: bool | None = None,
) -> Plan[Begun]:
    """Lock the row and raise its revision by one, writing `values`; `deleted` soft-deletes
    (TOMBSTONE) or restores (UPSERT) the row, None leaves it as it is. `AggregateNotFound` without
    a row, `AggregateStateConflict` if in that state already."""
    return _change(table, aggregate_id, _checked(table, aggregate_id, values), now, deleted)


def _change(
    table: AggregateTable,
    aggregate_id: str,
    pairs: list[tuple[str, Any]],
    now: datetime,
    deleted: bool | None,
) -> Plan[Begun]:
    revision, was_deleted = yield from _locked(table, aggregate_id)
    if was_deleted == deleted:
        state = "deleted already" if deleted else "not deleted"
        raise AggregateStateConflict(table.aggregate_type, aggregate_id, state)
    revision += 1
    columns: list[tuple[str, Any]] = [(quote_identifier(table.revision_column), revision)]
    if deleted is not None:
        columns.append((quote_identifier(table.deleted_at_column), now if deleted else None))
    columns += [*_stamp(table, now), *pairs]
    sets = ", ".join(f"{column} = %s" for column, _ in columns)
    yield Statement(
        f"UPDATE {quote_identifier(table.table)} SET {sets}"
        f" WHERE {quote_identifier(table.id_column)} = %s",
        (*(value for _, value in columns), aggregate_id),
    )
    return Begun(revision, Operation.TOMBSTONE if deleted else Operation.UPSERT)


def begin_hard_delete(table: AggregateTable, aggregate_id: str, now: datetime) -> Plan[Begun]:
    """Delete the row and record its revision in ``search_revision_floor``; `AggregateNotFound`
    without a row."""
    table.check_id(aggregate_id)
    return _hard_delete(table, aggregate_id, now)


def _hard_delete(table: AggregateTable, aggregate_id: str, now: datetime) -> Plan[Begun]:
    revision = (yield from _locked(table, aggregate_id))[0] + 1
    yield Statement(
        f"DELETE FROM {quote_identifier(table.table)}"
        f" WHERE {quote_identifier(table.id_column)} = %s",
        (aggregate_id,),
    )
    yield Statement(
        "INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision, deleted_at)"
        " VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
        " revision = GREATEST(revision, VALUES(revision)), deleted_at = VALUES(deleted_at)",
        (table.aggregate_type, aggregate_id, revision, now),
    )
    return Begun(revision, Operation.TOMBSTONE)


def finish(
    table: AggregateTable, aggregate_id: str, begun: Begun, now: datetime, *, delete_row: bool
) -> Plan[str]:
    """Append the outbox row (with `delete_row`, delete it again in the same transaction: Debezium
    reads the insert from the binlog); returns its ``event_id``."""
    insert = outbox_insert(
        table.aggregate_type, aggregate_id, begun.operation, begun.revision, now=now
    )
    yield Statement(insert.sql, insert.params)
    if delete_row:
        yield Statement(OUTBOX_DELETE, (insert.event_id,))
    return insert.event_id


def _locked(table: AggregateTable, aggregate_id: str) -> Plan[tuple[int, bool]]:
    row = yield _lock_row(table, aggregate_id)
    if row is None:
        raise AggregateNotFound(table.aggregate_type, aggregate_id)
    return int(row[0]), row[1] is not None


def _checked(
    table: AggregateTable, aggregate_id: str, values: Mapping[str, Any]
) -> list[tuple[str, Any]]:
    table.check_id(aggregate_id)
    return table.assignments(values)


def _stamp(table: AggregateTable, now: datetime) -> list[tuple[str, Any]]:
    if table.updated_at_column is None:
        return []
    return [(quote_identifier(table.updated_at_column), now)]


def _lock_row(table: AggregateTable, aggregate_id: str) -> Statement:
    return Statement(
        f"SELECT {quote_identifier(table.revision_column)},"
        f" {quote_identifier(table.deleted_at_column)} FROM {quote_identifier(table.table)}"
        f" WHERE {quote_identifier(table.id_column)} = %s FOR UPDATE",
        (aggregate_id,),
        fetch=True,
    )


class WriterBase(Generic[DB, CM]):
    """The change methods of one aggregate type on database `DB`, each a context manager `CM`
    yielding the open `Change`; each writer runs the plans on its own driver."""

    def __init__(
        self,
        db: DB,
        table: AggregateTable,
        *,
        clock: WallClock = utc_now,
        delete_outbox_row: bool = False,
    ) -> None:
        self._db = db
        self.table = table
        self._clock = clock
        self._delete_outbox_row = delete_outbox_row

    def create(self, aggregate_id: str, values: Mapping[str, Any]) -> CM:
        """Insert the row with `values` at revision ``floor + 1``; `AggregateExists` if the id
        exists, soft-deleted included."""
        return self._change(
            aggregate_id, lambda now: begin_create(self.table, aggregate_id, values, now)
        )

    def update(self, aggregate_id: str, values: Mapping[str, Any] | None = None) -> CM:
        """Lock the row, raise its revision by one and write `values` (none: children only); a
        soft-deleted row stays deleted. `AggregateNotFound` without a row."""
        return self._set(aggregate_id, values, None)

    def soft_delete(self, aggregate_id: str, values: Mapping[str, Any] | None = None) -> CM:
        """Set ``deleted_at`` (and `values`): the document becomes a tombstone.
        `AggregateStateConflict` if deleted already."""
        return self._set(aggregate_id, values, True)

    def restore(self, aggregate_id: str, values: Mapping[str, Any] | None = None) -> CM:
        """Undo a soft delete (and write `values`). `AggregateStateConflict` if not deleted."""
        return self._set(aggregate_id, values, False)

    def hard_delete(self, aggregate_id: str) -> CM:
        """Delete the row and record its revision as the id's floor (delete the children in the
        block, or let foreign keys cascade)."""
        return self._change(
            aggregate_id, lambda now: begin_hard_delete(self.table, aggregate_id, now)
        )

    def _set(self, aggregate_id: str, values: Mapping[str, Any] | None, deleted: bool | None) -> CM:
        table, row = self.table, values or {}
        return self._change(
            aggregate_id,
            lambda now: begin_update(table, aggregate_id, row, now, deleted=deleted),
        )

    def _change(self, aggregate_id: str, begin: Callable[[datetime], Plan[Begun]]) -> CM:
        raise NotImplementedError

    def _opened(self, aggregate_id: str, begun: Begun, connection: Any, cursor: Any) -> Change:
        kind = self.table.aggregate_type
        return Change(kind, aggregate_id, begun.operation, begun.revision, connection, cursor)

    def _finish(self, aggregate_id: str, begun: Begun, now: datetime) -> Plan[str]:
        return finish(self.table, aggregate_id, begun, now, delete_row=self._delete_outbox_row)
