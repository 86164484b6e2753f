"""The repair's load limits: rate ceilings (token buckets on an injected clock) and the live-lag
guard, alone and inside the wheel (docs/design.md, "Repair", "Load")."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.config import load_settings
from searchsync.errors import ConfigError, LiveLagTooHigh
from searchsync.ops.repair.load import LagGuard, Limits, TokenBucket, live_lag
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.wheel import limits
from test_repair_wheel import World, inject_every_kind

from tests.fakes.kafka_admin import FakeTopics


class FakeTime:
    """A clock whose sleep advances it: waiting costs no wall time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def lags(*values: int) -> tuple[Iterator[int], LagGuard, FakeTime]:
    t = FakeTime()
    it = iter(values)
    last = [values[-1]]

    async def read() -> int:
        last[0] = next(it, last[0])
        return last[0]

    guard = LagGuard(
        read, max_lag=100, timeout_s=60.0, poll_s=5.0, group="g", clock=t.clock, sleep=t.sleep
    )
    return it, guard, t


async def test_a_token_bucket_holds_the_rate_past_its_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(100, clock=t.clock, sleep=t.sleep)
    for _ in range(10):
        await bucket.take(100)  # 1000 rows, 100 of them free (the burst)
    assert t.now == pytest.approx(9.0)
    assert sum(t.slept) == pytest.approx(9.0)


async def test_a_token_bucket_within_its_burst_and_a_zero_rate_never_wait() -> None:
    t = FakeTime()
    await TokenBucket(50, clock=t.clock, sleep=t.sleep).take(50)
    unlimited = TokenBucket(0, clock=t.clock, sleep=t.sleep)
    for _ in range(100):
        await unlimited.take(10_000)
    assert t.slept == []


@given(
    rate=st.floats(1, 1_000),
    takes=st.lists(st.integers(0, 5_000), max_size=30),
    gaps=st.lists(st.floats(0, 3), max_size=30),
)
def test_a_token_bucket_never_exceeds_rate_times_time_plus_burst(
    rate: float, takes: list[int], gaps: list[float]
) -> None:
    async def run() -> None:
        t = FakeTime()
        bucket = TokenBucket(rate, clock=t.clock, sleep=t.sleep)
        used = 0
        for n, gap in zip(takes, [*gaps, *[0.0] * len(takes)], strict=False):
            t.now += gap
            await bucket.take(n)
            used += n
            # after each take returns, what was used fits the ceiling
            assert used <= rate * t.now + bucket.burst + 1e-6 * max(used, 1)

    asyncio.run(run())


async def test_the_lag_guard_waits_while_the_lag_is_high_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, guard, t = lags(500, 300, 90)
    with caplog.at_level(logging.WARNING):
        await guard.wait("wiki_page bucket 3")
    assert t.slept == [5.0, 5.0] and t.now == 10.0
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "lag 500 > repair.max_live_lag 100" in line and "wiki_page bucket 3" in line


async def test_the_lag_guard_gives_up_after_its_timeout_with_what_to_do() -> None:
    _, guard, t = lags(1_000)
    with pytest.raises(LiveLagTooHigh, match=re.escape("repair.max_live_lag 100 for 60s")):
        await guard.wait("bucket 0")
    assert t.now == pytest.approx(60.0)


async def test_a_lag_at_the_bound_or_a_guard_turned_off_does_not_wait() -> None:
    _, guard, t = lags(100)
    await guard.wait("x")
    off = LagGuard(_high, max_lag=0, timeout_s=1, poll_s=1, clock=t.clock, sleep=t.sleep)
    await off.wait("x")
    assert t.slept == []


async def _high() -> int:
    return 10**9


