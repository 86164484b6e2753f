"""The fan-out of related aggregates over the in-memory store (tests/fakes/fanout.py): the
consumer records a job before an event of a referenced type finishes, and the worker turns every
job into one REBUILD per dependent, paced, resumable after a crash at any point."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from pipeline_fakes import TOPIC, FakeDlq, FakeIntake, event_value, raw, wait_until
from searchsync.cli.status import render
from searchsync.config import (
    FanoutSettings,
    KafkaSettings,
    PipelineSettings,
    Settings,
    load_settings,
)
from searchsync.dlq.record import DlqBudget
from searchsync.errors import ConfigError, ErrorCode, TransientError
from searchsync.examples import article
from searchsync.mysql.fanout import FanoutStats, FanoutTarget
from searchsync.observability.metrics import Metrics
from searchsync.ops.fanout_worker import _YIELD_POLL_S, FanoutWorker
from searchsync.ops.status import StatusReport
from searchsync.ops.status_probes import fanout_section
from searchsync.projection import ProjectorRegistry, default_registry
from searchsync.projection.references import dependents, event_types, referenced_types, routes
from searchsync.search.sink import OutcomeKind, Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.pipeline import Pipeline
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

from tests.fakes.fanout import FakeFanout, drain
from tests.fakes.projection_state import FakeProjectionState
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.truth import FakeTruth

SETTINGS = FanoutSettings(appends_per_s=1_000_000.0, page_size=7, progress_every=10)


def registry() -> ProjectorRegistry:
    r = default_registry()
    r.register(article.projector())
    return r


def author_work(author_id: str, *revisions: int) -> Work:
    events = tuple(ThinEvent(f"e{r}", "author", author_id, Operation.UPSERT, r) for r in revisions)
    positions = tuple(RawMessage("t", 0, n) for n in range(len(revisions)))
    return Work(Key("author", author_id), events, positions, attempts=1)


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
    assert routes(r) == (("author", "article", "author"),)
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
    worker = FanoutWorker(store, registry(), SETTINGS, metrics=metrics, owner="w")
    assert await drain(worker) == 1
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
    with caplog.at_level(logging.INFO, logger="searchsync.ops.fanout_worker"):
        await drain(worker)
    assert len(store.events) == 25
    # pages of 10 (one second of appends): the 2nd and the 3rd wait one second each
    assert slept == pytest.approx([1.0, 1.0])
    assert [r.message for r in caplog.records].count("fan-out progress") == 2
    assert "fan-out done" in [r.message for r in caplog.records]


async def test_the_worker_yields_while_the_members_live_events_wait() -> None:
    """No page is appended while the member's oldest unfinished event is older than
    `yield_above_s`; appends go on once the member has caught up (live writes first)."""
    store = FakeFanout()
    dependents_of(store, "au1", [f"ar{n:03}" for n in range(12)])
    await store.record([FanoutTarget("author", "au1", "article", "author", 2)])
    ages = [5.0, 3.0, 1.5, 0.2]  # seconds the member's oldest unfinished event waited
    seen: list[int] = []

    def live_age() -> float:
        seen.append(len(store.events))
        return ages.pop(0) if ages else 0.0

    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)

    settings = FanoutSettings(appends_per_s=1e6, page_size=6, yield_above_s=1.0)
    worker = FanoutWorker(store, registry(), settings, live_age=live_age, owner="w", sleep=sleep)
    assert await drain(worker) == 1
    assert slept.count(_YIELD_POLL_S) == 3  # 5.0, 3.0 and 1.5 are above 1.0
    assert seen[:4] == [0, 0, 0, 0]  # nothing appended until the age dropped to 0.2
    assert len(store.events) == 12
    never = FanoutSettings(appends_per_s=1e6, page_size=6, yield_above_s=0.0)
    dependents_of(store, "au2", ["x1", "x2"])
    await store.record([FanoutTarget("author", "au2", "article", "author", 2)])
    off = FanoutWorker(store, registry(), never, live_age=lambda: 99.0, owner="w2", sleep=sleep)
    slept.clear()
    assert await drain(off) == 1 and _YIELD_POLL_S not in slept


def test_the_fanout_defaults_and_the_yield_setting_are_read_and_checked() -> None:
    defaults = load_settings({}).fanout
    assert (defaults.appends_per_s, defaults.yield_above_s) == (2_000.0, 5.0)
    assert load_settings({"SEARCHSYNC_FANOUT_YIELD_ABOVE_S": "0"}).fanout.yield_above_s == 0.0
    with pytest.raises(ConfigError) as bad:
        load_settings({"SEARCHSYNC_FANOUT_YIELD_ABOVE_S": "-1"})
    assert bad.value.key == "fanout.yield_above_s"


async def test_a_job_of_a_lookup_this_registry_lacks_is_left_to_one_that_has_it() -> None:
    store = FakeFanout()
    await store.record([FanoutTarget("author", "au1", "article", "editor", 2)])
    assert await drain(FanoutWorker(store, registry(), SETTINGS, owner="w")) == 0
    assert store.events == [] and (await store.stats(["author"])).pending == 1


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


class GatedRecord(FakeFanout):
    """Its records fail (a deadlock) until `durable` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.durable = False
        self.refused = 0

    async def record(self, targets: Sequence[FanoutTarget]) -> None:
        if not self.durable:
            self.refused += 1
            raise TransientError(ErrorCode.MYSQL_DEADLOCK, "deadlock")
        await super().record(targets)


