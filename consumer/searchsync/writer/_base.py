"""The change methods both writers share; each writer runs the plans on its own driver."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Generic, TypeVar

from searchsync.clock import WallClock, utc_now
from searchsync.writer._plan import (
    Begun,
    Plan,
    begin_create,
    begin_hard_delete,
    begin_set_deleted,
    begin_update,
)
from searchsync.writer._table import AggregateTable

CM = TypeVar("CM")


class WriterBase(Generic[CM]):
    """The change methods of one aggregate type, each a context manager `CM` yielding the open
    `Change`."""

    def __init__(
        self, table: AggregateTable, *, clock: WallClock = utc_now, delete_outbox_row: bool = False
    ) -> None:
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
        return self._change(
            aggregate_id, lambda now: begin_update(self.table, aggregate_id, values or {}, now)
        )

    def soft_delete(self, aggregate_id: str, values: Mapping[str, Any] | None = None) -> CM:
        """Set ``deleted_at`` (and `values`): the document becomes a tombstone.
        `AggregateStateConflict` if deleted already."""
        table, row = self.table, values or {}
        return self._change(
            aggregate_id, lambda now: begin_set_deleted(table, aggregate_id, row, now, deleted=True)
        )

    def restore(self, aggregate_id: str, values: Mapping[str, Any] | None = None) -> CM:
        """Undo a soft delete (and write `values`). `AggregateStateConflict` if not deleted."""
        table, row = self.table, values or {}
        return self._change(
            aggregate_id,
            lambda now: begin_set_deleted(table, aggregate_id, row, now, deleted=False),
        )

    def hard_delete(self, aggregate_id: str) -> CM:
        """Delete the row and record its revision as the id's floor (delete the children in the
        block, or let foreign keys cascade)."""
        return self._change(
            aggregate_id, lambda now: begin_hard_delete(self.table, aggregate_id, now)
        )

    def _change(self, aggregate_id: str, begin: Callable[[datetime], Plan[Begun]]) -> CM:
        raise NotImplementedError
