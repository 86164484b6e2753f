"""The pipeline end to end over in-memory ports: apply, coalesce, dead-letter, commit, revoke.

Each test runs `Pipeline.run` as a task, waits on a condition with a deadline, then stops it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_fakes import (
    TOPIC,
    FakeDlq,
    FakeIntake,
    PageTruth,
    RaisingProjector,
    event_value,
    page_row,
    raw,
    wait_until,
)
from searchsync.config import KafkaSettings, PipelineSettings, Settings
from searchsync.dlq.record import DlqBudget
from searchsync.errors import DlqBudgetExceeded, ErrorCode, TransientError
from searchsync.observability.metrics import Metrics
from searchsync.projection import Projector, ProjectorRegistry, Row, default_registry, wiki_page
from searchsync.search.sink import IndexOp, Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.pipeline import Pipeline
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.stream.work_state import OUTAGE_RETRY_CAP_S
from searchsync.types import Operation, TopicPartition

from tests.fakes.projection_state import FakeProjectionState
from tests.fakes.search_index import InMemoryIndex

ALIAS = "wiki_page"
TP0: TopicPartition = (TOPIC, 0)
TP1: TopicPartition = (TOPIC, 1)


class Harness:
    """Every port of one pipeline, in memory."""

    def __init__(
        self,
        *,
        max_attempts: int = 5,
        max_consecutive_dead: int = 50,
        per_consume: int | None = None,
        commit_interval_s: float = 0.0,
        max_in_flight_keys: int = 100,
        max_queued_events: int = 10_000,
        index: InMemoryIndex | None = None,
        build: Callable[[Row], dict[str, Any]] | None = None,
        processor: type[Processor] = Processor,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = default_registry()
        if build is not None:  # the wiki_page projector with another build()
            self.registry = ProjectorRegistry()
            self.registry.register(replace(wiki_page.projector(), build=build))
        self.projector: Projector = self.registry.get("wiki_page")
        self.truth = PageTruth()
        self.index = index if index is not None else InMemoryIndex()
        self.index.given_index("wiki_page_v1", self.projector.mapping)
        self.index.given_alias(ALIAS, "wiki_page_v1")
        self.metrics = Metrics()
        self.state = FakeProjectionState()
        self.dlq = FakeDlq()
        self.intake = FakeIntake(per_consume=per_consume)
        self.retry = retry or RetryPolicy(
            base_delay=0.001,
            max_delay=0.01,
            max_attempts=max_attempts,
            jitter=0.5,
            rng=random.Random(1234),
        )
        self.fence = SchemaFence(self.index.admin, interval_s=60.0)
        self.pipeline = Pipeline(
            processor=processor(
                registry=self.registry,
                truth=self.truth,
                sink=Sink(self.index, observer=self.metrics),
                alias_for=lambda t: t,
                fence=self.fence,
            ),
            dlq=self.dlq,
            budget=DlqBudget(max_ratio=1.0, window=1000, max_consecutive=max_consecutive_dead),
            state=self.state,
            metrics=self.metrics,
            retry=self.retry,
            settings=Settings(
                pipeline=PipelineSettings(
                    max_event_bytes=2048,
                    commit_interval_s=commit_interval_s,
                    lag_poll_interval_s=0.0,
                    shutdown_deadline_s=5.0,  # the revoke drain: min(10 s, the shutdown deadline)
                    max_in_flight_keys=max_in_flight_keys,
                    max_queued_events=max_queued_events,
                ),
                kafka=KafkaSettings(
                    group_id="searchsync-test", poll_batch_size=50, poll_timeout_s=0.002
                ),
            ),
            known_types=self.registry.types(),
            fence=self.fence,
            clock=clock,
        )

    def version(self, doc_id: str) -> int | None:
        stored = self.index.get(ALIAS, doc_id)
        return None if stored is None else stored.version

    def body(self, doc_id: str) -> dict[str, Any] | None:
        stored = self.index.get(ALIAS, doc_id)
        return None if stored is None else stored.body

    def sample(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value

    async def write_doc(self, row: dict[str, Any]) -> None:
        """Put a document in the index directly, as an earlier writer would have."""
        [result] = await self.index.bulk_index(
            [IndexOp.from_document(ALIAS, self.projector.project(row))]
        )
        assert result.status in (200, 201)

    async def loops(self, n: int = 3) -> None:
        """Wait until the run loop went round `n` more times (so commits were attempted)."""
        target = self.intake.consume_calls + n
        await wait_until(lambda: self.intake.consume_calls >= target, f"{n} more loops")

    @asynccontextmanager
    async def running(self, *tps: TopicPartition) -> AsyncIterator[asyncio.Task[None]]:
        """Run the pipeline on `tps` (default: partition 0) until the block ends."""
        self.pipeline.assigned(list(tps) or [TP0])
        stop = asyncio.Event()
        task = asyncio.create_task(self.pipeline.run(self.intake, stop, drain_deadline_s=2))
        try:
            yield task
        finally:
            stop.set()
            if not task.done():
                await task


def good(offset: int, aggregate_id: str, revision: int, **kw: Any) -> Any:
    return raw(offset, event_value(aggregate_id, revision), **kw)


# -- 1. the happy path ---------------------------------------------------------------------------


async def test_events_of_several_keys_are_projected_committed_and_recorded() -> None:
    h = Harness()
    rows = {f"p{i}": page_row(f"p{i}", i + 1) for i in range(6)}
    for row in rows.values():
        h.truth.put_page(row)
    h.intake.feed(good(o, pid, row["revision"]) for o, (pid, row) in enumerate(rows.items()))
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 6, "commit of all 6 offsets")
    for pid, row in rows.items():
        expected = h.projector.project(row)
        assert h.body(pid) == expected.body
        assert h.version(pid) == row["revision"]
        state = h.state.states[("wiki_page", pid)]
        assert state.indexed_revision == row["revision"]
        assert state.projection_hash == expected.projection_hash
    assert h.dlq.records == []
    assert h.intake.max_committed(TP0) == 6
    assert h.sample("searchsync_commits_total", result="ok") >= 1


# -- 2. coalescing -------------------------------------------------------------------------------


async def test_a_hot_key_is_coalesced_into_few_writes() -> None:
    h = Harness(per_consume=10)
    h.truth.put_page(page_row("hot", 100))
    h.intake.feed(good(o, "hot", o + 1) for o in range(100))
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 100, "commit of 100 offsets")
    writes = sum(h.index.bulk_calls)  # one key: every op is for "hot"
    assert 1 <= writes <= 20, h.index.bulk_calls
    assert h.version("hot") == 100
    assert h.body("hot") == h.projector.project(page_row("hot", 100)).body
    superseded = h.sample(
        "searchsync_event_outcomes_total", aggregate_type="wiki_page", result="superseded"
    )
    assert superseded >= 80


# -- 3. contiguous-prefix commit -----------------------------------------------------------------


async def test_commit_waits_for_the_dead_letter_acknowledgement() -> None:
    h = Harness()
    for pid in ("a", "b", "c", "d"):
        h.truth.put_page(page_row(pid, 1))
    poison = b"{this is not json"
    h.dlq.hold()
    h.intake.feed(
        [
            good(0, "a", 1),
            good(1, "b", 1),
            raw(2, poison, key=b"poison-key"),
            good(3, "c", 1),
            good(4, "d", 1),
        ]
    )
    async with h.running():
        await wait_until(lambda: h.version("c") == 1 and h.version("d") == 1, "3 and 4 applied")
        await wait_until(lambda: len(h.dlq.waiting) == 1, "the dead letter is being sent")
        await h.loops()
        assert h.intake.committed.get(TP0) == 2
        assert h.intake.max_committed(TP0) == 2  # never past the unacknowledged offset
        h.dlq.release()
        await wait_until(lambda: h.intake.committed.get(TP0) == 5, "commit reaches 5")
    [record] = h.dlq.records
    assert record.last_error_code == "BAD_JSON"
    assert (record.original_topic, record.original_partition, record.original_offset) == (
        TOPIC,
        0,
        2,
    )
    assert record.payload == poison
    assert record.original_key == b"poison-key"
    assert record.consumer_group == "searchsync-test"
    assert h.dlq.keys == [b"poison-key"]


async def test_a_dead_letter_the_broker_refuses_is_sent_again() -> None:
    h = Harness()
    h.dlq.fail(3)
    h.intake.feed([raw(0, b"[]")])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "commit after the ack")
    assert h.dlq.send_calls == 4
    assert [r.last_error_code for r in h.dlq.records] == ["BAD_JSON"]


async def test_a_refused_commit_is_tried_again() -> None:
    h = Harness()
    h.truth.put_page(page_row("a", 1))
    h.intake.fail_commits = True
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: any(c.get(TP0) == 1 for c in h.intake.commits), "a commit")
        assert TP0 not in h.intake.committed
        h.intake.fail_commits = False
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "the commit accepted")
    assert h.sample("searchsync_commits_total", result="failed") >= 1


# -- 4. poison variants --------------------------------------------------------------------------


async def test_poison_messages_are_dead_lettered_and_later_events_applied() -> None:
    h = Harness()
    h.truth.put_page(page_row("after", 1))
    poisons = {
        0: (b"\xff not json", "BAD_JSON"),
        1: (event_value("x", 1, aggregate_type="unknown_type"), "UNKNOWN_AGGREGATE_TYPE"),
        2: (event_value("x", 0), "BAD_REVISION"),
        3: (event_value("x", 1) + b" " * 2048, "TOO_LARGE"),
        4: (None, "EMPTY"),
    }
    assert len(poisons[3][0] or b"") > 2048
    h.intake.feed(raw(o, value) for o, (value, _) in poisons.items())
    h.intake.feed([good(5, "after", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 6, "commit past every poison")
    codes = {r.original_offset: r.last_error_code for r in h.dlq.records}
    assert codes == {o: code for o, (_, code) in poisons.items()}
    assert {r.original_offset: r.payload for r in h.dlq.records} == {
        o: value for o, (value, _) in poisons.items()
    }
    assert h.version("after") == 1
    assert h.sample("searchsync_poison_messages_total", code="BAD_JSON") == 1


# -- 5. systemic failure: backpressure, not the DLQ ----------------------------------------------


async def test_a_failing_cluster_pauses_intake_and_never_dead_letters() -> None:
    h = Harness(max_attempts=2)  # a systemic failure must not spend this budget
    h.truth.put_page(page_row("a", 1))
    h.truth.put_page(page_row("b", 1))
    h.index.inject_failures(429, "es_rejected_execution_exception", "queue full", times=8)
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: TP0 in h.intake.paused, "intake paused")
        assert not h.pipeline.health()[0]
        h.intake.feed([good(1, "b", 1)])  # held back while paused
        await wait_until(lambda: h.intake.committed.get(TP0) == 2, "applied after recovery")
        assert h.intake.resume_calls, "the partition was resumed"
        assert TP0 not in h.intake.paused
        assert h.pipeline.health()[0]
    assert h.dlq.records == []
    assert h.version("a") == 1
    assert h.version("b") == 1
    assert h.sample("outbox_retry_total", aggregate_type="wiki_page", code="ES_429") == 8


async def test_an_unavailable_cluster_is_backpressure_too() -> None:
    h = Harness(max_attempts=1)
    h.truth.put_page(page_row("a", 1))
    h.index.inject_failures(0, "connection_error", "refused", times=5)
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "applied after recovery")
    assert h.intake.pause_calls == [[TP0]]
    assert h.intake.resume_calls == [[TP0]]
    assert h.dlq.records == []


class SkewedClock:
    """time.monotonic plus a skew a test moves forward: retry timers come due at once."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skew


