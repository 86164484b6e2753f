"""Fan-out jobs of related aggregates: the table ``search_fanout`` (migration 008) and the
dependents' ids read from the truth (docs/design.md, "Fan-out"; invariant 16).

`FanoutStore` is the port, `MysqlFanout` its adapter:

- `record`: the consumer records one job per (referenced aggregate, dependent type, lookup) for
  an event of the referenced aggregate, before that event may finish. A newer revision restarts
  the job's pass (cursor back to the start); the same or an older one changes nothing, so a
  redelivered event is harmless.
- `claim`: a worker leases the oldest pending job of the routes (referenced type, dependent type,
  lookup) its projectors declare (its own lease, or an expired one): a deployment with other
  projectors on the same database leaves the jobs it cannot serve to those that can.
- `dependents`: the next page of dependents' ids and revisions, in id order, read in MySQL,
  never in the index, through a column of their table or of a child table (`fanout_dependents`).
- `advance`: in ONE transaction, moves the job's cursor past a page and appends one REBUILD per
  dependent through the one outbox append (its rows, in one multi-row INSERT); it appends nothing
  when the job changed meanwhile (restarted by a newer revision, or leased by another worker). A
  crash before the commit leaves the cursor where it was: the page is appended again, and a
  duplicate REBUILD is harmless.
- `finish`: marks the pass done, unless the job changed meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import aiomysql

from searchsync.clock import utc_now
from searchsync.mysql.fanout_dependents import DependentIndexes, dependents_sql
from searchsync.mysql.outbox_batch import append_rebuilds
from searchsync.mysql.pool import db_time, transaction, transaction_cursor, translate_errors
from searchsync.projection import Child

__all__ = [
    "Dependent",
    "FanoutJob",
    "FanoutStats",
    "FanoutStore",
    "FanoutTarget",
    "MysqlFanout",
    "Route",
]

Route = tuple[str, str, str]
"""(referenced type, dependent type, lookup name): the jobs a worker can serve."""


@dataclass(frozen=True, slots=True)
class FanoutTarget:
    """The documents of `dependent_type` whose lookup `lookup_name` reads the referenced row."""

    referenced_type: str
    referenced_id: str
    dependent_type: str
    lookup_name: str
    revision: int  # the referenced row's revision the event carried


@dataclass(frozen=True, slots=True)
class FanoutJob:
    """A pending job as a worker leased it: its pass has reached `cursor_id` ('' at the start)."""

    id: int
    target: FanoutTarget
    cursor_id: str
    appended: int


@dataclass(frozen=True, slots=True)
class Dependent:
    id: str
    revision: int


@dataclass(frozen=True, slots=True)
class FanoutStats:
    pending: int
    done: int
    appended_pending: int  # REBUILDs appended so far by the pending jobs' passes
    oldest_pending: datetime | None  # the pending job untouched the longest (naive UTC)


class FanoutStore(Protocol):
    async def record(self, targets: Sequence[FanoutTarget]) -> None:
        """Record `targets`, all or none (a newer revision restarts a job's pass)."""
        ...

    async def claim(
        self, owner: str, lease_s: float, routes: Collection[Route]
    ) -> FanoutJob | None:
        """Lease the oldest pending job of `routes` free to `owner` for `lease_s`; None when
        there is none."""
        ...

    async def dependents(
        self,
        table: str,
        via: str,
        referenced_id: str,
        after: str,
        limit: int,
        *,
        through: Child | None = None,
    ) -> list[Dependent]:
        """The next `limit` rows of `table` (by id, with id > `after`) whose `via` is
        `referenced_id`, or, `through` a child table, that have a child row whose `via` is it
        (each once)."""
        ...

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        """Append a REBUILD per dependent of `page` and move the cursor past it, together; the
        job as it is now, or None (nothing appended) if it changed since `job` was read."""
        ...

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        """Mark the pass of `job` done; False if the job changed meanwhile."""
        ...

    async def stats(self, referenced_types: Collection[str]) -> FanoutStats:
        """The jobs of `referenced_types` by state."""
        ...


_UNCHANGED = (
    " WHERE id = %s AND status = 'pending' AND revision = %s AND cursor_id = %s AND locked_by = %s"
)


class MysqlFanout:
    """`FanoutStore` on MySQL; each call is one short transaction (READ COMMITTED)."""

    def __init__(self, pool: aiomysql.Pool, *, clock: Callable[[], datetime] = utc_now) -> None:
        self._pool = pool
        self._clock = clock
        self._indexes = DependentIndexes()

    async def record(self, targets: Sequence[FanoutTarget]) -> None:
        if not targets:
            return
        now = db_time(self._clock())
        # one lock order, so two members recording at once do not deadlock
        rows = [
            (*_target_key(t), t.revision, "pending", now, now)
            for t in sorted(targets, key=_target_key)
        ]
        newer = "VALUES(revision) > revision"
        async with transaction_cursor(self._pool, "record search_fanout") as cur:
            await cur.executemany(
                "INSERT INTO search_fanout (referenced_type, referenced_id,"
                " dependent_type, lookup_name, revision, status, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON DUPLICATE KEY UPDATE"
                f" cursor_id = IF({newer}, '', cursor_id),"
                f" appended = IF({newer}, 0, appended),"
                f" finished_at = IF({newer}, NULL, finished_at),"
                f" status = IF({newer}, 'pending', status),"
                f" updated_at = IF({newer}, VALUES(updated_at), updated_at),"
                " revision = GREATEST(revision, VALUES(revision))",
                rows,
            )

    async def claim(
        self, owner: str, lease_s: float, routes: Collection[Route]
    ) -> FanoutJob | None:
        if not routes:
            return None
        now = self._clock()
        free = " AND (locked_until IS NULL OR locked_until < %s OR locked_by = %s)"
        served = sorted(routes)
        async with transaction_cursor(self._pool, "claim search_fanout") as cur:
            await cur.execute(
                "SELECT id FROM search_fanout WHERE status = 'pending'"
                + free
                + " AND (referenced_type, dependent_type, lookup_name)"
                + f" IN ({', '.join(['(%s, %s, %s)'] * len(served))})"
                + " ORDER BY id LIMIT 8",
                (db_time(now), owner, *(part for route in served for part in route)),
            )
            candidates = [int(r[0]) for r in await cur.fetchall()]
            for job_id in candidates:
                await cur.execute(
                    "UPDATE search_fanout SET locked_by = %s, locked_until = %s"
                    " WHERE id = %s AND status = 'pending'" + free,
                    (owner, _until(now, lease_s), job_id, db_time(now), owner),
                )
                if cur.rowcount == 1:
                    return await _job(cur, job_id)
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
    ) -> list[Dependent]:
        async with transaction_cursor(
            self._pool, f"read {table if through is None else through.table}"
        ) as cur:
            index = None if through is None else await self._indexes.name(cur, through, via)
            sql = dependents_sql(table, via, through, index)
            await cur.execute(sql, (referenced_id, after, limit))
            rows = await cur.fetchall()
        return [Dependent(str(r[0]), int(r[1])) for r in rows]

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        if not page:
            return job
        now = self._clock()
        last = page[-1].id
        async with transaction(self._pool) as conn:
            with translate_errors("advance search_fanout"):
                async with conn.cursor() as cur:
                    await cur.execute(
                        "UPDATE search_fanout SET cursor_id = %s, appended = appended + %s,"
                        " locked_until = %s, updated_at = %s" + _UNCHANGED,
                        (last, len(page), _until(now, lease_s), db_time(now), *_ident(job, owner)),
                    )
                    if cur.rowcount != 1:
                        return None
            revisions = [(d.id, max(1, d.revision)) for d in page]
            await append_rebuilds(conn, job.target.dependent_type, revisions, now=now)
        return FanoutJob(job.id, job.target, last, job.appended + len(page))

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        now = db_time(self._clock())
        async with transaction_cursor(self._pool, "finish search_fanout") as cur:
            await cur.execute(
                "UPDATE search_fanout SET status = 'done', finished_at = %s,"
                " updated_at = %s, locked_by = NULL, locked_until = NULL" + _UNCHANGED,
                (now, now, *_ident(job, owner)),
            )
            return bool(cur.rowcount == 1)

    async def stats(self, referenced_types: Collection[str]) -> FanoutStats:
        types = sorted(referenced_types)
        if not types:
            return FanoutStats(0, 0, 0, None)
        async with transaction_cursor(self._pool, "read search_fanout") as cur:
            await cur.execute(
                "SELECT status, COUNT(*), COALESCE(SUM(appended), 0), MIN(updated_at)"
                f" FROM search_fanout WHERE referenced_type IN ({_marks(types)})"
                " GROUP BY status",
                types,
            )
            rows = await cur.fetchall()
        by = {str(r[0]): r for r in rows}
        pending = by.get("pending")
        return FanoutStats(
            pending=int(pending[1]) if pending else 0,
            done=int(by["done"][1]) if "done" in by else 0,
            appended_pending=int(pending[2]) if pending else 0,
            oldest_pending=pending[3] if pending else None,
        )


def _marks(values: Sequence[object]) -> str:
    return ", ".join(["%s"] * len(values))


def _target_key(t: FanoutTarget) -> tuple[str, str, str, str]:
    return (t.referenced_type, t.referenced_id, t.dependent_type, t.lookup_name)


def _until(now: datetime, lease_s: float) -> datetime:
    return db_time(now + timedelta(seconds=lease_s))


def _ident(job: FanoutJob, owner: str) -> tuple[Any, ...]:
    return (job.id, job.target.revision, job.cursor_id, owner)


async def _job(cur: Any, job_id: int) -> FanoutJob:
    await cur.execute(
        "SELECT referenced_type, referenced_id, dependent_type, lookup_name, revision,"
        " cursor_id, appended FROM search_fanout WHERE id = %s",
        (job_id,),
    )
    r = await cur.fetchone()
    target = FanoutTarget(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]))
    return FanoutJob(job_id, target, str(r[5]), int(r[6]))
