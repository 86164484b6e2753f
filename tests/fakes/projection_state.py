"""`StateRecorder` (``search_projection_state``) in memory, with the table's merge rules."""

from __future__ import annotations

from collections.abc import Sequence

from searchsync.clock import WallClock, utc_now
from searchsync.mysql.pool import db_time
from searchsync.mysql.projection_state import ProjectionState, StateUpdate, merge

__all__ = ["FakeProjectionState"]


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