def _slow_retries() -> RetryPolicy:
    # long backoffs, no jitter: only the outage cap or an early release can end a wait in time
    return RetryPolicy(
        base_delay=20.0, max_delay=3_600.0, max_attempts=5, jitter=0.0, rng=random.Random(1)
    )


async def test_an_unreachable_cluster_is_probed_at_least_every_outage_cap() -> None:
    clock = SkewedClock()
    h = Harness(retry=_slow_retries(), clock=clock)
    h.truth.put_page(page_row("a", 1))
    h.index.inject_failures(0, "connection_error", "refused", times=1)
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: TP0 in h.intake.paused, "intake paused")
        clock.skew += OUTAGE_RETRY_CAP_S + 0.01  # the backoff says 20 s; the cap 10 s
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "retried within the cap")
    assert h.version("a") == 1


async def test_the_first_write_after_an_outage_releases_every_work_waiting_on_it() -> None:
    clock = SkewedClock()
    h = Harness(retry=_slow_retries(), clock=clock)
    h.truth.put_page(page_row("a", 1))
    h.truth.put_page(page_row("b", 1))
    h.index.inject_failures(0, "connection_error", "refused", times=2, doc_id="a")
    h.index.inject_failures(0, "connection_error", "refused", times=1, doc_id="b")
    h.intake.feed([good(0, "a", 1), good(1, "b", 1)])
    async with h.running():
        await wait_until(lambda: TP0 in h.intake.paused, "intake paused")
        # both retried once the cap has passed: a fails again and waits (20 s, capped at 10 s),
        # b is written; that success releases a at once, without another clock jump
        clock.skew += OUTAGE_RETRY_CAP_S + 0.01
        await wait_until(lambda: h.version("b") == 1, "b written")
        await wait_until(lambda: h.intake.committed.get(TP0) == 2, "a released and written")
        assert TP0 not in h.intake.paused
    assert h.version("a") == 1
    assert h.dlq.records == []


