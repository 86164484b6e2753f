"""Unit tests of the MySQL-side modules' pure parts: no server needed.

Covers the error translation of searchsync/mysql/pool.py, the loadgen plan, the in-memory truth
fake and the projection-state merge rules (the SQL upsert is checked against `merge` in
tests/integration/test_truth_state.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import aiomysql
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.devtools.loadgen import OpKind, page_ids, plan_operations
from searchsync.errors import (
    AggregateExists,
    AggregateNotFound,
    AggregateStateConflict,
    ConfigError,
    ErrorCode,
    SearchSyncError,
    TransientError,
    WriteRefused,
)
from searchsync.mysql.pool import db_time, expand_in, translate_errors
from searchsync.mysql.projection_state import StateUpdate
from searchsync.projection import wiki_page
from searchsync.writer import PageWriter

from tests.contract.projection_state_contract import failing
from tests.fakes.projection_state import FakeProjectionState, merge

T0 = datetime(2030, 1, 1)


def test_write_errors_are_search_sync_errors_naming_the_row() -> None:
    for error in (
        AggregateNotFound("wiki_page", "p1"),
        AggregateExists("wiki_page", "p1"),
        AggregateStateConflict("wiki_page", "p1", "deleted already"),
    ):
        assert isinstance(error, WriteRefused)
        assert isinstance(error, SearchSyncError)
        assert error.aggregate_id == "p1"
        assert error.aggregate_type == "wiki_page"
        assert "'p1'" in str(error)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (aiomysql.OperationalError(1213, "Deadlock found"), ErrorCode.MYSQL_DEADLOCK),
        (aiomysql.OperationalError(1205, "Lock wait timeout"), ErrorCode.MYSQL_LOCK_TIMEOUT),
        (aiomysql.OperationalError(2003, "Can't connect"), ErrorCode.MYSQL_UNAVAILABLE),
        (aiomysql.OperationalError(2013, "Lost connection"), ErrorCode.MYSQL_UNAVAILABLE),
        (aiomysql.InterfaceError(0, "closed"), ErrorCode.MYSQL_UNAVAILABLE),
        (ConnectionResetError("reset"), ErrorCode.MYSQL_UNAVAILABLE),
        (TimeoutError(), ErrorCode.MYSQL_UNAVAILABLE),
    ],
)
def test_driver_errors_that_may_heal_become_transient(error: Exception, code: str) -> None:
    with pytest.raises(TransientError) as caught, translate_errors("doing x"):
        raise error
    assert caught.value.code == code
    assert "doing x" in caught.value.message
    assert caught.value.__cause__ is error


@pytest.mark.parametrize("number", [1044, 1045, 1049])
def test_refused_credentials_or_unknown_database_are_config_errors(number: int) -> None:
    with pytest.raises(ConfigError), translate_errors("connect"):
        raise aiomysql.OperationalError(number, "denied")


@pytest.mark.parametrize(
    "error",
    [
        aiomysql.ProgrammingError(1064, "syntax"),
        aiomysql.IntegrityError(1062, "Duplicate entry"),
        aiomysql.OperationalError(1142, "command denied"),
        ValueError("not a driver error"),
    ],
)
def test_bugs_and_refusals_pass_through_unchanged(error: Exception) -> None:
    with pytest.raises(type(error)) as caught, translate_errors("x"):
        raise error
    assert caught.value is error


def test_expand_in_makes_one_placeholder_per_value() -> None:
    assert expand_in("SELECT 1 FROM t WHERE id IN %s", 3) == (
        "SELECT 1 FROM t WHERE id IN (%s, %s, %s)"
    )
    with pytest.raises(ValueError):
        expand_in("SELECT 1 FROM t WHERE id = %s", 1)
    with pytest.raises(ValueError):
        expand_in("SELECT 1 FROM t WHERE id IN %s", 0)


def test_db_time_is_naive_utc() -> None:
    aware = datetime(2030, 1, 1, 8, 0, tzinfo=timezone(timedelta(hours=8)))
    assert db_time(aware) == datetime(2030, 1, 1, 0, 0)
    assert db_time(datetime(2030, 1, 1, 0, 0, tzinfo=UTC)).tzinfo is None
    assert db_time(T0) == T0


# ---------------------------------------------------------------------------------- loadgen


@given(seed=st.integers(0, 2**32), updates=st.integers(0, 50))
def test_plan_is_a_function_of_the_seed(seed: int, updates: int) -> None:
    ids = page_ids("x-", 4)
    first = plan_operations(
        ids=ids, updates=updates, delete_ratio=0.2, hard_delete_ratio=0.1, seed=seed
    )
    again = plan_operations(
        ids=ids, updates=updates, delete_ratio=0.2, hard_delete_ratio=0.1, seed=seed
    )
    assert first == again
    assert len(first) == updates
    assert all(op.page_id in ids for op in first)
    for op in first:
        if op.kind is OpKind.UPDATE:
            assert (op.title, op.content, op.relations) != (None, None, None)


@given(seed=st.integers(0, 2**32))
def test_planned_relations_are_what_the_projector_reads(seed: int) -> None:
    """loadgen writes relations_json in the layout of docs/design.md ("The wiki_page document")."""
    plan = plan_operations(
        ids=page_ids("x-", 3), updates=30, delete_ratio=0.0, hard_delete_ratio=0.0, seed=seed
    )
    projector = wiki_page.projector()
    for op in plan:
        if op.relations is None:
            continue
        row = {"id": op.page_id, "title": "t", "content": "c", "revision": 1, "deleted_at": None}
        doc = projector.project({**row, "relations_json": orjson.dumps(op.relations)})
        assert set(doc.body["relations"]) <= {"RELATED_CHARACTER", "RELATED_PLACE"}
        assert "RELATED_CHARACTER" in doc.body["relations"]
        for target in doc.body["relation_target_ids"]:
            assert target.startswith(("character:", "place:"))


@pytest.mark.parametrize(
    "relations",
    [[], [{"entity_id": "x", "entity_type": "y"}], '{"R": []}', {"R": "x:y"}, {"R": {"a": 1}}],
)
async def test_writer_refuses_relations_of_the_wrong_shape_before_any_sql(
    relations: object,
) -> None:
    writer = PageWriter(None)  # type: ignore[arg-type]  # a pool would be the first SQL touched
    with pytest.raises(TypeError, match="relations"):
        await writer.create("p1", "t", "c", relations)  # type: ignore[arg-type]


def test_plan_follows_the_ratios() -> None:
    ids = page_ids("x-", 3)
    only_updates = plan_operations(
        ids=ids, updates=200, delete_ratio=0.0, hard_delete_ratio=0.0, seed=1
    )
    assert {op.kind for op in only_updates} == {OpKind.UPDATE}
    mixed = plan_operations(ids=ids, updates=2000, delete_ratio=0.2, hard_delete_ratio=0.1, seed=1)
    kinds = [op.kind for op in mixed]
    assert 100 < kinds.count(OpKind.HARD_DELETE) < 300  # 10 % of 2000, loosely
    assert 250 < kinds.count(OpKind.SOFT_DELETE) < 550
    assert 250 < kinds.count(OpKind.RESTORE) < 550


# ---------------------------------------------------------------------------------- state


def test_state_update_is_either_a_success_or_an_error() -> None:
    with pytest.raises(ValueError):
        StateUpdate("t", "a", 1, indexed_revision=1)  # no hash / schema version
    with pytest.raises(ValueError):
        StateUpdate("t", "a", 1, 1, 1, "h" * 64, error_code="E")
    with pytest.raises(ValueError):
        StateUpdate("t", "a", 1, error_message="no code")


_outcome = st.one_of(
    st.builds(
        lambda r, v, h: StateUpdate("t", "a", r, r, v, h * 64),
        st.integers(0, 20),
        st.integers(1, 3),
        st.sampled_from("abc"),
    ),
    st.builds(
        lambda r, c, m: StateUpdate("t", "a", r, error_code=c, error_message=m),
        st.integers(0, 20),
        st.sampled_from(["E1", "E" * 100]),
        st.text(max_size=1500),
    ),
    st.builds(lambda r: StateUpdate("t", "a", r), st.integers(0, 20)),
)


@given(outcomes=st.lists(_outcome, min_size=1, max_size=20))
def test_merge_never_lowers_revisions_and_keeps_the_newest_hash(
    outcomes: list[StateUpdate],
) -> None:
    state = None
    best: tuple[int, str | None] = (-1, None)
    for step, update in enumerate(outcomes):
        before = state
        state = merge(state, update, T0 + timedelta(seconds=step))
        if before is not None:
            assert state.source_revision >= before.source_revision
            assert (state.indexed_revision or 0) >= (before.indexed_revision or 0)
            if update.error_code is None:  # error history survives successes
                assert state.last_error_code == before.last_error_code
        if update.indexed_revision is not None and update.indexed_revision >= best[0]:
            best = (update.indexed_revision, update.projection_hash)
        assert len(state.last_error_message or "") <= 1024
        assert len(state.last_error_code or "") <= 64
    assert state is not None
    assert state.source_revision == max(u.source_revision for u in outcomes)
    assert (state.indexed_revision, state.projection_hash) == (
        (best[0], best[1]) if best[0] >= 0 else (None, None)
    )


async def test_in_memory_state_writer_applies_merge_per_key() -> None:
    clock_times = iter([T0, T0 + timedelta(seconds=1)])
    writer = FakeProjectionState(clock=lambda: next(clock_times))

    await writer.record([StateUpdate("t", "a", 2, 2, 1, "b" * 64), StateUpdate("t", "b", 1)])
    await writer.record([StateUpdate("t", "a", 3, error_code="E", error_message="boom")])
    await writer.record([])

    a = writer.states[("t", "a")]
    assert (a.indexed_revision, a.source_revision, a.last_error_code) == (2, 3, "E")
    assert failing(a)
    assert writer.states[("t", "b")].indexed_revision is None
    assert len(writer.calls) == 2
