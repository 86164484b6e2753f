"""The repair wheel over the in-memory truth and index: findings, settle, heal, generations,
epochs, scheduling (docs/design.md, "Repair")."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pipeline_fakes import PageTruth, page_row
from searchsync.config import RepairSettings
from searchsync.ops.repair.generations import BucketState, choose, ewma, priority
from searchsync.ops.repair.load import Limits
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.reader import bucket_range
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import default_registry, sync_hash
from searchsync.search.sink import IndexOp, Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

from tests.fakes.outbox import FakeOutbox
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc
from tests.fakes.wheel_state import FakeWheelState

ALIAS = "wiki_page"
NOW = datetime(2026, 7, 20, tzinfo=UTC)
WINDOW = timedelta(days=7)  # the tombstone window: a soft delete older than NOW - WINDOW is purged

DELETION_KINDS = frozenset({FindingKind.MISSING, FindingKind.ORPHAN})  # invariant 13


class World:
    def __init__(self, m: int = 4) -> None:
        self.registry = default_registry()
        self.projector = self.registry.get("wiki_page")
        self.truth = PageTruth()
        self.index = InMemoryIndex()
        self.index.given_index("wiki_page_v1", self.projector.mapping)
        self.index.given_alias(ALIAS, "wiki_page_v1")
        self.docs = self.index.indices["wiki_page_v1"].docs
        self.state = FakeWheelState()
        self.outbox = FakeOutbox()
        self.index_side = self.index
        self.on_settle: Any = None
        self.m = m

    def wheel(
        self,
        *,
        dry_run: bool = False,
        m: int | None = None,
        limits: Limits | None = None,
        batch_size: int = 100,
        span_buckets: int = 32,
        settle: Callable[[float], Awaitable[None]] | None = None,
    ) -> Wheel:
        async def on_settle(_: float) -> None:
            if self.on_settle is not None:
                self.on_settle()

        sleep = settle or on_settle
        settings = RepairSettings(
            bucket_count=m or self.m, page_size=3, page_min=2, content_share=1.0, settle_s=5.0
        )
        return Wheel(
            projectors=[self.projector],
            alias_for=lambda t: t,
            truth=self.truth,
            index=self.index_side,
            state=self.state,
            healer=Healer(
                self.outbox,
                appends_per_s=1e6,
                dry_run=dry_run,
                sleep=sleep,
                guard=None if limits is None else limits.lag,
                batch_size=batch_size,
            ),
            settings=settings,
            tombstone_minimum=WINDOW,
            span_buckets=span_buckets,
            clock=lambda: NOW,
            sleep=sleep,
            limits=limits,
        )

    def page(self, i: str, revision: int = 2, **kw: Any) -> dict[str, Any]:
        row = page_row(i, revision, **kw)
        self.truth.put_page(row)
        doc = self.projector.project(row)
        self.docs[i] = StoredDoc(revision, dict(doc.body))
        return row

    async def deliver(self) -> None:
        """What the consumer does with the appended REBUILDs (and the raised floors)."""
        processor = Processor(
            registry=self.registry,
            truth=self.truth,
            sink=Sink(self.index),
            alias_for=lambda t: t,
            fence=SchemaFence(self.index.admin, interval_s=60.0),
        )
        for (t, i), floor in self.outbox.floors.items():
            self.truth.put_floor(t, i, floor)
        works = [
            Work(
                Key(t, i),
                (ThinEvent(f"r{n}", t, i, Operation.REBUILD, r),),
                (RawMessage("o", 0, n),),
                1,
            )
            for n, (t, i, r) in enumerate(self.outbox.events)
        ]
        for verdict in await processor.process(works):
            assert verdict.finished, verdict
        self.outbox.events.clear()


def inject_every_kind(w: World) -> dict[str, FindingKind]:
    for n in range(20):
        w.page(f"ok{n:02d}")
    w.truth.put_page(page_row("missing", 2))  # no document
    w.page("stale", 3)
    w.docs["stale"] = StoredDoc(2, dict(w.projector.project(page_row("stale", 2)).body))
    w.page("orphan")
    w.truth.remove("orphan", table="wiki_page")  # hard-deleted without an event
    w.page("edited")
    w.docs["edited"] = StoredDoc(2, {**w.docs["edited"].body, "title": "edited in ES"})
    w.page("oldschema")
    w.docs["oldschema"] = StoredDoc(2, {**w.docs["oldschema"].body, "projection_schema_version": 1})
    w.page("flag")
    w.docs["flag"] = StoredDoc(2, {**w.docs["flag"].body, "is_deleted": True})
    w.truth.put_page(page_row("softdel", 4, deleted_at=datetime(2026, 7, 1)))  # purged tombstone
    w.truth.put_page(page_row("softnew", 4, deleted_at=datetime(2026, 7, 18)))  # its tombstone lost
    return {
        "missing": FindingKind.MISSING,
        "softnew": FindingKind.MISSING,
        "stale": FindingKind.STALE,
        "orphan": FindingKind.ORPHAN,
        "edited": FindingKind.CONTENT_DRIFT,
        "oldschema": FindingKind.SCHEMA_STALE,
        "flag": FindingKind.DELETED_FLAG,
    }


async def test_one_rotation_finds_every_kind_and_the_consumer_heals_them() -> None:
    w = World()
    expected = inject_every_kind(w)
    report = await w.wheel().rotation()
    found = {f.id: f.kind for b in report.buckets for f in b.findings}
    assert found == expected
    assert report.interrupted == 0 and len(report.buckets) == w.m
    assert sorted(i for _, i, _ in w.outbox.events) == sorted(expected)
    assert w.outbox.floors == {("wiki_page", "orphan"): 3}
    await w.deliver()
    for i, row in [(i, w.truth.tables["wiki_page"].get(i)) for i in expected]:
        if row is None:
            assert w.docs[i].version == 3 and w.docs[i].body["is_deleted"] is True
        else:
            assert w.docs[i].body == w.projector.project(row).body
    again = await w.wheel().rotation()
    assert again.counts() == {k.value: 0 for k in FindingKind}


async def test_dry_run_reports_but_appends_nothing() -> None:
    w = World()
    expected = inject_every_kind(w)
    report = await w.wheel(dry_run=True).rotation()
    assert sum(report.counts().values()) == len(expected)
    assert w.outbox.events == [] and w.outbox.floors == {}


async def test_a_finding_that_settles_is_not_reported() -> None:
    w = World()
    w.page("p1", 3)
    w.docs["p1"] = StoredDoc(2, dict(w.projector.project(page_row("p1", 2)).body))

    def consumer_catches_up() -> None:
        w.docs["p1"] = StoredDoc(3, dict(w.projector.project(page_row("p1", 3)).body))

    w.on_settle = consumer_catches_up
    report = await w.wheel().rotation()
    assert sum(b.candidates for b in report.buckets) == 1
    assert report.counts()[FindingKind.STALE.value] == 0 and w.outbox.events == []


async def test_an_interrupted_scan_reports_nothing_and_restarts_the_bucket() -> None:
    w = World(m=1)
    expected = inject_every_kind(w)
    w.index_side.fail_on_page = 2
    report = await w.wheel().rotation()
    assert report.interrupted == 1 and report.counts() == {k.value: 0 for k in FindingKind}
    [state] = (await w.state.buckets(report.epochs["wiki_page"])).values()
    assert (state.generation, state.running_generation) == (0, 1)
    w.index_side.fail_on_page = None
    again = await w.wheel().rotation()
    assert again.buckets[0].generation == 1 and sum(again.counts().values()) == len(expected)
    [state] = (await w.state.buckets(again.epochs["wiki_page"])).values()
    assert (state.generation, state.running_generation) == (1, None)


@given(fail_on=st.integers(1, 12), m=st.integers(1, 5))
def test_an_interrupted_scan_never_yields_deletion_findings(fail_on: int, m: int) -> None:
    async def run() -> None:
        w = World(m=m)
        inject_every_kind(w)
        w.index_side.fail_on_page = fail_on
        report = await w.wheel().rotation()
        for b in report.buckets:
            if b.interrupted is not None:
                assert b.findings == []
        assert not any(
            f.kind in DELETION_KINDS for b in report.buckets if b.interrupted for f in b.findings
        )

    asyncio.run(run())


async def test_changing_m_starts_a_new_epoch_without_false_findings() -> None:
    w = World(m=4)
    for n in range(30):
        w.page(f"p{n}")
    first = await w.wheel().rotation()
    second = await w.wheel(m=7).rotation()
    assert first.epochs["wiki_page"].epoch == 1 and second.epochs["wiki_page"].epoch == 2
    assert second.new_epochs == ["wiki_page"] and len(second.buckets) == 7
    assert sum(second.counts().values()) == 0
    assert sum(b.rows for b in second.buckets) == 30 == sum(b.docs for b in second.buckets)


# -- buckets, canonical encoding ---------------------------------------------------------


@given(m=st.integers(1, 3000))
def test_bucket_ranges_tile_the_hash_space(m: int) -> None:
    edges = [bucket_range(b, m) for b in range(m)]
    assert edges[0][0] == 0 and edges[-1][1] == 2**32
    assert all(a[1] == b[0] for a, b in itertools.pairwise(edges))


@given(t=st.sampled_from(["wiki_page", "article"]), i=st.text(min_size=1, max_size=20))
def test_key_hash_is_stable(t: str, i: str) -> None:
    assert sync_hash(t, i) == sync_hash(t, i) and 0 <= sync_hash(t, i) < 2**32


# -- scheduling and chunks ---------------------------------------------------------------


def test_a_bucket_past_max_staleness_is_chosen_first_whatever_its_score() -> None:
    policy = RepairSettings(slo_s=100, max_staleness_s=1000)
    hot = BucketState(0, last_complete_at=NOW - timedelta(seconds=500), drift_ewma=5.0, cost_s=0.1)
    cold = BucketState(1, last_complete_at=NOW - timedelta(seconds=1001), drift_ewma=0.0, cost_s=9)
    [first, second] = choose([hot, cold], NOW, policy, 2)
    assert (first.bucket, first.forced, second.bucket) == (1, True, 0)
    assert second.score > first.score
    assert "score=" in first.explain() and "forced" in first.explain()


@given(a=st.floats(0, 1e5), b=st.floats(0, 1e5), lam=st.floats(0, 10), cost=st.floats(0.01, 100))
def test_priority_grows_with_age(a: float, b: float, lam: float, cost: float) -> None:
    lo, hi = sorted((a, b))
    assert priority(lo, 60, 2, lam, 0.01, cost) <= priority(hi, 60, 2, lam, 0.01, cost)
    assert priority(hi, 60, 2, 0.0, 0.01, cost) >= 0


@given(prev=st.floats(0, 1), x=st.floats(0, 1), alpha=st.floats(0, 1))
def test_ewma_stays_between_its_inputs(prev: float, x: float, alpha: float) -> None:
    v = ewma(prev, x, alpha)
    assert min(prev, x) - 1e-12 <= v <= max(prev, x) + 1e-12


def test_ops_are_external_for_heals() -> None:
    """The repair never builds an index op itself: healing is outbox appends only."""
    import searchsync.ops.repair.span as span
    import searchsync.ops.repair.wheel as wheel

    for module in (span, wheel):
        assert not any(v is IndexOp for v in vars(module).values())