# -- 5b. a failure of one work is that work's own: retried, then dead-lettered ---------------


async def test_a_projector_raising_on_one_id_dead_letters_it_and_indexes_the_rest() -> None:
    build = RaisingProjector({"bad"})
    h = Harness(max_attempts=3, build=build)
    ids = ["a", "bad", "c", "d"]
    for pid in ids:
        h.truth.put_page(page_row(pid, 1))
    h.intake.feed(good(o, pid, 1) for o, pid in enumerate(ids))
    async with h.running():
        await wait_until(lambda: h.version("a") == 1, "the first good page indexed")
        h.intake.feed([good(4, "e", 1)])  # intake keeps flowing while "bad" is retried
        h.truth.put_page(page_row("e", 1))
        await wait_until(lambda: h.intake.committed.get(TP0) == 5, "all five offsets committed")
    [record] = h.dlq.records
    assert (record.aggregate_id, record.original_offset) == ("bad", 1)
    assert record.last_error_code == "PROJECTION_ERROR"
    assert record.attempts == 3  # retried up to the limit first: a bug may pass
    assert "AttributeError" in record.last_error_message
    assert [h.version(pid) for pid in ("a", "bad", "c", "d", "e")] == [1, None, 1, 1, 1]
    assert h.intake.pause_calls == []  # one row's bug never pauses the group
    assert h.pipeline.health()[0]
    assert h.state.states[("wiki_page", "bad")].last_error_code == "PROJECTION_ERROR"
    assert h.sample("outbox_retry_total", aggregate_type="wiki_page", code="PROJECTION_ERROR") == 3


