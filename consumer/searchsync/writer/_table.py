"""`AggregateTable` (where a type's root rows live) and `Change` (one open change of one row)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from searchsync.events import MAX_AGGREGATE_ID_LENGTH, MAX_AGGREGATE_TYPE_LENGTH
from searchsync.mysql.pool import quote_identifier
from searchsync.types import Operation

__all__ = ["AggregateTable", "Change"]


@dataclass(frozen=True, slots=True)
class Change:
    """One open change of one aggregate, inside a writer's ``with`` block.

    Write your own columns and child tables through `cursor` (or `connection`) in the block;
    never commit or roll back yourself. When the block ends without an exception the writer
    appends the outbox row and commits, and `revision` is then the committed revision (the one
    `searchsync.read.wait_for_revision` waits for); an exception rolls everything back.
    """

    aggregate_type: str
    aggregate_id: str
    operation: Operation
    revision: int
    connection: Any
    cursor: Any


@dataclass(frozen=True, slots=True)
class AggregateTable:
    """Where one aggregate type's root rows live, and the columns the writer owns.

    The writer sets `revision_column` (+1 on every change, ``floor + 1`` on a create),
    `deleted_at_column` (soft delete and restore) and `updated_at_column` (None: the table has
    none); the caller writes every other column and its child tables.
    """

    aggregate_type: str
    table: str
    id_column: str = "id"
    revision_column: str = "revision"
    deleted_at_column: str = "deleted_at"
    updated_at_column: str | None = "updated_at"

    def __post_init__(self) -> None:
        if not (
            0 < len(self.aggregate_type) <= MAX_AGGREGATE_TYPE_LENGTH
            and self.aggregate_type.isprintable()
        ):
            raise ValueError(
                f"aggregate_type must be 1..{MAX_AGGREGATE_TYPE_LENGTH} printable characters"
            )
        for name in (self.table, *self.owned):
            quote_identifier(name)
        if len({name.lower() for name in self.owned}) != len(self.owned):
            raise ValueError(f"the columns the writer owns must differ: {self.owned}")

    @property
    def owned(self) -> tuple[str, ...]:
        """The columns only the writer writes."""
        columns = (self.id_column, self.revision_column, self.deleted_at_column)
        return columns if self.updated_at_column is None else (*columns, self.updated_at_column)

    def check_id(self, aggregate_id: str) -> None:
        """Raise ValueError unless the consumer accepts `aggregate_id` in an event and as a
        document id: 1..128 printable characters (searchsync.events), in Unicode NFC (the
        projector's document id)."""
        if (
            not isinstance(aggregate_id, str)
            or not 0 < len(aggregate_id) <= MAX_AGGREGATE_ID_LENGTH
            or not aggregate_id.isprintable()
            or unicodedata.normalize("NFC", aggregate_id) != aggregate_id
        ):
            raise ValueError(
                f"{self.aggregate_type} id must be 1..{MAX_AGGREGATE_ID_LENGTH} printable"
                f" characters in Unicode NFC, got {aggregate_id!r}"
            )

    def assignments(self, values: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """`values` as (quoted column, value) pairs; ValueError for a column the writer owns or
        one named twice (MySQL column names ignore case)."""
        owned = {name.lower() for name in self.owned}
        seen: set[str] = set()
        pairs = []
        for column, value in values.items():
            key = column.lower()
            if key in owned or key in seen:
                why = "is written by the writer" if key in owned else "is given twice"
                raise ValueError(f"column {column!r} of {self.table} {why}")
            seen.add(key)
            pairs.append((quote_identifier(column), value))
        return pairs
