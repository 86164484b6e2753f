"""The wheel's persisted state: epochs and buckets (migration 005).

Generations (invariant 13): `begin_many` sets ``running = committed + 1``; only `complete_many`,
after both sides of the bucket were read to the end, commits it. A scan that dies in between leaves
the generation where it was, and the next `begin_many` restarts the bucket under the same new
generation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import aiomysql

from searchsync.mysql.pool import db_time, expand_in, transaction_cursor


@dataclass(frozen=True, slots=True)
class Epoch:
    aggregate_type: str
    epoch: int
    bucket_count: int
    canonicalization_version: int


@dataclass(frozen=True, slots=True)
class BucketState:
    bucket: int
    generation: int = 0
    running_generation: int | None = None
    last_complete_at: datetime | None = None
    drift_ewma: float = 0.0
    last_counts: Mapping[str, int] = field(default_factory=dict)
    cost_s: float | None = None
    rows_seen: int = 0


class WheelState(Protocol):
    async def current_epoch(self, aggregate_type: str) -> Epoch | None: ...

    async def start_epoch(
        self, aggregate_type: str, m: int, canon: int, now: datetime
    ) -> Epoch: ...

    async def buckets(self, epoch: Epoch) -> dict[int, BucketState]: ...

    async def begin_many(self, epoch: Epoch, buckets: Sequence[int]) -> dict[int, int]:
        """Each bucket's running generation (in the order of `buckets`), set to its committed one
        + 1 (one transaction)."""

    async def complete_many(self, epoch: Epoch, states: Sequence[BucketState]) -> None:
        """Commit each state's generation, all or none (one transaction); one not running
        raises RuntimeError."""


async def ensure_epoch(
    store: WheelState, aggregate_type: str, m: int, canon: int, now: datetime
) -> tuple[Epoch, bool]:
    """The epoch for (`m`, `canon`): the current one if it matches, else a new one (True)."""
    current = await store.current_epoch(aggregate_type)
    if current and (current.bucket_count, current.canonicalization_version) == (m, canon):
        return current, False
    return await store.start_epoch(aggregate_type, m, canon, now), True


@dataclass(frozen=True, slots=True)
class WheelSnapshot:
    """One type's wheel as it stands: its current epoch (None: never repaired) and buckets."""

    aggregate_type: str
    epoch: Epoch | None
    buckets: Mapping[int, BucketState] = field(default_factory=dict)


async def snapshot(store: WheelState, aggregate_types: list[str]) -> dict[str, WheelSnapshot]:
    """The current epoch and bucket states of each type (read only; `searchsync status`)."""
    out: dict[str, WheelSnapshot] = {}
    for t in aggregate_types:
        epoch = await store.current_epoch(t)
        out[t] = WheelSnapshot(t, epoch, {} if epoch is None else await store.buckets(epoch))
    return out


class MysqlWheelState:
    """`WheelState` in ``search_repair_epoch`` / ``search_repair_bucket``; `scope` prefixes the
    stored aggregate type (separate wheels on one database)."""

    def __init__(self, pool: aiomysql.Pool, *, scope: str = "") -> None:
        self._pool = pool
        self._scope = scope

    async def current_epoch(self, aggregate_type: str) -> Epoch | None:
        async with transaction_cursor(self._pool, "read repair state") as cur:
            await cur.execute(
                "SELECT epoch, bucket_count, canonicalization_version FROM search_repair_epoch"
                " WHERE aggregate_type = %s ORDER BY epoch DESC LIMIT 1",
                (self._scope + aggregate_type,),
            )
            row = await cur.fetchone()
        return None if row is None else Epoch(aggregate_type, *(int(v) for v in row))

    async def start_epoch(self, aggregate_type: str, m: int, canon: int, now: datetime) -> Epoch:
        key = self._scope + aggregate_type
        async with transaction_cursor(self._pool, "start repair epoch") as cur:
            await cur.execute(
                "SELECT COALESCE(MAX(epoch), 0) FROM search_repair_epoch"
                " WHERE aggregate_type = %s FOR UPDATE",
                (key,),
            )
            epoch = int((await cur.fetchone())[0]) + 1
            await cur.execute(
                "INSERT INTO search_repair_epoch (aggregate_type, epoch, bucket_count,"
                " canonicalization_version, created_at) VALUES (%s, %s, %s, %s, %s)",
                (key, epoch, m, canon, db_time(now)),
            )
            await cur.executemany(
                "INSERT INTO search_repair_bucket (aggregate_type, epoch, bucket)"
                " VALUES (%s, %s, %s)",
                [(key, epoch, b) for b in range(m)],
            )
        return Epoch(aggregate_type, epoch, m, canon)

    async def buckets(self, epoch: Epoch) -> dict[int, BucketState]:
        async with transaction_cursor(self._pool, "read repair state") as cur:
            await cur.execute(
                "SELECT bucket, generation, running_generation, last_complete_at, drift_ewma,"
                " last_counts, cost_s, rows_seen FROM search_repair_bucket"
                " WHERE aggregate_type = %s AND epoch = %s",
                (self._scope + epoch.aggregate_type, epoch.epoch),
            )
            rows = await cur.fetchall()
        return {
            int(b): BucketState(
                bucket=int(b),
                generation=int(generation),
                running_generation=None if running is None else int(running),
                last_complete_at=None if at is None else at.replace(tzinfo=UTC),
                drift_ewma=float(ewma),
                last_counts=json.loads(counts) if counts else {},
                cost_s=None if cost is None else float(cost),
                rows_seen=int(seen),
            )
            for b, generation, running, at, ewma, counts, cost, seen in rows
        }

    async def begin_many(self, epoch: Epoch, buckets: Sequence[int]) -> dict[int, int]:
        if not buckets:
            return {}
        args = (self._scope + epoch.aggregate_type, epoch.epoch, *buckets)
        n = len(buckets)
        async with transaction_cursor(self._pool, "begin repair buckets") as cur:
            await cur.execute(
                expand_in(
                    "UPDATE search_repair_bucket SET running_generation = generation + 1"
                    " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
                    n,
                ),
                args,
            )
            await cur.execute(
                expand_in(
                    "SELECT bucket, running_generation FROM search_repair_bucket"
                    " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
                    n,
                ),
                args,
            )
            found = {int(b): int(g) for b, g in await cur.fetchall()}
        return {b: found[b] for b in buckets}

    async def complete_many(self, epoch: Epoch, states: Sequence[BucketState]) -> None:
        if not states:
            return
        async with transaction_cursor(self._pool, "complete repair buckets") as cur:
            for s in states:
                at = s.last_complete_at
                await cur.execute(
                    "UPDATE search_repair_bucket SET generation = %s,"
                    " running_generation = NULL, last_complete_at = %s, drift_ewma = %s,"
                    " last_counts = %s, cost_s = %s, rows_seen = %s WHERE aggregate_type = %s"
                    " AND epoch = %s AND bucket = %s AND running_generation = %s",
                    (
                        s.generation,
                        None if at is None else db_time(at),
                        s.drift_ewma,
                        json.dumps(dict(s.last_counts), sort_keys=True),
                        s.cost_s,
                        s.rows_seen,
                        self._scope + epoch.aggregate_type,
                        epoch.epoch,
                        s.bucket,
                        s.generation,
                    ),
                )
                if cur.rowcount != 1:
                    raise RuntimeError(
                        f"bucket {s.bucket}: generation {s.generation} is not the "
                        "running one (another repair process?)"
                    )
