"""`AggregateTable` (where a type's root rows live) and `Change` (one open change of one row)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from searchsync.events import MAX_AGGREGATE_ID_LENGTH, MAX_AGGREGATE_TYPE_LENGTH
from searchsync.mysql.pool import quote_identifier
from searchsync.types import Operation


@dataclass(frozen=True, slots=True)
class Change:
    """One open change of one aggregate inside a writer's ``with`` block: write through `cursor`,
    never commit or roll back yourself. On a clean exit the writer appends the outbox row and
    commits, and `revision` is the committed revision; an exception rolls back."""

    aggregate_type: str
    aggregate_id: str
    operation: Operation
    revision: int
    connection: Any
    cursor: Any


@dataclass(frozen=True, slots=True)
class AggregateTable:
    """Where one aggregate type's root rows live; the writer owns the id, revision, ``deleted_at``
    and ``updated_at`` (None: none) columns, the caller every other."""

    aggregate_type: str
    table: str
    id_column: str = "id"
    revision_column: str = "revision"
    deleted_at_column: str = "deleted_at"
    updated_at_column: str | None = "updated_at"

    def __post_init__(self) -> None:
        kind, limit = self.aggregate_type, MAX_AGGREGATE_TYPE_LENGTH
        if not (0 < len(kind) <= limit and kind.isprintable()):
            raise ValueError(f"aggregate_type must be 1..{limit} printable characters")
        for name in (self.table, *self.owned):
            quote_identifier(name)
        if len({name.lower() for name in self.owned}) != len(self.owned):
            raise ValueError(f"the columns the writer owns must differ: {self.owned}")

    @property
    def owned(self) -> tuple[str, ...]:
        columns = (self.id_column, self.revision_column, self.deleted_at_column)
        return columns if self.updated_at_column is None else (*columns, self.updated_at_column)

    def check_id(self, aggregate_id: str) -> None:
        """ValueError unless `aggregate_id` is 1..128 printable characters in Unicode NFC (what the
        consumer accepts)."""
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
        """`values` as (quoted column, value) pairs; ValueError for an owned column or one named
        twice (case-insensitive)."""
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