async def test_a_mysql_deadlock_is_retried_without_pausing_intake() -> None:
    h = Harness(max_attempts=5)
    h.truth.put_page(page_row("a", 1))

    def deadlock_once(n: int) -> None:
        if n == 1:
            raise TransientError(ErrorCode.MYSQL_DEADLOCK, "deadlock found")

    h.truth.before_load = deadlock_once
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "applied on the retry")
    assert h.version("a") == 1
    assert h.intake.pause_calls == []
    assert h.dlq.records == []
    assert h.sample("outbox_retry_total", aggregate_type="wiki_page", code="MYSQL_DEADLOCK") == 1


async def test_mysql_unreachable_pauses_intake_and_never_dead_letters() -> None:
    h = Harness(max_attempts=1)
    h.truth.put_page(page_row("a", 1))

    def unreachable_twice(n: int) -> None:
        if n <= 2:
            raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, "connection refused")

    h.truth.before_load = unreachable_twice
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "applied after recovery")
    assert h.intake.pause_calls == [[TP0]]
    assert h.dlq.records == []
    assert h.version("a") == 1


class BrokenProcessor(Processor):
    """A processor with a bug: every batch raises."""

    async def process(self, works: Sequence[Work]) -> Sequence[Work]:
        raise RuntimeError("processor bug")


