"""The workload of a fault run: concurrent writers through MariaDB transactions.

- rounds of `searchsync.devtools.loadgen` (create, update, soft delete, restore, hard delete and
  re-create, concurrent writers, seeded plans), each round on fresh ids under the run's prefix;
- one hot key, updated in a loop;
- rolled-back transactions: updates whose transaction fails after the row write (the writer's
  change's block raises), so neither the row change nor its outbox row commits.

Writers keep going through faults: an error (MariaDB restarting, a killed connection) ends that
operation or round, and the next one starts after a short pause. The checker never relies on
what the writers believe they did: it reads the truth from MariaDB at quiescence.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiomysql
from searchsync.devtools.loadgen import run_loadgen
from searchsync.errors import AggregateExists
from searchsync.writer import WIKI_PAGE, AsyncAggregateWriter, PageWriter


class _RollBack(Exception):
    """Raised between the row write and the outbox insert: the transaction rolls back."""


@dataclass(slots=True)
class WorkloadStats:
    rounds: int = 0
    round_errors: int = 0
    hot_updates: int = 0
    rolled_back: int = 0
    errors: int = 0
    error_types: dict[str, int] = field(default_factory=dict)

    def error(self, exc: BaseException) -> None:
        self.errors += 1
        name = type(exc).__name__
        self.error_types[name] = self.error_types.get(name, 0) + 1


async def run_workload(
    pool: aiomysql.Pool, prefix: str, seed: int, stop: asyncio.Event, stats: WorkloadStats
) -> None:
    rng = random.Random(seed)
    writer = PageWriter(pool)
    hot = f"{prefix}hot"
    await _retrying(lambda: writer.create(hot, "hot key", "0", {}), stop, stats)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(_rounds(writer, prefix, rng.randrange(2**31), stop, stats))
        tg.create_task(_hot(writer, hot, stop, stats))
        tg.create_task(_rollbacks(pool, hot, random.Random(rng.randrange(2**31)), stop, stats))


async def _rounds(
    writer: PageWriter, prefix: str, seed: int, stop: asyncio.Event, stats: WorkloadStats
) -> None:
    while not stop.is_set():
        try:
            await run_loadgen(
                writer,
                pages=12,
                updates=80,
                concurrency=4,
                delete_ratio=0.1,
                hard_delete_ratio=0.06,
                seed=seed + stats.rounds,
                id_prefix=f"{prefix}r{stats.rounds}-",
            )
        except Exception as exc:  # MariaDB restarting, a killed connection: next round
            stats.round_errors += 1
            stats.error(exc)
        stats.rounds += 1
        await _pause(stop, 0.3)


async def _hot(writer: PageWriter, hot: str, stop: asyncio.Event, stats: WorkloadStats) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        try:
            await writer.update(hot, content=f"hot {n}")
            stats.hot_updates += 1
        except Exception as exc:
            stats.error(exc)
            await _pause(stop, 0.3)
        await asyncio.sleep(0.02)


async def _rollbacks(
    pool: aiomysql.Pool, hot: str, rng: random.Random, stop: asyncio.Event, stats: WorkloadStats
) -> None:
    writer = AsyncAggregateWriter(pool, WIKI_PAGE)  # what PageWriter runs on
    while not stop.is_set():
        await _pause(stop, rng.uniform(0.1, 0.6))
        try:
            title = f"never committed {rng.random()}"
            async with writer.update(hot, {"title": title}) as change:
                raise _RollBack(f"rolled back {hot} at {change.revision}")
        except _RollBack:
            stats.rolled_back += 1
        except Exception as exc:
            stats.error(exc)


async def _retrying(
    call: Callable[[], Awaitable[Any]], stop: asyncio.Event, stats: WorkloadStats
) -> None:
    for _ in range(60):
        try:
            await call()
            return
        except AggregateExists:  # an earlier attempt committed, its answer was lost
            return
        except Exception as exc:
            stats.error(exc)
            await _pause(stop, 0.5)
    raise AssertionError("the workload could not create its hot key")


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
