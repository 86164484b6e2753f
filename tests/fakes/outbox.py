"""`Outbox` in memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from searchsync.clock import utc_now
from searchsync.mysql.outbox import OutboxRow
from searchsync.mysql.pool import db_time

__all__ = ["FakeOutbox"]


@dataclass
class FakeOutbox:
    """`rows` maps an id to its ``created_at`` (naive UTC); an append adds a row at the next id.

    `events` lists every append as (type, id, revision), `floors` the revision floors raised by
    `append_orphan`, `appended` the event of each appended row by id; `pages` and `deletes`
    record the prune's calls; `status` holds the polling relay's status of a row (PENDING when
    absent)."""

    rows: dict[int, datetime] = field(default_factory=dict)
    clock: Callable[[], datetime] = utc_now
    events: list[tuple[str, str, int]] = field(default_factory=list)
    floors: dict[tuple[str, str], int] = field(default_factory=dict)
    appended: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    pages: list[tuple[int, int]] = field(default_factory=list)
    deletes: list[tuple[int, int]] = field(default_factory=list)
    status: dict[int, str] = field(default_factory=dict)  # the relay's; PENDING when absent
    _next_id: int = 0

    async def page(self, after_id: int, limit: int) -> list[OutboxRow]:
        self.pages.append((after_id, limit))
        ids = sorted(i for i in self.rows if i > after_id)[:limit]
        return [OutboxRow(i, self.rows[i], self.status.get(i, "PENDING")) for i in ids]

    async def delete_range(
        self, first_id: int, last_id: int, created_before: datetime, *, published_only: bool = False
    ) -> int:
        self.deletes.append((first_id, last_id))
        cutoff = db_time(created_before)
        doomed = [
            i
            for i, at in self.rows.items()
            if first_id <= i <= last_id
            and at < cutoff
            and (not published_only or self.status.get(i) == "PUBLISHED")
        ]
        for i in doomed:
            del self.rows[i]
        return len(doomed)

    async def append_rebuild(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        self._append(aggregate_type, aggregate_id, revision)

    async def append_orphan(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        key = (aggregate_type, aggregate_id)
        self.floors[key] = max(self.floors.get(key, 0), revision)
        self._append(aggregate_type, aggregate_id, revision)

    async def stats(self) -> tuple[int, datetime | None]:
        return len(self.rows), min(self.rows.values(), default=None)

    def _append(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        if revision < 1:
            raise ValueError(f"source_revision must be >= 1, got {revision}")
        self._next_id = max(self._next_id, *self.rows, 0) + 1
        self.rows[self._next_id] = db_time(self.clock())
        self.events.append((aggregate_type, aggregate_id, revision))
        self.appended[self._next_id] = self.events[-1]
