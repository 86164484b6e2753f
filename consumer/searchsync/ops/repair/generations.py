"""The wheel's persisted state: epochs and buckets (migration 005), and which buckets to scan
next.

Generations (invariant 13): `begin_many` sets ``running = committed + 1``; only `complete_many`,
after both sides of the bucket were read to the end, commits it. A scan that dies in between leaves
the generation where it was, and the next `begin_many` restarts the bucket under the same new
generation.

The schedule: ``priority = (age / SLO)^gamma * (lambda + eps) / cost``, lambda the EWMA of the
drift rate. A never-scanned bucket counts as `max_staleness` old; one at least that old comes
first, whatever its score. The policy is ``[repair]``'s (`RepairSettings`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Protocol

import aiomysql

from searchsync.config import RepairSettings
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


DEFAULT_COST_S: Final = 1.0  # the scan cost of a bucket never scanned


@dataclass(frozen=True, slots=True)
class Choice:
    bucket: int
    score: float
    age_s: float
    drift_ewma: float
    cost_s: float
    forced: bool

    def explain(self) -> str:
        why = "forced: older than max staleness" if self.forced else "by score"
        return (
            f"bucket {self.bucket}: score={self.score:.6g} = (age {self.age_s:.1f}s / SLO)^gamma"
            f" * (lambda {self.drift_ewma:.4g} + eps) / cost {self.cost_s:.3g}s  [{why}]"
        )


def ewma(previous: float, observed: float, alpha: float) -> float:
    return alpha * observed + (1.0 - alpha) * previous


def priority(
    age_s: float, slo_s: float, gamma: float, lam: float, eps: float, cost_s: float
) -> float:
    staleness: float = (max(age_s, 0.0) / slo_s) ** gamma
    return staleness * (lam + eps) / max(cost_s, 1e-9)


def age_s(state: BucketState, now: datetime, max_staleness_s: float) -> float:
    """Seconds since the bucket's last complete scan (`max_staleness_s` if never)."""
    at = state.last_complete_at
    return max_staleness_s if at is None else (now - at).total_seconds()


def choose(
    buckets: Iterable[BucketState], now: datetime, policy: RepairSettings, limit: int
) -> list[Choice]:
    """The `limit` buckets to scan now, forced ones first, then by score (ties: bucket)."""
    choices: list[Choice] = []
    for b in buckets:
        age = age_s(b, now, policy.max_staleness_s)
        cost = b.cost_s if b.cost_s is not None else DEFAULT_COST_S
        score = priority(age, policy.slo_s, policy.gamma, b.drift_ewma, policy.epsilon, cost)
        choices.append(
            Choice(b.bucket, score, age, b.drift_ewma, cost, age >= policy.max_staleness_s)
        )
    choices.sort(key=lambda c: (not c.forced, -c.score, c.bucket))
    return choices[:limit]


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
        async with transaction_cursor(self._pool, "begin repair buckets") as cur:
            for statement in (  # the next generation set, then read back (same rows, same args)
                "UPDATE search_repair_bucket SET running_generation = generation + 1"
                " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
                "SELECT bucket, running_generation FROM search_repair_bucket"
                " WHERE aggregate_type = %s AND epoch = %s AND bucket IN %s",
            ):
                await cur.execute(expand_in(statement, len(buckets)), args)
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