async def test_the_offset_of_a_referenced_event_commits_only_once_its_job_is_durable() -> None:
    store, index, metrics = GatedRecord(), InMemoryIndex(), Metrics()
    fence = SchemaFence(index.admin, interval_s=60.0)
    r = registry()
    processor = Processor(
        registry=r,
        truth=FakeTruth(),
        sink=Sink(index),
        alias_for=lambda t: t,
        fence=fence,
        fanout=store,
    )
    intake = FakeIntake()
    pipeline = Pipeline(
        processor=processor,
        dlq=FakeDlq(),
        budget=DlqBudget(max_ratio=1.0, window=1000, max_consecutive=50),
        state=FakeProjectionState(),
        metrics=metrics,
        retry=RetryPolicy(
            base_delay=0.001, max_delay=0.01, max_attempts=1000, jitter=0.5, rng=random.Random(1)
        ),
        settings=Settings(
            pipeline=PipelineSettings(commit_interval_s=0.0, lag_poll_interval_s=0.0),
            kafka=KafkaSettings(group_id="g", poll_batch_size=50, poll_timeout_s=0.002),
        ),
        known_types=event_types(r),
        fence=fence,
    )
    tp = (TOPIC, 0)
    intake.feed([raw(0, event_value("au1", 3, aggregate_type="author"))])
    pipeline.assigned([tp])
    stop = asyncio.Event()
    task = asyncio.create_task(pipeline.run(intake, stop, drain_deadline_s=2))
    try:
        await wait_until(lambda: store.refused >= 3, "the record refused a few times")
        assert intake.max_committed(tp) in (None, 0)  # nothing past the event
        store.durable = True
        await wait_until(lambda: intake.committed.get(tp) == 1, "the event's offset committed")
        [job] = store.jobs.values()
        assert job.target == FanoutTarget("author", "au1", "article", "author", 3)
    finally:
        stop.set()
        await task


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"SEARCHSYNC_FANOUT_APPENDS_PER_S": "0"}, "fanout.appends_per_s"),
        ({"SEARCHSYNC_FANOUT_PAGE_SIZE": "many"}, "fanout.page_size"),
        ({"SEARCHSYNC_FANOUT_ENABLED": "perhaps"}, "fanout.enabled"),
        (
            {"SEARCHSYNC_FANOUT_LEASE_S": "2", "SEARCHSYNC_FANOUT_POLL_INTERVAL_S": "5"},
            "fanout.lease_s",
        ),
    ],
)
def test_a_bad_fanout_setting_stops_start_up_naming_its_key(env: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(env)
    assert key in str(raised.value)


def test_the_fanout_settings_are_read_from_the_environment() -> None:
    s = load_settings(
        {"SEARCHSYNC_FANOUT_APPENDS_PER_S": "50", "SEARCHSYNC_FANOUT_ENABLED": "false"}
    )
    assert (s.fanout.appends_per_s, s.fanout.enabled, s.fanout.page_size) == (50.0, False, 500)
