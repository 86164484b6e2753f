"""`FanoutStore` in memory: jobs, the dependents' tables (and child tables) a test puts rows in,
and the REBUILD events appended."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from searchsync.clock import utc_now
from searchsync.mysql.fanout import Dependent, FanoutJob, FanoutStats, FanoutTarget, Route
from searchsync.mysql.pool import db_time
from searchsync.ops.fanout_worker import FanoutWorker
from searchsync.projection import Child

__all__ = ["FakeFanout", "drain"]

Key = tuple[str, str, str, str]


@dataclass
class _Row:
    id: int
    target: FanoutTarget
    status: str = "pending"
    cursor_id: str = ""
    appended: int = 0
    locked_by: str | None = None
    locked_until: datetime | None = None
    updated_at: datetime | None = None


class FakeFanout:
    """`tables` maps a table to its rows (id -> row with ``revision`` and the via columns);
    `child_tables` a child table to its rows (with the child's key and via columns); `events`
    lists every REBUILD appended as (type, id, revision)."""

    def __init__(self, clock: Callable[[], datetime] = utc_now) -> None:
        self.clock = clock
        self.tables: dict[str, dict[str, dict[str, object]]] = {}
        self.child_tables: dict[str, list[dict[str, object]]] = {}
        self.events: list[tuple[str, str, int]] = []
        self.jobs: dict[Key, _Row] = {}

    async def record(self, targets: Sequence[FanoutTarget]) -> None:
        now = db_time(self.clock())
        for t in targets:
            key = (t.referenced_type, t.referenced_id, t.dependent_type, t.lookup_name)
            row = self.jobs.get(key)
            if row is None:
                self.jobs[key] = _Row(len(self.jobs) + 1, t, updated_at=now)
            elif t.revision > row.target.revision:
                row.target, row.status, row.cursor_id, row.appended = t, "pending", "", 0
                row.updated_at = now

    async def claim(
        self, owner: str, lease_s: float, routes: Collection[Route]
    ) -> FanoutJob | None:
        now = db_time(self.clock())
        for row in sorted(self.jobs.values(), key=lambda r: r.id):
            free = row.locked_until is None or row.locked_until < now or row.locked_by == owner
            t = row.target
            served = (t.referenced_type, t.dependent_type, t.lookup_name) in routes
            if row.status == "pending" and free and served:
                row.locked_by, row.locked_until = owner, now + timedelta(seconds=lease_s)
                return FanoutJob(row.id, row.target, row.cursor_id, row.appended)
        return None

    async def dependents(
        self,
        table: str,
        via: str,
        referenced_id: str,
        after: str,
        limit: int,
        *,
        through: Child | None = None,
        keys: tuple[str, str] = ("id", "revision"),
    ) -> list[Dependent]:
        rows = self.tables.get(table, {})
        if through is None:
            found = {i for i, r in rows.items() if r.get(via) == referenced_id}
        else:  # the roots of the child rows that reference it, each once, if they still exist
            children = self.child_tables.get(through.table, [])
            found = {str(c[through.key]) for c in children if c.get(via) == referenced_id}
            found &= rows.keys()
        ids = sorted(i for i in found if i > after)
        return [Dependent(i, int(str(rows[i][keys[1]]))) for i in ids[:limit]]

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        if not page:
            return job
        row = self._unchanged(job, owner)
        if row is None:
            return None
        now = db_time(self.clock())
        row.cursor_id, row.appended = page[-1].id, row.appended + len(page)
        row.locked_until, row.updated_at = now + timedelta(seconds=lease_s), now
        self.events.extend((job.target.dependent_type, d.id, max(1, d.revision)) for d in page)
        return replace(job, cursor_id=row.cursor_id, appended=row.appended)

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        row = self._unchanged(job, owner)
        if row is None:
            return False
        row.status, row.locked_by, row.locked_until = "done", None, None
        return True

    async def stats(self, referenced_types: Collection[str]) -> FanoutStats:
        served = [r for r in self.jobs.values() if r.target.referenced_type in referenced_types]
        pending = [r for r in served if r.status == "pending"]
        stamps = [r.updated_at for r in pending if r.updated_at is not None]
        return FanoutStats(
            pending=len(pending),
            done=sum(1 for r in served if r.status == "done"),
            appended_pending=sum(r.appended for r in pending),
            oldest_pending=min(stamps) if stamps else None,
        )

    def _unchanged(self, job: FanoutJob, owner: str) -> _Row | None:
        for row in self.jobs.values():
            if (
                row.id == job.id
                and row.status == "pending"
                and row.target.revision == job.target.revision
                and row.cursor_id == job.cursor_id
                and row.locked_by == owner
            ):
                return row
        return None


async def drain(worker: FanoutWorker) -> int:
    """Work off every pending job free to `worker`; how many jobs it finished."""
    finished = 0
    while await worker.run_once(asyncio.Event()):
        finished += 1
    return finished
