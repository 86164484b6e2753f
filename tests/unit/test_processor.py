"""The processor's verdicts, case by case, over the in-memory truth and index (no pipeline)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from pipeline_fakes import PageTruth, RaisingProjector, page_row
from searchsync.errors import Disposition, ErrorCode, TransientError
from searchsync.projection import Projector, ProjectorRegistry, default_registry
from searchsync.search.sink import IndexOp, OutcomeKind, Sink, WriteOutcome
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

from tests.fakes.search_index import InMemoryIndex

ALIAS = "wiki_page"


def work(aggregate_id: str, *revisions: int, aggregate_type: str = "wiki_page") -> Work:
    events = tuple(
        ThinEvent(f"{aggregate_id}-{r}", aggregate_type, aggregate_id, Operation.UPSERT, r)
        for r in revisions
    )
    positions = tuple(RawMessage("t", 0, i) for i in range(len(revisions)))
    return Work(Key(aggregate_type, aggregate_id), events, positions, attempts=1)


class Env:
    def __init__(self) -> None:
        self.registry = default_registry()
        self.projector: Projector = self.registry.get("wiki_page")
        self.truth = PageTruth()
        self.index = InMemoryIndex()
        self.index.given_index("wiki_page_v1", self.projector.mapping)
        self.index.given_alias(ALIAS, "wiki_page_v1")
        self.processor = Processor(
            registry=self.registry,
            truth=self.truth,
            sink=Sink(self.index),
            alias_for=lambda t: t,
            fence=SchemaFence(self.index.admin, interval_s=60.0),
        )

    async def put_doc(self, row: dict[str, object]) -> None:
        """Write a document straight into the index, as an earlier writer would have."""
        op = IndexOp.from_document(ALIAS, self.projector.project(row))
        [result] = await self.index.bulk_index([op])
        assert result.status in (200, 201)


@pytest.fixture
def env() -> Env:
    return Env()


async def test_applied_writes_the_projection_at_the_row_revision(env: Env) -> None:
    row = page_row("p1", 3)
    env.truth.put_page(row)
    [verdict] = await env.processor.process([work("p1", 2, 3)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert verdict.finished
    expected = env.projector.project(row)
    assert verdict.document == expected
    assert verdict.loaded_revision == 3
    assert verdict.schema_version == env.projector.schema_version
    stored = env.index.get(ALIAS, "p1")
    assert stored is not None
    assert (stored.version, stored.body) == (3, expected.body)


async def test_writing_the_same_revision_twice_is_already_applied(env: Env) -> None:
    env.truth.put_page(page_row("p1", 3))
    [first] = await env.processor.process([work("p1", 3)])
    [second] = await env.processor.process([work("p1", 3)])
    assert first.kind is OutcomeKind.APPLIED
    assert second.kind is OutcomeKind.ALREADY_APPLIED
    assert second.finished
    assert second.document == first.document


async def test_a_row_older_than_the_event_on_the_primary_is_a_revision_regression(
    env: Env,
) -> None:
    env.truth.put_page(page_row("p1", 2))
    [verdict] = await env.processor.process([work("p1", 3)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.REVISION_REGRESSION
    assert verdict.disposition is Disposition.POISON
    assert verdict.loaded_revision == 2
    assert env.index.get(ALIAS, "p1") is None  # nothing written from the stale row


async def test_a_redelivered_event_the_index_holds_is_applied_though_its_id_was_recreated(
    env: Env,
) -> None:
    # the id lived to revision 3 (indexed), then was re-created at revision 1; the old life's
    # revision-3 event comes again: the index holds it, and the re-created row's own event is
    # the one that reports the regression
    await env.put_doc(page_row("p1", 3))
    env.truth.put_page(page_row("p1", 1))
    [redelivered] = await env.processor.process([work("p1", 3)])
    assert redelivered.kind is OutcomeKind.ALREADY_APPLIED
    [recreated] = await env.processor.process([work("p1", 1)])
    assert recreated.code is ErrorCode.REVISION_REGRESSION
    stored = env.index.get(ALIAS, "p1")
    assert stored is not None and stored.version == 3


async def test_a_row_older_than_its_events_is_a_regression_unless_the_index_holds_them(
    env: Env,
) -> None:
    await env.put_doc(page_row("p1", 2))  # the index lacks revision 3
    env.truth.put_page(page_row("p1", 1))
    [unheld] = await env.processor.process([work("p1", 3)])
    assert unheld.code is ErrorCode.REVISION_REGRESSION
    await env.put_doc(page_row("p2", 3))
    env.truth.put_page(page_row("p2", 1))
    # coalesced with the re-created row's own event: the regression is never hidden
    [mixed] = await env.processor.process([work("p2", 1, 3)])
    assert mixed.code is ErrorCode.REVISION_REGRESSION


async def test_a_lagging_replica_is_read_again_from_the_primary(env: Env) -> None:
    env.truth.put_page(page_row("p1", 2))
    env.truth.put_page(page_row("p1", 3), primary_only=True)
    [verdict] = await env.processor.process([work("p1", 3)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert verdict.loaded_revision == 3
    assert verdict.document == env.projector.project(page_row("p1", 3))


@pytest.mark.parametrize(("floor", "expected"), [(None, 4), (2, 4), (9, 9)])
async def test_a_missing_row_becomes_a_tombstone_at_the_newest_known_revision(
    env: Env, floor: int | None, expected: int
) -> None:
    if floor is not None:
        env.truth.put_page_floor("gone", floor)
    [verdict] = await env.processor.process([work("gone", 3, 4)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert verdict.loaded_revision is None
    assert verdict.document is not None
    assert env.projector.tombstone("gone", expected).matches(verdict.document.body)
    stored = env.index.get(ALIAS, "gone")
    assert stored is not None
    assert stored.version == expected
    assert stored.body["is_deleted"] is True
    assert stored.body == verdict.document.body  # with the time it was first written
    assert stored.body["tombstoned_at"] == verdict.document.body.get("tombstoned_at")


async def test_an_unknown_aggregate_type_is_dead(env: Env) -> None:
    [verdict] = await env.processor.process([work("x", 1, aggregate_type="no_such_type")])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.UNKNOWN_AGGREGATE_TYPE
    assert verdict.disposition is Disposition.POISON
    assert env.index.bulk_calls == []


async def test_a_row_that_cannot_be_projected_is_dead(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1, relations_json="{not json"))
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.PROJECTION_ERROR
    assert verdict.disposition is Disposition.POISON
    assert not verdict.unexpected
    assert env.index.get(ALIAS, "p1") is None


async def test_an_unreachable_mysql_is_a_systemic_retry(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1))
    env.truth.fail_with = TransientError(ErrorCode.MYSQL_UNAVAILABLE, "connection refused")
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.MYSQL_UNAVAILABLE
    assert verdict.disposition is Disposition.SYSTEMIC


async def test_es_429_is_a_systemic_retry(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1))
    env.index.inject_failures(429, "es_rejected_execution_exception", "queue full")
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.ES_429
    assert verdict.disposition is Disposition.SYSTEMIC


async def test_a_mapping_error_is_dead(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1))
    env.index.inject_failures(400, "mapper_parsing_exception", "bad field")
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.MAPPING_ERROR
    assert verdict.disposition is Disposition.POISON


async def test_an_index_ahead_of_the_primary_is_a_revision_regression(env: Env) -> None:
    await env.put_doc(page_row("p1", 5))
    env.truth.put_page(page_row("p1", 1))
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.kind is OutcomeKind.FAILED
    assert verdict.code is ErrorCode.REVISION_REGRESSION
    assert not verdict.finished
    assert [primary for _, primary in env.truth.calls] == [False, True]  # re-checked
    stored = env.index.get(ALIAS, "p1")
    assert stored is not None
    assert stored.version == 5


async def test_an_index_ahead_of_a_lagging_replica_is_rewritten_from_the_primary(
    env: Env,
) -> None:
    await env.put_doc(page_row("p1", 3))
    env.truth.put_page(page_row("p1", 2))  # the replica
    env.truth.put_page(page_row("p1", 4), primary_only=True)
    [verdict] = await env.processor.process([work("p1", 2)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert verdict.loaded_revision == 4
    stored = env.index.get(ALIAS, "p1")
    assert stored is not None
    assert stored.version == 4
    assert stored.body == env.projector.project(page_row("p1", 4)).body


async def test_a_stale_event_of_a_deleted_id_is_already_applied(env: Env) -> None:
    [first] = await env.processor.process([work("gone", 7)])
    [stale] = await env.processor.process([work("gone", 2)])
    assert first.kind is OutcomeKind.APPLIED
    assert stale.kind is OutcomeKind.ALREADY_APPLIED
    stored = env.index.get(ALIAS, "gone")
    assert stored is not None
    assert (stored.version, stored.body["is_deleted"]) == (7, True)


async def test_every_work_is_ended_in_place_and_comes_back_in_order(env: Env) -> None:
    env.truth.put_page(page_row("a", 1))
    env.truth.put_page(page_row("c", 1))
    env.truth.put_page(page_row("bad", 1, relations_json="[1]"))
    works = [
        work("a", 1),
        work("u", 1, aggregate_type="other_type"),
        work("bad", 1),
        work("c", 2),
        work("gone", 1),
    ]
    verdicts = await env.processor.process(works)
    assert all(v is w for v, w in zip(verdicts, works, strict=True))
    assert [v.kind for v in verdicts] == [
        OutcomeKind.APPLIED,
        OutcomeKind.FAILED,
        OutcomeKind.FAILED,
        OutcomeKind.FAILED,  # c: the row is behind its event even on the primary
        OutcomeKind.APPLIED,
    ]
    assert [v.code for v in verdicts] == [
        None,
        ErrorCode.UNKNOWN_AGGREGATE_TYPE,
        ErrorCode.PROJECTION_ERROR,
        ErrorCode.REVISION_REGRESSION,
        None,
    ]


async def test_a_mysql_deadlock_is_a_transient_failure_of_the_work(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1))
    env.truth.fail_with = TransientError(ErrorCode.MYSQL_DEADLOCK, "deadlock found")
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.code is ErrorCode.MYSQL_DEADLOCK
    assert verdict.disposition is Disposition.TRANSIENT


def raising_env(bad: set[str]) -> tuple[Env, RaisingProjector]:
    """An `Env` whose wiki_page projector raises `AttributeError` for the ids in `bad`."""
    env = Env()
    build = RaisingProjector(bad)
    projector = replace(env.projector, build=build)
    env.registry = ProjectorRegistry()
    env.registry.register(projector)
    env.projector = projector
    env.processor = Processor(
        registry=env.registry,
        truth=env.truth,
        sink=Sink(env.index),
        alias_for=lambda t: t,
        fence=SchemaFence(env.index.admin, interval_s=60.0),
    )
    return env, build


async def test_a_projector_raising_on_one_row_fails_that_work_alone() -> None:
    env, _ = raising_env({"bad"})
    for aggregate_id in ("a", "bad", "c"):
        env.truth.put_page(page_row(aggregate_id, 1))
    verdicts = await env.processor.process([work("a", 1), work("bad", 1), work("c", 1)])
    assert [v.kind for v in verdicts] == [
        OutcomeKind.APPLIED,
        OutcomeKind.FAILED,
        OutcomeKind.APPLIED,
    ]
    failed = verdicts[1]
    assert failed.code is ErrorCode.PROJECTION_ERROR
    assert failed.unexpected
    assert failed.disposition is Disposition.TRANSIENT  # retried first, then dead-lettered
    assert failed.message is not None and "AttributeError" in failed.message
    assert failed.loaded_revision == 1
    assert env.index.get(ALIAS, "bad") is None
    assert env.index.get(ALIAS, "a") is not None and env.index.get(ALIAS, "c") is not None


async def test_an_unexpected_error_reading_the_truth_is_internal_not_systemic(env: Env) -> None:
    env.truth.put_page(page_row("p1", 1))
    env.truth.fail_with = RuntimeError("adapter bug")
    [verdict] = await env.processor.process([work("p1", 1)])
    assert verdict.code is ErrorCode.INTERNAL
    assert verdict.disposition is Disposition.TRANSIENT
    assert verdict.message is not None and "RuntimeError: adapter bug" in verdict.message


async def test_a_sink_that_raises_fails_its_works_as_internal(env: Env) -> None:
    class BrokenSink(Sink):
        async def write(self, ops: Sequence[IndexOp]) -> list[WriteOutcome]:
            raise RuntimeError("sink bug")

    env.truth.put_page(page_row("p1", 1))
    processor = Processor(
        registry=env.registry,
        truth=env.truth,
        sink=BrokenSink(env.index),
        alias_for=lambda t: t,
        fence=SchemaFence(env.index.admin, interval_s=60.0),
    )
    [verdict] = await processor.process([work("p1", 1)])
    assert verdict.code is ErrorCode.INTERNAL
    assert verdict.disposition is Disposition.TRANSIENT


def test_a_work_ends_with_a_code_exactly_when_it_failed() -> None:
    with pytest.raises(ValueError, match="exactly when it failed"):
        work("p1", 1).end(OutcomeKind.FAILED)
    with pytest.raises(ValueError, match="exactly when it failed"):
        work("p1", 1).end(OutcomeKind.APPLIED, ErrorCode.ES_429)
    with pytest.raises(ValueError, match="never an outcome"):
        work("p1", 1).end(OutcomeKind.AHEAD)
    applied = work("p1", 1)
    applied.end(OutcomeKind.APPLIED)
    with pytest.raises(ValueError, match="no disposition"):
        _ = applied.disposition
