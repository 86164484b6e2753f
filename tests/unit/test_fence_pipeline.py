"""The schema fence in the pipeline (docs/design.md, invariant 11): a consumer whose projector's
schema version differs from the write index's writes nothing there, dead-letters nothing and
commits nothing past what it wrote; a swap back unfences it and it catches up."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pipeline_fakes import (
    TOPIC,
    FakeDlq,
    FakeIntake,
    PageTruth,
    event_value,
    page_row,
    raw,
    wait_until,
)
from searchsync.config import KafkaSettings, PipelineSettings, Settings
from searchsync.dlq.record import DlqBudget
from searchsync.observability.metrics import Metrics
from searchsync.projection import default_registry
from searchsync.search.sink import Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.pipeline import Pipeline
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy
from searchsync.types import TopicPartition

from tests.fakes.projection_state import FakeProjectionState
from tests.fakes.search_index import InMemoryIndex

ALIAS = "wiki_page"
V1, V2 = "wiki_page_v1", "wiki_page_v2"
TP0: TopicPartition = (TOPIC, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FencedHarness:
    """A pipeline over in-memory ports, with a schema fence on a clock the test moves."""

    def __init__(self) -> None:
        self.registry = default_registry()
        self.projector = self.registry.get("wiki_page")
        self.own = self.projector.schema_version
        self.truth = PageTruth()
        self.index = InMemoryIndex()
        self.metrics = Metrics()
        self.dlq = FakeDlq()
        self.intake = FakeIntake()
        self.clock = Clock()
        self.fence = SchemaFence(
            self.index.admin, interval_s=5.0, clock=self.clock, observer=self.metrics
        )
        self.pipeline = Pipeline(
            processor=Processor(
                registry=self.registry,
                truth=self.truth,
                sink=Sink(self.index, observer=self.metrics),
                alias_for=lambda t: t,
                fence=self.fence,
            ),
            dlq=self.dlq,
            budget=DlqBudget(max_ratio=1.0, window=1000, max_consecutive=50),
            state=FakeProjectionState(),
            metrics=self.metrics,
            retry=RetryPolicy(
                base_delay=0.001, max_delay=0.01, max_attempts=3, jitter=0.5, rng=random.Random(7)
            ),
            settings=Settings(
                pipeline=PipelineSettings(
                    max_event_bytes=2048,
                    commit_interval_s=0.0,
                    lag_poll_interval_s=0.0,
                    max_in_flight_keys=100,
                    max_queued_events=10_000,
                ),
                kafka=KafkaSettings(
                    group_id="searchsync-test", poll_batch_size=50, poll_timeout_s=0.002
                ),
            ),
            known_types=self.registry.types(),
            fence=self.fence,
        )
        self.offset = 0

    async def indices(self, v2_mapping: dict[str, Any] | None = None) -> None:
        """`V1` (this projector's version) behind the alias, and `V2` (the next version)."""
        meta = {"projection_schema_version": self.own}
        await self.index.admin.create_index(V1, self.projector.mapping, meta=meta, alias=ALIAS)
        body = self.projector.mapping if v2_mapping is None else v2_mapping
        meta2 = {"projection_schema_version": self.own + 1}
        await self.index.admin.create_index(V2, body, meta=meta2)

    def write_pages(self, *ids: str, revision: int = 1) -> None:
        for page_id in ids:
            self.truth.put_page(page_row(page_id, revision))
            self.intake.feed([raw(self.offset, event_value(page_id, revision))])
            self.offset += 1

    def docs(self, index: str) -> set[str]:
        return set(self.index.indices[index].docs)

    def fenced_gauge(self) -> float | None:
        return self.metrics.registry.get_sample_value("searchsync_schema_fenced", {"alias": ALIAS})

    async def loops(self, n: int = 20) -> None:
        target = self.intake.consume_calls + n
        await wait_until(lambda: self.intake.consume_calls >= target, f"{n} more loops")

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.pipeline.assigned([TP0])
        stop = asyncio.Event()
        task = asyncio.create_task(self.pipeline.run(self.intake, stop, drain_deadline_s=2))
        try:
            yield
        finally:
            stop.set()
            await task


async def test_fenced_after_a_swap_writes_nothing_and_resumes_after_a_swap_back() -> None:
    h = FencedHarness()
    await h.indices()
    h.write_pages("p1", "p2")
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 2, "the first pages committed")
        assert h.pipeline.health()[0] and h.fenced_gauge() == 0

        await h.index.admin.swap_alias(ALIAS, old=V1, new=V2)
        h.clock.now += 5.0  # the fence's timer is due: the loop re-checks beside its work
        await wait_until(lambda: h.fence.holding(), "the consumer fenced")
        h.write_pages("p3", "p4", "p5")
        await wait_until(lambda: h.intake.paused == {TP0}, "intake paused")
        await h.loops()  # the fenced works went round several times meanwhile

        assert h.docs(V2) == set()  # nothing of the old projector in the new index
        assert h.dlq.records == [] and h.dlq.send_calls == 0
        assert h.intake.max_committed(TP0) == 2  # never past what it wrote
        ready, reasons = h.pipeline.health()
        assert not ready
        assert any(ALIAS in r and str(h.own) in r and str(h.own + 1) in r for r in reasons)
        assert h.fenced_gauge() == 1

        await h.index.admin.swap_alias(ALIAS, old=V2, new=V1)  # the rollback
        h.clock.now += 5.0
        await wait_until(lambda: h.intake.committed.get(TP0) == 5, "caught up after unfencing")
        await wait_until(lambda: h.intake.paused == set(), "intake resumed")
    assert h.docs(V1) == {"p1", "p2", "p3", "p4", "p5"} and h.docs(V2) == set()
    assert h.dlq.records == []
    assert h.fenced_gauge() == 0
    assert h.pipeline.health() == (True, [])


