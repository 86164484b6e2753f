"""The fan-out of related aggregates over the in-memory store (tests/fakes/fanout.py): the
consumer records a job before an event of a referenced type finishes, and the worker turns every
job into one REBUILD per dependent, paced, resumable after a crash at any point."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from searchsync.cli.status import render
from searchsync.config import FanoutSettings
from searchsync.errors import ErrorCode, TransientError
from searchsync.examples import article
from searchsync.mysql.fanout import Dependent, FanoutJob, FanoutStats, FanoutTarget
from searchsync.observability.metrics import Metrics
from searchsync.ops.fanout import FanoutWorker
from searchsync.ops.status import StatusReport
from searchsync.ops.status_probes import fanout_section
from searchsync.projection import ProjectorRegistry, default_registry
from searchsync.projection.references import dependents, event_types, referenced_types
from searchsync.search.sink import OutcomeKind, Sink
from searchsync.stream.coalesce import Work
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.types import Key, Operation, Position, ThinEvent

from tests.fakes.fanout import FakeFanout
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.truth import FakeTruth

SETTINGS = FanoutSettings(appends_per_s=1_000_000.0, page_size=7, progress_every=10)


def registry() -> ProjectorRegistry:
    r = default_registry()
    r.register(article.projector())
    return r


def author_work(author_id: str, *revisions: int) -> Work:
    events = tuple(
        (ThinEvent(f"e{r}", "author", author_id, Operation.UPSERT, r), Position("t", 0, n))
        for n, r in enumerate(revisions)
    )
    return Work(Key("author", author_id), events, attempts=1)


def processor(store: FakeFanout | None) -> Processor:
    index = InMemoryIndex()
    return Processor(
        registry=registry(),
        truth=FakeTruth(),
        sink=Sink(index),
        alias_for=lambda t: t,
        fence=SchemaFence(index.admin, interval_s=60.0),
        fanout=store,
    )


def test_a_lookup_of_another_type_makes_it_an_event_type_with_dependents() -> None:
    r = registry()
    assert referenced_types(r) == ("author",)
    assert event_types(r) == ("article", "author", "wiki_page")
    [(projector, lookup)] = dependents(r, "author")
    assert (projector.aggregate_type, lookup.name, lookup.via) == ("article", "author", "author_id")
    assert dependents(r, "wiki_page") == ()
    assert referenced_types(default_registry()) == ()


async def test_an_event_of_a_referenced_type_records_its_job_and_finishes() -> None:
    store = FakeFanout()
    [verdict] = await processor(store).process([author_work("au1", 4, 5)])
    assert verdict.kind is OutcomeKind.APPLIED and verdict.document is None
    [job] = store.jobs.values()
    assert job.target == FanoutTarget("author", "au1", "article", "author", 5)
    assert job.status == "pending"


class FailingRecord(FakeFanout):
    async def record(self, targets: object) -> None:
        raise TransientError(ErrorCode.MYSQL_DEADLOCK, "deadlock")


async def test_a_job_not_recorded_fails_the_event_so_its_offset_stays() -> None:
    [verdict] = await processor(FailingRecord()).process([author_work("au1", 5)])
    assert verdict.kind is OutcomeKind.FAILED and verdict.code is ErrorCode.MYSQL_DEADLOCK


async def test_without_a_store_a_referenced_type_without_projector_is_unknown() -> None:
    [verdict] = await processor(None).process([author_work("au1", 5)])
    assert verdict.code is ErrorCode.UNKNOWN_AGGREGATE_TYPE


def dependents_of(store: FakeFanout, author: str, ids: list[str], revision: int = 3) -> None:
    rows = store.tables.setdefault("article", {})
    for i in ids:
        rows[i] = {"id": i, "author_id": author, "revision": revision}


async def test_the_worker_appends_one_rebuild_per_dependent_and_finishes() -> None:
    store = FakeFanout()
    ids = [f"ar{n:03}" for n in range(20)]
    dependents_of(store, "au1", ids)
    dependents_of(store, "au2", ["other"])
    await store.record([FanoutTarget("author", "au1", "article", "author", 2)])
    metrics = Metrics()
    worker = FanoutWorker(store, registry(), SETTINGS, metrics=metrics.fanout, owner="w")
    assert await worker.drain() == 1
    assert store.events == [("article", i, 3) for i in ids]
    stats = await store.stats(["author"])
    assert (stats.pending, stats.done) == (0, 1)
    assert worker.appended == 20
    text = metrics.render().decode()
    assert "searchsync_fanout_rebuilds_total 20.0" in text


async def test_the_worker_keeps_to_its_rate_and_logs_progress(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FakeFanout()
    dependents_of(store, "au1", [f"ar{n:03}" for n in range(25)])
    await store.record([FanoutTarget("author", "au1", "article", "author", 2)])
    now = [0.0]
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    paced = FanoutSettings(appends_per_s=10.0, page_size=500, progress_every=10)
    worker = FanoutWorker(store, registry(), paced, owner="w", sleep=sleep, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="searchsync.ops.fanout"):
        await worker.drain()
    assert len(store.events) == 25
    # pages of 10 (one second of appends): the 2nd and the 3rd wait one second each
    assert slept == pytest.approx([1.0, 1.0])
    assert [r.message for r in caplog.records].count("fan-out progress") == 2
    assert "fan-out done" in [r.message for r in caplog.records]


async def test_a_job_of_a_lookup_no_longer_declared_is_dropped() -> None:
    store = FakeFanout()
    await store.record([FanoutTarget("author", "au1", "article", "editor", 2)])
    assert await FanoutWorker(store, registry(), SETTINGS, owner="w").drain() == 1
    assert store.events == [] and (await store.stats(["author"])).done == 1


class Crash(Exception):
    pass


class CrashingStore(FakeFanout):
    """Counts every call of the worker's; at the calls in `crash` it raises `Crash`, before the
    call took effect (False) or after (True); at the calls in `renames` the author is renamed
    first (a newer revision recorded, as the consumer would)."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        super().__init__(clock=clock)
        self.calls = 0
        self.crash: dict[int, bool] = {}
        self.renames: set[int] = set()
        self.revision = 1
        self.marks = [0]  # len(events) at each rename

    async def _before(self) -> None:
        self.calls += 1
        if self.calls in self.renames:
            self.revision += 1
            self.marks.append(len(self.events))
            await self.record([target(self.revision)])
        if self.crash.get(self.calls) is False:
            raise Crash

    def _after(self) -> None:
        if self.crash.get(self.calls) is True:
            raise Crash

    async def claim(
        self, owner: str, lease_s: float, referenced_types: Collection[str]
    ) -> FanoutJob | None:
        await self._before()
        job = await super().claim(owner, lease_s, referenced_types)
        self._after()
        return job

    async def dependents(
        self, table: str, via: str, referenced_id: str, after: str, limit: int
    ) -> list[Dependent]:
        await self._before()
        found = await super().dependents(table, via, referenced_id, after, limit)
        self._after()
        return found

    async def advance(
        self, job: FanoutJob, owner: str, lease_s: float, page: Sequence[Dependent]
    ) -> FanoutJob | None:
        await self._before()
        moved = await super().advance(job, owner, lease_s, page)
        self._after()
        return moved

    async def finish(self, job: FanoutJob, owner: str) -> bool:
        await self._before()
        done = await super().finish(job, owner)
        self._after()
        return done


