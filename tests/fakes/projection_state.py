"""`StateRecorder` (``search_projection_state``) in memory, with the table's merge rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from searchsync.clock import WallClock, utc_now
from searchsync.errors import MAX_ERROR_MESSAGE
from searchsync.mysql.pool import db_time
from searchsync.mysql.projection_state import MAX_ERROR_CODE_LENGTH, StateUpdate

__all__ = ["FakeProjectionState", "ProjectionState", "merge"]


@dataclass(frozen=True, slots=True)
class ProjectionState:
    """One ``search_projection_state`` row (`searchsync.mysql.projection_state.COLUMNS`)."""

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


def merge(current: ProjectionState | None, update: StateUpdate, now: datetime) -> ProjectionState:
    """The row after applying `update` at its `at` (else `now`), by the table's merge rules:
    revisions never go down; a success at a revision >= the stored one replaces hash and schema
    version, a stale one only ``last_success_at``; errors are history a success never clears;
    code and message are cut to the column sizes."""
    at = update.at or now
    if current is None:
        empty = (None,) * 7
        current = ProjectionState(update.aggregate_type, update.aggregate_id, 0, *empty)
    state = replace(current, source_revision=max(current.source_revision, update.source_revision))
    if update.indexed_revision is not None:
        if update.indexed_revision >= (current.indexed_revision or 0):
            state = replace(
                state,
                indexed_revision=update.indexed_revision,
                projection_hash=update.projection_hash,
                projection_schema_version=update.schema_version,
            )
        state = replace(state, last_success_at=at)
    if update.error_code is not None:
        message = update.error_message
        state = replace(
            state,
            last_error_code=update.error_code[:MAX_ERROR_CODE_LENGTH],
            last_error_message=None if message is None else message[:MAX_ERROR_MESSAGE],
            last_error_at=at,
        )
    return state


class FakeProjectionState:
    """`states` holds the rows by (type, id); `calls` lists each non-empty `record`'s outcomes."""

    def __init__(self, *, clock: WallClock = utc_now) -> None:
        self._clock = clock
        self.states: dict[tuple[str, str], ProjectionState] = {}
        self.calls: list[tuple[StateUpdate, ...]] = []

    async def record(self, outcomes: Sequence[StateUpdate]) -> None:
        if not outcomes:
            return
        self.calls.append(tuple(outcomes))
        now = db_time(self._clock())
        for update in outcomes:
            key = (update.aggregate_type, update.aggregate_id)
            self.states[key] = merge(self.states.get(key), update, now)

    async def read(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, ProjectionState]:
        found = ((i, self.states.get((aggregate_type, i))) for i in dict.fromkeys(ids))
        return {i: state for i, state in found if state is not None}
