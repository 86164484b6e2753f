"""The wheel's persisted state: epochs and buckets (docs/design.md, "Repair"; migration 005).

Generations (invariant 13): `begin` records ``running = committed + 1`` for a bucket; only
`complete`, after both sides of the bucket were read to the end, commits it. A scan that dies
in between leaves ``running`` set and ``generation`` where it was, and the next `begin` starts
the bucket from its first key again, under the same new generation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import aiomysql

from searchsync.mysql.pool import db_time, expand_in, transaction, translate_errors

__all__ = [
    "BucketState",
    "Epoch",
    "MysqlWheelState",
    "WheelSnapshot",
    "WheelState",
    "snapshot",
]


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

    async def begin(self, epoch: Epoch, bucket: int) -> int: ...

    async def complete(self, epoch: Epoch, state: BucketState) -> None: ...

    async def begin_many(self, epoch: Epoch, buckets: Sequence[int]) -> dict[int, int]:
        """`begin` of each bucket, at once (one transaction on MySQL)."""
        ...

    async def complete_many(self, epoch: Epoch, states: Sequence[BucketState]) -> None:
        """`complete` of each state, at once (one transaction on MySQL)."""
        ...


async def ensure_epoch(
    store: WheelState, aggregate_type: str, m: int, canon: int, now: datetime
) -> tuple[Epoch, bool]:
    """The epoch for (`m`, `canon`): the current one if it matches, else a new one (True)."""
    current = await store.current_epoch(aggregate_type)
    if current is not None and (current.bucket_count, current.canonicalization_version) == (
        m,
        canon,
    ):
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
        buckets = {} if epoch is None else await store.buckets(epoch)
        out[t] = WheelSnapshot(t, epoch, buckets)
    return out


class MysqlWheelState:
    """`WheelState` in ``search_repair_epoch`` / ``search_repair_bucket`` (migration 005)."""

    def __init__(self, pool: aiomysql.Pool, *, scope: str = "") -> None:
        """`scope` prefixes the stored aggregate type: separate wheels on one database."""
        self._pool = pool
        self._scope = scope

    def _key(self, aggregate_type: str) -> str:
        return self._scope + aggregate_type

    async def _rows(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        async with transaction(self._pool) as conn:
            with translate_errors("read repair state"):
                async with conn.cursor(aiomysql.DictCursor) as cur:
                    await cur.execute(sql, args)
                    return list(await cur.fetchall())

    async def current_epoch(self, aggregate_type: str) -> Epoch | None:
        rows = await self._rows(
            "SELECT epoch, bucket_count, canonicalization_version FROM search_repair_epoch"
            " WHERE aggregate_type = %s ORDER BY epoch DESC LIMIT 1",
            (self._key(aggregate_type),),
        )
        if not rows:
            return None
        r = rows[0]
        return Epoch(
            aggregate_type,
            int(r["epoch"]),
            int(r["bucket_count"]),
            int(r["canonicalization_version"]),
        )

    async def start_epoch(self, aggregate_type: str, m: int, canon: int, now: datetime) -> Epoch:
        async with transaction(self._pool) as conn:
            with translate_errors("start repair epoch"):
                async with conn.cursor() as cur:
                    await cur.execute(
                        "SELECT COALESCE(MAX(epoch), 0) FROM search_repair_epoch"
                        " WHERE aggregate_type = %s FOR UPDATE",
                        (self._key(aggregate_type),),
                    )
                    (last,) = await cur.fetchone()
                    epoch = int(last) + 1
                    await cur.execute(
                        "INSERT INTO search_repair_epoch (aggregate_type, epoch, bucket_count,"
                        " canonicalization_version, created_at) VALUES (%s, %s, %s, %s, %s)",
                        (self._key(aggregate_type), epoch, m, canon, db_time(now)),
                    )
                    await cur.executemany(
                        "INSERT INTO search_repair_bucket (aggregate_type, epoch, bucket)"
                        " VALUES (%s, %s, %s)",
                        [(self._key(aggregate_type), epoch, b) for b in range(m)],
                    )
        return Epoch(aggregate_type, epoch, m, canon)

    async def buckets(self, epoch: Epoch) -> dict[int, BucketState]:
        rows = await self._rows(
            "SELECT bucket, generation, running_generation, last_complete_at, drift_ewma,"
            " last_counts, cost_s, rows_seen FROM search_repair_bucket"
            " WHERE aggregate_type = %s AND epoch = %s",
            (self._key(epoch.aggregate_type), epoch.epoch),
        )
        out: dict[int, BucketState] = {}
        for r in rows:
            at = r["last_complete_at"]
            out[int(r["bucket"])] = BucketState(
                bucket=int(r["bucket"]),
                generation=int(r["generation"]),
                running_generation=None
                if r["running_generation"] is None
                else int(r["running_generation"]),
                last_complete_at=None if at is None else at.replace(tzinfo=UTC),
                drift_ewma=float(r["drift_ewma"]),
                last_counts=json.loads(r["last_counts"]) if r["last_counts"] else {},
                cost_s=None if r["cost_s"] is None else float(r["cost_s"]),
                rows_seen=int(r["rows_seen"]),
            )
        return out

    async def begin(self, epoch: Epoch, bucket: int) -> int:
        return (await self.begin_many(epoch, [bucket]))[bucket]

    async def begin_many(self, epoch: Epoch, buckets: Sequence[int]) -> dict[int, int]:
        if not buckets:
            return {}
        key = (self._key(epoch.aggregate_type), epoch.epoch)
        async with transaction(self._pool) as conn:
            with translate_errors("begin repair buckets"):
                async with conn.cursor() as cur:
                    await cur.execute(
                        expand_in(
                            "UPDATE search_repair_bucket SET running_generation = generation + 1"
                            " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
                            len(buckets),
                        ),
                        (*key, *buckets),
                    )
                    await cur.execute(
                        expand_in(
                            "SELECT bucket, running_generation FROM search_repair_bucket"
                            " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
                            len(buckets),
                        ),
                        (*key, *buckets),
                    )
                    found = {int(b): int(g) for b, g in await cur.fetchall()}
        return {b: found[b] for b in buckets}

    async def complete(self, epoch: Epoch, state: BucketState) -> None:
        await self.complete_many(epoch, [state])

    async def complete_many(self, epoch: Epoch, states: Sequence[BucketState]) -> None:
        if not states:
            return
        async with transaction(self._pool) as conn:
            with translate_errors("complete repair buckets"):
                async with conn.cursor() as cur:
                    for state in states:
                        await self._complete(cur, epoch, state)

    async def _complete(self, cur: Any, epoch: Epoch, state: BucketState) -> None:
        """One bucket's completion; a generation that is no longer running fails the whole
        transaction (another repair process took the bucket over)."""
        at = state.last_complete_at
        await cur.execute(
            "UPDATE search_repair_bucket SET generation = %s,"
            " running_generation = NULL, last_complete_at = %s, drift_ewma = %s,"
            " last_counts = %s, cost_s = %s, rows_seen = %s WHERE aggregate_type = %s"
            " AND epoch = %s AND bucket = %s AND running_generation = %s",
            (
                state.generation,
                None if at is None else db_time(at),
                state.drift_ewma,
                json.dumps(dict(state.last_counts), sort_keys=True),
                state.cost_s,
                state.rows_seen,
                self._key(epoch.aggregate_type),
                epoch.epoch,
                state.bucket,
                state.generation,
            ),
        )
        if cur.rowcount != 1:
            raise RuntimeError(
                f"bucket {state.bucket}: generation {state.generation} is not the "
                "running one (another repair process?)"
            )
