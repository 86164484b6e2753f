"""The `WheelState` (``search_repair_epoch``, ``search_repair_bucket``) contract: each case takes
a `WheelStateWorld` and runs unchanged against `FakeWheelState`
(tests/unit/test_mysql_contracts.py) and `MysqlWheelState` on MariaDB, scoped to the case
(tests/integration/test_mysql_contracts_real.py). Generations follow invariant 13.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import pytest
from searchsync.ops.repair.generations import BucketState, WheelState, ensure_epoch

from tests.fakes.wheel_state import FakeWheelState

TYPE = "wiki_page"
T0 = datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)


class WheelStateWorld(Protocol):
    state: WheelState
    """A wheel of its own: no epoch of `TYPE` exists in it yet."""


class FakeWheelStateWorld:
    def __init__(self) -> None:
        self.state = FakeWheelState()


def scanned(bucket: int, generation: int, *, at: int = 0) -> BucketState:
    return BucketState(
        bucket=bucket,
        generation=generation,
        last_complete_at=T0 + timedelta(seconds=at),
        drift_ewma=0.125,
        last_counts={"missing": 2, "stale": 0},
        cost_s=1.5,
        rows_seen=400,
    )


async def contract_epochs_start_empty_and_count_up(w: WheelStateWorld) -> None:
    assert await w.state.current_epoch(TYPE) is None
    first = await w.state.start_epoch(TYPE, 4, 1, T0)
    assert (first.aggregate_type, first.epoch, first.bucket_count) == (TYPE, 1, 4)
    assert first.canonicalization_version == 1
    assert await w.state.current_epoch(TYPE) == first
    assert await w.state.buckets(first) == {b: BucketState(b) for b in range(4)}
    second = await w.state.start_epoch(TYPE, 8, 1, T0)
    assert second.epoch == 2 and await w.state.current_epoch(TYPE) == second
    assert sorted(await w.state.buckets(second)) == list(range(8))


async def contract_ensure_epoch_keeps_a_matching_one(w: WheelStateWorld) -> None:
    epoch, new = await ensure_epoch(w.state, TYPE, 4, 1, T0)
    assert new and epoch.epoch == 1
    assert await ensure_epoch(w.state, TYPE, 4, 1, T0) == (epoch, False)
    changed, new = await ensure_epoch(w.state, TYPE, 4, 2, T0)
    assert new and changed.epoch == 2


async def contract_begin_runs_the_next_generation_and_complete_commits_it(
    w: WheelStateWorld,
) -> None:
    epoch = await w.state.start_epoch(TYPE, 4, 1, T0)
    generation = (await w.state.begin_many(epoch, [2]))[2]
    assert generation == 1
    assert (await w.state.buckets(epoch))[2] == BucketState(2, running_generation=1)
    done = scanned(2, generation, at=5)
    await w.state.complete_many(epoch, [done])
    assert (await w.state.buckets(epoch))[2] == done
    assert await w.state.begin_many(epoch, [2]) == {2: 2}


async def contract_a_dead_scan_leaves_the_committed_generation(w: WheelStateWorld) -> None:
    epoch = await w.state.start_epoch(TYPE, 2, 1, T0)
    await w.state.complete_many(epoch, [scanned(0, (await w.state.begin_many(epoch, [0]))[0])])
    assert await w.state.begin_many(epoch, [0]) == {0: 2}  # and the scan dies
    stored = (await w.state.buckets(epoch))[0]
    assert (stored.generation, stored.running_generation) == (1, 2)
    assert await w.state.begin_many(epoch, [0]) == {0: 2}  # the same new generation, from the start


async def contract_completing_a_generation_not_running_is_refused(w: WheelStateWorld) -> None:
    epoch = await w.state.start_epoch(TYPE, 2, 1, T0)
    with pytest.raises(RuntimeError):
        await w.state.complete_many(epoch, [scanned(1, 1)])  # never begun
    await w.state.begin_many(epoch, [1])
    with pytest.raises(RuntimeError):
        await w.state.complete_many(epoch, [scanned(1, 5)])
    assert (await w.state.buckets(epoch))[1] == BucketState(1, running_generation=1)


async def contract_many_at_once(w: WheelStateWorld) -> None:
    epoch = await w.state.start_epoch(TYPE, 6, 1, T0)
    assert await w.state.begin_many(epoch, []) == {}
    assert await w.state.begin_many(epoch, [4, 1, 3]) == {4: 1, 1: 1, 3: 1}
    await w.state.complete_many(epoch, [])
    states = [scanned(b, 1, at=b) for b in (1, 3)]
    await w.state.complete_many(epoch, states)
    buckets = await w.state.buckets(epoch)
    assert [buckets[1], buckets[3]] == states
    assert buckets[4] == BucketState(4, running_generation=1)
    with pytest.raises(RuntimeError):  # one not running: none of them is committed
        await w.state.complete_many(epoch, [scanned(4, 1), scanned(5, 1)])
    assert (await w.state.buckets(epoch))[4] == BucketState(4, running_generation=1)


WHEEL_STATE_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_epochs_start_empty_and_count_up,
    contract_ensure_epoch_keeps_a_matching_one,
    contract_begin_runs_the_next_generation_and_complete_commits_it,
    contract_a_dead_scan_leaves_the_committed_generation,
    contract_completing_a_generation_not_running_is_refused,
    contract_many_at_once,
]