async def test_a_step_that_raises_is_internal_retried_then_dead_lettered_not_systemic() -> None:
    h = Harness(max_attempts=2, processor=BrokenProcessor)
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "dead-lettered and committed")
    [record] = h.dlq.records
    assert record.last_error_code == "INTERNAL"
    assert record.attempts == 2
    assert "RuntimeError: processor bug" in record.last_error_message
    assert h.intake.pause_calls == []


class SilentProcessor(Processor):
    """A processor with a bug: it returns its works without ending them."""

    async def process(self, works: Sequence[Work]) -> Sequence[Work]:
        return works


async def test_a_work_left_without_an_outcome_is_never_finished_unwritten() -> None:
    h = Harness(max_attempts=2, processor=SilentProcessor)
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "dead-lettered and committed")
    [record] = h.dlq.records
    assert (record.last_error_code, record.attempts) == ("INTERNAL", 2)
    assert h.version("a") is None


# -- 6. a lagging truth --------------------------------------------------------------------------


async def test_a_truth_behind_the_event_on_the_primary_is_dead_lettered_at_once() -> None:
    h = Harness(max_attempts=3)
    h.truth.put_page(page_row("a", 1))
    h.intake.feed([good(0, "a", 2)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "dead-lettered and committed")
    [record] = h.dlq.records
    assert record.last_error_code == "REVISION_REGRESSION"
    assert record.attempts == 1  # no retry can make the primary newer
    assert (record.aggregate_id, record.source_revision) == ("a", 2)
    assert h.version("a") is None
    assert h.state.states[("wiki_page", "a")].last_error_code == "REVISION_REGRESSION"
    assert h.sample("searchsync_revision_regression_total", aggregate_type="wiki_page") == 1


async def test_a_lagging_replica_is_applied_from_the_primary() -> None:
    h = Harness(max_attempts=5)
    h.truth.put_page(page_row("a", 1))
    h.truth.put_page(page_row("a", 2), primary_only=True)
    h.intake.feed([good(0, "a", 2)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "applied and committed")
    assert h.dlq.records == []
    assert h.version("a") == 2


# -- 7. revision regression ----------------------------------------------------------------------


async def test_an_index_ahead_of_the_truth_is_a_revision_regression() -> None:
    h = Harness()
    await h.write_doc(page_row("a", 5))
    h.truth.put_page(page_row("a", 1))
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "dead-lettered and committed")
    [record] = h.dlq.records
    assert record.last_error_code == "REVISION_REGRESSION"
    assert h.sample("searchsync_revision_regression_total", aggregate_type="wiki_page") == 1
    outcomes = "searchsync_event_outcomes_total"
    assert h.sample(outcomes, aggregate_type="wiki_page", result="already_applied") == 0
    assert h.sample(outcomes, aggregate_type="wiki_page", result="dead_lettered") == 1
    assert h.version("a") == 5


# -- 8. hard delete ------------------------------------------------------------------------------


async def test_a_hard_delete_leaves_a_tombstone_that_a_stale_upsert_cannot_resurrect() -> None:
    h = Harness()
    h.intake.feed([raw(0, event_value("a", 4, operation=Operation.TOMBSTONE))])
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == 1, "tombstone committed")
        assert h.version("a") == 4
        first = h.body("a")
        assert first is not None and h.projector.tombstone("a", 4).matches(first)
        h.intake.feed([good(1, "a", 2)])
        await wait_until(lambda: h.intake.committed.get(TP0) == 2, "stale upsert committed")
    assert h.version("a") == 4
    # the stale upsert re-wrote the tombstone at revision 4: a 409, so the first time is kept
    assert h.body("a") == first
    assert h.dlq.records == []
    assert h.sample("es_tombstone_written_total") == 1