async def test_a_write_error_re_checks_the_fence_at_once_and_dead_letters_nothing() -> None:
    """The swapped-in index refuses the old shape (another mapping: MAPPING_ERROR) before the
    timer is due: the failed write re-checks the fence, and the work is held, not dead-lettered."""
    h = FencedHarness()
    strict_other = {"mappings": {"dynamic": "strict", "properties": {"id": {"type": "keyword"}}}}
    await h.indices(v2_mapping=strict_other)
    h.write_pages("p1")
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "the first page committed")
        await h.index.admin.swap_alias(ALIAS, old=V1, new=V2)
        assert not h.fence.due()  # the clock does not move: only the write error re-checks
        h.write_pages("p2")
        await wait_until(lambda: h.fence.holding(), "fenced by the failed write")
        await h.loops()
        assert h.docs(V2) == set()
        assert h.dlq.records == [] and h.dlq.send_calls == 0
        assert h.intake.max_committed(TP0) == 1

        await h.index.admin.swap_alias(ALIAS, old=V2, new=V1)
        h.clock.now += 5.0
        await wait_until(lambda: h.intake.committed.get(TP0) == 2, "caught up after unfencing")
    assert h.docs(V1) == {"p1", "p2"}
    assert h.dlq.records == []


async def test_a_consumer_of_the_new_version_is_not_fenced_by_the_new_index() -> None:
    h = FencedHarness()
    meta = {"projection_schema_version": h.own}
    await h.index.admin.create_index(
        V1, h.projector.mapping, meta={"projection_schema_version": h.own - 1}, alias=ALIAS
    )
    await h.index.admin.create_index(V2, h.projector.mapping, meta=meta)
    await h.index.admin.swap_alias(ALIAS, old=V1, new=V2)
    h.write_pages("p1")
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "written")
    assert h.docs(V2) == {"p1"} and h.docs(V1) == set()