def test_live_lag_sums_the_groups_lag_over_its_topics() -> None:
    kafka = FakeTopics()
    kafka.topic("outbox.event.wiki_page", [b""] * 10, [b""] * 4)
    kafka.commits[("searchsync", ("outbox.event.wiki_page", 0))] = 7
    kafka.commits[("searchsync", ("outbox.event.wiki_page", 1))] = 4
    settings = load_settings({})
    assert live_lag(kafka.admin({}), settings) == 3
    off = limits(load_settings({}), None)
    assert off.lag.max_lag == 0  # no admin: no guard
    on = limits(load_settings({"SEARCHSYNC_REPAIR_MAX_LIVE_LAG": "5"}), kafka.admin({}))
    assert on.lag.max_lag == 5 and on.mysql_rows.rate == 20_000


async def test_the_wheel_pays_every_row_and_request_into_its_ceilings() -> None:
    w = World(m=2)
    for n in range(40):
        w.page(f"p{n:02d}")
    t = FakeTime()
    rows_slept: list[float] = []
    requests_slept: list[float] = []

    def sleep(slept: list[float]) -> Callable[[float], Awaitable[None]]:
        async def record(seconds: float) -> None:
            slept.append(seconds)
            await t.sleep(seconds)

        return record

    rows = TokenBucket(10, clock=t.clock, sleep=sleep(rows_slept))
    requests = TokenBucket(1, clock=t.clock, sleep=sleep(requests_slept))
    report = await w.wheel(limits=Limits(mysql_rows=rows, es_requests=requests)).rotation()
    assert sum(b.rows for b in report.buckets) == 40
    # one clock for both: the time spent is what the tighter ceiling needs, and both held
    assert sum(rows_slept) > 0 and sum(requests_slept) > 0
    assert t.now >= (40 - rows.burst) / 10 - 1e-9
    assert t.now >= w.index_side.pages - requests.burst - 1e-9


async def test_a_high_live_lag_stops_the_rotation_before_a_bucket_starts() -> None:
    w = World(m=3)
    inject_every_kind(w)
    _, guard, _ = lags(1_000)
    report = await w.wheel(limits=Limits(lag=guard)).rotation()
    assert report.stopped is not None and "repair.max_live_lag" in report.stopped
    assert report.buckets == [] and w.outbox.events == []
    states = await w.state.buckets(report.epochs["wiki_page"])
    assert all(s.generation == 0 and s.running_generation is None for s in states.values())


async def test_a_lag_that_grows_while_healing_leaves_the_bucket_to_be_scanned_again() -> None:
    w = World(m=1)
    expected = inject_every_kind(w)
    _, guard, _ = lags(0, 1_000)  # fine before the bucket, too high before the appends
    report = await w.wheel(limits=Limits(lag=guard)).rotation()
    [bucket] = report.buckets
    assert bucket.interrupted is not None and report.stopped is not None
    assert bucket.findings == [] and bucket.appended == 0 and w.outbox.events == []
    [state] = (await w.state.buckets(report.epochs["wiki_page"])).values()
    assert (state.generation, state.running_generation) == (0, 1)
    again = await w.wheel().rotation()
    assert {f.id: f.kind for f in again.buckets[0].findings} == expected
    assert again.counts()[FindingKind.ORPHAN.value] == 1


async def test_the_healer_checks_the_lag_before_each_batch() -> None:
    w = World(m=1)
    expected = inject_every_kind(w)
    reads: list[int] = []

    async def read() -> int:
        reads.append(1)
        return 0

    guard = LagGuard(read, max_lag=10, timeout_s=1, poll_s=1)
    report = await w.wheel(limits=Limits(lag=guard), batch_size=4).rotation()
    # once before the bucket, then before each batch of 4 appends: 4 + 3
    assert report.buckets[0].appended == len(expected) == 7 and len(reads) == 3


@pytest.mark.parametrize(
    ("key", "value"),
    [("MAX_LIVE_LAG", "-1"), ("MYSQL_ROWS_PER_S", "fast"), ("LAG_POLL_S", "0")],
)
def test_a_bad_load_setting_names_its_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"repair.{key.lower()}")):
        load_settings({f"SEARCHSYNC_REPAIR_{key}": value})