# -- 9. replay, duplicates, reordering -----------------------------------------------------------

LIVE_REVISIONS = 5
DELETED_REVISIONS = 4


def _events() -> list[tuple[str, int]]:
    live = [("live", r) for r in range(1, LIVE_REVISIONS + 1)]
    deleted = [("deleted", r) for r in range(1, DELETED_REVISIONS + 1)]
    return (live + deleted) * 2  # every event delivered twice


class VersionLog(InMemoryIndex):
    """Records every stored version of every document after each bulk."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[int]] = {}

    async def bulk_index(self, ops: Any) -> Any:
        results = await super().bulk_index(ops)
        for op in ops:
            stored = self.get(ALIAS, op.doc_id)
            if stored is not None:
                self.history.setdefault(op.doc_id, []).append(stored.version)
        return results


async def _replay(order: list[tuple[str, int]]) -> None:
    recorder = VersionLog()
    h = Harness(per_consume=3, index=recorder)
    live = page_row("live", LIVE_REVISIONS)
    h.truth.put_page(live)
    h.intake.feed(good(o, aid, r) for o, (aid, r) in enumerate(order))
    async with h.running():
        await wait_until(lambda: h.intake.committed.get(TP0) == len(order), "all committed")
    assert h.dlq.records == []
    assert h.version("live") == LIVE_REVISIONS
    assert h.body("live") == h.projector.project(live).body
    assert h.version("deleted") == DELETED_REVISIONS
    deleted = h.body("deleted")
    assert deleted is not None
    assert h.projector.tombstone("deleted", DELETED_REVISIONS).matches(deleted)
    assert set(recorder.history) == {"live", "deleted"}
    for history in recorder.history.values():
        assert history == sorted(history), history


@settings(max_examples=30, deadline=None)
@given(order=st.permutations(_events()))
def test_replayed_and_reordered_events_converge_on_the_truth(
    order: list[tuple[str, int]],
) -> None:
    asyncio.run(_replay(order))


# -- 10. the DLQ budget --------------------------------------------------------------------------


async def test_a_spent_dlq_budget_stops_the_pipeline_without_committing_past_it() -> None:
    h = Harness(max_consecutive_dead=3)
    h.intake.feed(raw(o, b"nope") for o in range(5))
    h.pipeline.assigned([TP0])
    task = asyncio.create_task(h.pipeline.run(h.intake, asyncio.Event(), drain_deadline_s=2))
    with pytest.raises(DlqBudgetExceeded):
        await asyncio.wait_for(task, 5)
    assert [r.original_offset for r in h.dlq.records] == [0, 1, 2]
    assert h.intake.max_committed(TP0) == 3  # offset 3 was never acknowledged
    assert isinstance(h.pipeline.fatal, DlqBudgetExceeded)
    assert not h.pipeline.health()[0]
    assert h.sample("searchsync_dlq_budget_spent") == 1  # SearchsyncDlqBudgetSpent reads it


# -- 11. revoke ----------------------------------------------------------------------------------


async def test_revoking_returns_only_the_revoked_partitions_offsets() -> None:
    h = Harness(commit_interval_s=3600.0)  # no periodic commit: revoke is what commits
    for pid in ("a", "b", "c", "d"):
        h.truth.put_page(page_row(pid, 1))
    h.intake.feed([good(0, "a", 1), good(1, "b", 1)])
    h.intake.feed([good(0, "c", 1, partition=1), good(1, "d", 1, partition=1)])
    async with h.running(TP0, TP1):
        await wait_until(lambda: all(h.version(p) == 1 for p in "abcd"), "every event applied")
        offsets = await h.pipeline.revoking([TP0])
        assert offsets == {TP0: 2}
        h.pipeline.revoked([TP0], lost=False)
        assert h.pipeline.ledger.partitions() == [TP1]


async def test_revoking_waits_for_the_partitions_work_in_flight() -> None:
    h = Harness(commit_interval_s=3600.0)
    h.truth.put_page(page_row("a", 1))
    h.truth.gate = asyncio.Event()
    h.intake.feed([good(0, "a", 1)])
    async with h.running():
        await wait_until(lambda: h.truth.gate_waiters == 1, "the load in flight")
        revoking = asyncio.create_task(h.pipeline.revoking([TP0]))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not revoking.done()  # cannot finish: its work is held at the truth
        h.truth.gate.set()
        assert await asyncio.wait_for(revoking, 5) == {TP0: 1}
        h.pipeline.revoked([TP0], lost=False)
    assert h.version("a") == 1


async def test_late_completions_after_revoke_commit_nothing() -> None:
    h = Harness(commit_interval_s=3600.0)
    h.truth.put_page(page_row("a", 1))
    h.truth.put_page(page_row("b", 1))
    h.truth.put_page(page_row("c", 1))
    h.dlq.hold()
    h.intake.feed([good(0, "a", 1), raw(1, b"poison"), good(2, "b", 1)])
    h.intake.feed([good(0, "c", 1, partition=1)])
    async with h.running(TP0, TP1):
        await wait_until(lambda: len(h.dlq.waiting) == 1, "the dead letter held")
        await wait_until(lambda: h.version("b") == 1 and h.version("c") == 1, "applied")
        assert await h.pipeline.revoking([TP0]) == {TP0: 1}
        h.pipeline.revoked([TP0], lost=False)
        before = len(h.intake.commits)
        h.dlq.release()  # the dead letter of the revoked partition is acknowledged late
        await wait_until(lambda: len(h.dlq.records) == 1, "the late acknowledgement")
        await h.pipeline.commit(h.intake)
        await h.loops()
    late = h.intake.commits[before:]
    assert late, "the pipeline committed after the revoke"
    assert all(TP0 not in c for c in late), late
    assert h.intake.committed.get(TP1) == 1


async def test_a_work_settling_after_its_partition_was_revoked_is_not_dead_lettered() -> None:
    h = Harness(commit_interval_s=3600.0)
    h.truth.put_page(page_row("a", 1))  # behind its event: this work would be dead-lettered
    h.truth.gate = asyncio.Event()
    h.intake.feed([good(0, "a", 2)])
    async with h.running():
        await wait_until(lambda: h.truth.gate_waiters == 1, "the load in flight")
        h.pipeline.revoked([TP0], lost=True)  # lost: no drain, the work is still running
        h.truth.gate.set()
        await wait_until(
            lambda: h.sample("searchsync_member_keys_in_flight") == 0, "the work settled"
        )
        await h.loops()
    assert h.dlq.records == []  # the new owner re-reads the event; nothing is dead-lettered here
    assert h.sample("searchsync_revision_regression_total", aggregate_type="wiki_page") == 0


async def test_revoking_the_failing_partition_does_not_leave_the_rest_paused() -> None:
    h = Harness()
    h.truth.put_page(page_row("a", 1))
    h.truth.put_page(page_row("b", 1))
    h.index.inject_failures(503, "unavailable", "node down", times=1000, doc_id="a")
    h.intake.feed([good(0, "a", 1)])
    async with h.running(TP0, TP1):
        await wait_until(lambda: {TP0, TP1} <= h.intake.paused, "intake paused")
        await h.pipeline.revoking([TP0])
        h.pipeline.revoked([TP0], lost=False)
        h.intake.feed([good(0, "b", 1, partition=1)])
        await wait_until(lambda: h.intake.committed.get(TP1) == 1, "the other partition goes on")
    assert h.version("b") == 1
    assert h.dlq.records == []


async def test_a_retry_scheduled_while_revoking_is_dropped_with_the_partition() -> None:
    h = Harness(max_attempts=1000, commit_interval_s=3600.0)
    h.truth.put_page(page_row("a", 2))
    h.index.inject_failures(503, "unavailable", "down", times=10_000)  # every attempt: a retry
    h.truth.gate = asyncio.Event()
    h.intake.feed([good(0, "a", 2)])
    async with h.running():
        await wait_until(lambda: h.truth.gate_waiters == 1, "the load in flight")
        revoking = asyncio.create_task(h.pipeline.revoking([TP0]))
        h.truth.gate.set()  # the work settles as RETRY while the revoke drains
        assert await asyncio.wait_for(revoking, 5) == {TP0: 0}
        h.pipeline.revoked([TP0], lost=False)
        loads = h.truth.loads
        await h.loops()
        assert h.sample("searchsync_member_keys_in_flight") == 0  # nothing left of the revoked work
        assert h.truth.loads == loads  # and it is not retried for a partition we lost
    assert h.dlq.records == []


async def test_a_lost_partitions_scheduled_retries_are_dropped() -> None:
    h = Harness(max_attempts=1000, commit_interval_s=3600.0)
    h.truth.put_page(page_row("a", 2))
    h.index.inject_failures(503, "unavailable", "down", times=10_000)  # every attempt: a retry
    h.intake.feed([good(0, "a", 2)])
    async with h.running():
        await wait_until(lambda: h.truth.loads >= 2, "retrying")
        h.pipeline.revoked([TP0], lost=True)
        await h.loops()
        loads = h.truth.loads
        await h.loops()
        assert h.sample("searchsync_member_keys_in_flight") == 0
        assert h.truth.loads == loads
    assert h.intake.commits == []


async def test_a_revoke_through_the_intake_commits_the_prefix_and_drops_pending_work() -> None:
    h = Harness(max_attempts=1000, commit_interval_s=3600.0)  # only the revoke commits
    h.intake.listener = h.pipeline
    for pid in ("a", "b", "c", "d"):
        h.truth.put_page(page_row(pid, 1))
    h.index.inject_failures(503, "unavailable", "down", times=10_000, doc_id="b")
    h.intake.feed([good(0, "a", 1), good(1, "b", 1), good(2, "c", 1)])
    h.intake.feed([good(0, "d", 1, partition=1)])
    async with h.running(TP0, TP1):
        await wait_until(lambda: h.version("a") == 1 and h.version("d") == 1, "a and d applied")
        await wait_until(lambda: h.truth.loads >= 4, "b retrying")
        assert await h.intake.revoke([TP0]) == {TP0: 1}  # a is done; b (and c behind it) not
        assert h.intake.committed[TP0] == 1
        h.intake.feed([good(3, "a", 2, partition=0)])  # the new owner's now: never handed out
        h.intake.feed([good(1, "d", 2, partition=1)])
        h.truth.put_page(page_row("d", 2))
        await wait_until(lambda: h.version("d") == 2, "the kept partition goes on")
        loads = h.truth.loads
        await h.loops()
        assert h.truth.loads == loads  # b's retry went with its partition
        assert h.sample("searchsync_member_keys_in_flight") == 0
        assert TP0 not in h.pipeline.ledger.partitions()
    assert h.version("b") is None and h.version("a") == 1
    assert all(c.get(TP0, 1) == 1 for c in h.intake.commits)  # nothing past the prefix, ever
    assert h.dlq.records == []


async def test_a_lost_partition_through_the_intake_commits_nothing() -> None:
    h = Harness(commit_interval_s=3600.0)
    h.intake.listener = h.pipeline
    h.truth.put_page(page_row("a", 1))
    h.intake.feed([good(0, "a", 1)])
    async with h.running(TP0):
        await wait_until(lambda: h.version("a") == 1, "a applied")
        await h.intake.lose([TP0])
        await h.loops()
        assert h.pipeline.ledger.partitions() == []
    assert TP0 not in h.intake.committed
