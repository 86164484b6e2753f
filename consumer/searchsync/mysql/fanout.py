"""Fan-out jobs of related aggregates (docs/design.md, "Fan-out"; invariant 16): the table
``search_fanout`` and the dependents' ids read from the truth. A job's pass walks its dependents
by id, appending one REBUILD per dependent; a crash re-appends a page, and a duplicate REBUILD is
harmless."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

import aiomysql

from searchsync.clock import utc_now
from searchsync.mysql.fanout_dependents import DependentIndexes, dependents_sql
from searchsync.mysql.keys import DataTypes, cursor_param, key_params
from searchsync.mysql.outbox import append_rebuilds
from searchsync.mysql.pool import db_time, expand_in, fetch_all, transaction_cursor
from searchsync.projection import Child

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
        """Record `targets`, all or none, before their event may finish. A newer revision restarts
        a job's pass; the same or an older one changes nothing (redelivery is harmless)."""

    async def claim(
        self, owner: str, lease_s: float, routes: Collection[Route]
    ) -> FanoutJob | None:
        """Lease the oldest pending job of `routes` (those this worker's projectors serve) that is
        free or already `owner`'s, for `lease_s`; None when there is none."""

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
        """The next `limit` rows of `table` (by id, id > `after`) whose `via` is `referenced_id`,
        or that have such a child row `through` a child table (each once); read in MySQL.
        `keys`: the table's id and revision columns."""

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        """Append a REBUILD per dependent of `page` and move the cursor past it, in one
        transaction; the job as it is now, or None (nothing appended) if it changed since `job`
        was read (restarted, or leased by another worker)."""

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        """Mark the pass of `job` done; False if the job changed meanwhile."""

    async def stats(self, referenced_types: Collection[str]) -> FanoutStats:
        """The jobs of `referenced_types` by state."""


_UNCHANGED = (
    " WHERE id = %s AND status = 'pending' AND revision = %s AND cursor_id = %s AND locked_by = %s"
)


class MysqlFanout:
    """`FanoutStore` on MySQL; each call is one short transaction (READ COMMITTED)."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool
        self._indexes = DependentIndexes()
        self._kinds = DataTypes()

    async def record(self, targets: Sequence[FanoutTarget]) -> None:
        if not targets:
            return
        now = db_time(utc_now())
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
        now = utc_now()
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
                if cur.rowcount != 1:
                    continue
                await cur.execute(
                    "SELECT referenced_type, referenced_id, dependent_type, lookup_name, revision,"
                    " cursor_id, appended FROM search_fanout WHERE id = %s",
                    (job_id,),
                )
                r = await cur.fetchone()
                target = FanoutTarget(str(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4]))
                return FanoutJob(job_id, target, str(r[5]), int(r[6]))
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
        via_table, key = (table, keys[0]) if through is None else (through.table, through.key)
        async with transaction_cursor(self._pool, f"read {via_table}") as cur:
            index = None if through is None else await self._indexes.name(cur, through, via)
            integer = partial(self._kinds.integer, cur.connection, via_table)
            referenced = key_params([referenced_id], await integer(via))
            if not referenced:  # not the text of an integer: no row of an integer column holds it
                return []
            cursor = cursor_param(after, await integer(key))
            sql = dependents_sql(table, via, through, index, keys=keys)
            await cur.execute(sql, (referenced[0], cursor, limit))
            rows = await cur.fetchall()
        return [Dependent(r[0] if r[0].__class__ is str else str(r[0]), int(r[1])) for r in rows]

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        if not page:
            return job
        now = utc_now()
        last = page[-1].id
        async with transaction_cursor(self._pool, "advance search_fanout") as cur:
            await cur.execute(
                "UPDATE search_fanout SET cursor_id = %s, appended = appended + %s,"
                " locked_until = %s, updated_at = %s" + _UNCHANGED,
                (last, len(page), _until(now, lease_s), db_time(now), *_ident(job, owner)),
            )
            if cur.rowcount != 1:
                return None
            revisions = [(d.id, max(1, d.revision)) for d in page]
            await append_rebuilds(cur.connection, job.target.dependent_type, revisions, now=now)
        return FanoutJob(job.id, job.target, last, job.appended + len(page))

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        now = db_time(utc_now())
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
        sql = (
            "SELECT status, COUNT(*), COALESCE(SUM(appended), 0), MIN(updated_at)"
            " FROM search_fanout WHERE referenced_type IN %s GROUP BY status"
        )
        rows = await fetch_all(self._pool, "read search_fanout", expand_in(sql, len(types)), types)
        by = {str(r[0]): r for r in rows}
        pending, done = by.get("pending", (None, 0, 0, None)), by.get("done", (None, 0))
        return FanoutStats(int(pending[1]), int(done[1]), int(pending[2]), pending[3])


def _target_key(t: FanoutTarget) -> tuple[str, str, str, str]:
    return (t.referenced_type, t.referenced_id, t.dependent_type, t.lookup_name)


def _until(now: datetime, lease_s: float) -> datetime:
    return db_time(now + timedelta(seconds=lease_s))


def _ident(job: FanoutJob, owner: str) -> tuple[Any, ...]:
    return (job.id, job.target.revision, job.cursor_id, owner)