def target(revision: int) -> FanoutTarget:
    return FanoutTarget("author", "au1", "article", "author", revision)


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(0, 40),
    page=st.integers(1, 9),
    crash=st.dictionaries(st.integers(1, 40), st.booleans(), max_size=5),
    renames=st.sets(st.integers(1, 40), max_size=2),
)
def test_a_crash_at_any_point_loses_no_dependent(
    count: int, page: int, crash: dict[int, bool], renames: set[int]
) -> None:
    """Workers crash at any store call (before or after it took effect) and a new one takes over
    once the lease runs out; renames come between any two calls. In the end the job is done and
    every dependent has a REBUILD appended after the last rename was recorded."""
    asyncio.run(_crash_and_resume(count, page, crash, renames))


async def _crash_and_resume(
    count: int, page: int, crash: dict[int, bool], renames: set[int]
) -> None:
    wall = [datetime(2026, 1, 1, tzinfo=UTC)]
    store = CrashingStore(lambda: wall[0])
    store.crash, store.renames = crash, renames
    ids = [f"ar{n:03}" for n in range(count)]
    dependents_of(store, "au1", ids)
    dependents_of(store, "au2", ["not-mine"])
    await store.record([target(1)])
    s = FanoutSettings(appends_per_s=1_000_000.0, page_size=page, lease_s=60.0)
    for n in range(len(crash) + 1):
        worker = FanoutWorker(store, registry(), s, owner=f"w{n}")
        try:
            while await worker.run_once(asyncio.Event()):
                pass
            break
        except Crash:
            wall[0] += timedelta(seconds=61)  # the crashed worker's lease runs out
    store.crash = {}  # crashes not reached yet: a last worker sees the end
    while await FanoutWorker(store, registry(), s, owner="last").run_once(asyncio.Event()):
        pass
    assert {e[1] for e in store.events[store.marks[-1] :]} >= set(ids)
    assert {e[1] for e in store.events} <= set(ids)
    assert (await store.stats(["author"])).pending == 0


def test_status_shows_pending_and_done_and_warns_of_a_job_that_does_not_move() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    stats = FanoutStats(pending=2, done=5, appended_pending=1234, oldest_pending=None)
    fine = fanout_section(stats, stuck_after_s=300, now=now)
    assert fine.healthy and not fine.warnings
    assert render(StatusReport((fine,)))[1:] == [
        "fanout: ok",
        "  2 pending (1234 REBUILDs appended so far), 5 done",
    ]
    stuck = replace(stats, oldest_pending=(now - timedelta(seconds=400)).replace(tzinfo=None))
    section = fanout_section(stuck, stuck_after_s=300, now=now)
    assert section.healthy and section.data["oldest_untouched_seconds"] == 400
    assert "has not moved for 400s" in section.warnings[0]
