"""The wheel reads the next span while the current one settles and heals
(searchsync/ops/repair/wheel.py), and never lets that read-ahead count for more than a scan begun:
a rotation that stops or is cancelled drops it, and its buckets are scanned again from their first
key with exactly the findings they hold (invariant 13)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from pipeline_fakes import page_row
from searchsync.ops.repair.load import LagGuard, Limits
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.reader import bucket_of_id
from searchsync.ops.repair.wheel import Wheel
from test_repair_wheel import World

M = 4


def _world_with_a_missing_document_per_bucket() -> tuple[World, dict[int, str]]:
    """Pages in every bucket, and in each bucket one row without its document (so every span
    has a candidate and settles)."""
    w = World(M)
    missing: dict[int, str] = {}
    n = 0
    while len(missing) < M or n < 40:
        i = f"p{n:03d}"
        b = bucket_of_id("wiki_page", M)(i)
        if b not in missing:
            w.truth.put_page(page_row(i, 2))
            missing[b] = i
        else:
            w.page(i)
        n += 1
    return w, missing


def _wheel(w: World, settle: Callable[[float], Any], limits: Limits | None = None) -> Wheel:
    return w.wheel(dry_run=True, span_buckets=1, settle=settle, limits=limits)


async def _yield_until(done: Callable[[], bool], turns: int = 200) -> bool:
    for _ in range(turns):
        if done():
            return True
        await asyncio.sleep(0)
    return done()


def _running(w: World) -> set[int]:
    """The buckets begun and not completed."""
    return {
        s.bucket
        for states in w.state.states.values()
        for s in states.values()
        if s.running_generation is not None and s.running_generation != s.generation
    }


async def test_the_next_span_is_read_while_the_current_one_settles() -> None:
    w, missing = _world_with_a_missing_document_per_bucket()
    seen_during_settle: list[set[int]] = []

    async def settle(_: float) -> None:
        before = w.index_side.pages
        # the read-ahead runs while this span waits: it begins the next span and reads its pages
        await _yield_until(lambda: w.index_side.pages > before)
        seen_during_settle.append(_running(w))

    report = await _wheel(w, settle).rotation()
    assert report.interrupted == 0 and len(report.buckets) == M
    assert {f.id for b in report.buckets for f in b.findings} == set(missing.values())
    assert all(f.kind is FindingKind.MISSING for b in report.buckets for f in b.findings)
    order = [b.bucket for b in report.buckets]
    # during the settle of each span but the last, the next span was begun (and being read)
    assert len(seen_during_settle) == M
    for k in range(M - 1):
        assert order[k + 1] in seen_during_settle[k], (k, order, seen_during_settle)
    assert seen_during_settle[-1] <= {order[-1]}


async def test_a_cancelled_rotation_drops_its_read_ahead_and_the_next_finds_exactly_the_drift() -> (
    None
):
    w, missing = _world_with_a_missing_document_per_bucket()
    settling = asyncio.Event()

    async def hang(_: float) -> None:
        settling.set()
        await asyncio.Event().wait()  # a killed process, mid-settle

    task = asyncio.create_task(_wheel(w, hang).rotation())
    await asyncio.wait_for(settling.wait(), 10)
    assert await _yield_until(lambda: len(asyncio.all_tasks()) > 2)  # the read-ahead runs
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await _yield_until(lambda: len(asyncio.all_tasks()) == 1)  # nothing left behind

    async def instant(_: float) -> None:
        return None

    again = await _wheel(w, instant).rotation()
    assert again.interrupted == 0 and len(again.buckets) == M
    assert {f.id for b in again.buckets for f in b.findings} == set(missing.values())


async def test_a_rotation_stopped_by_the_lag_guard_counts_nothing_from_its_read_ahead() -> None:
    w, missing = _world_with_a_missing_document_per_bucket()
    lags: Iterator[int] = iter([0, 0])  # the first two spans may start; then the lag stays high

    async def read_lag() -> int:
        return next(lags, 10_000)

    async def no_wait(_: float) -> None:
        return None

    guard = LagGuard(read_lag, max_lag=100, timeout_s=0.0, poll_s=1.0, sleep=no_wait)
    report = await _wheel(w, no_wait, Limits(lag=guard)).rotation()
    assert report.stopped is not None
    assert len(report.buckets) == 2  # the two spans read, finished and reported
    assert {f.id for b in report.buckets for f in b.findings} == {
        missing[b.bucket] for b in report.buckets
    }
    done = {b.bucket for b in report.buckets}
    states = await w.state.buckets(report.epochs["wiki_page"])
    assert {b for b, s in states.items() if s.last_complete_at is not None} == done
