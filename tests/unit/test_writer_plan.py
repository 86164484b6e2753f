"""The application-side writer's plans (searchsync/writer/_plan.py), driven without a server.

A plan yields statements and receives the fetched rows; these tests play the server's answers
and check what each plan asks for: the revision it writes, the outbox row it appends, the
refusals before anything is written. The same plans run on PyMySQL and aiomysql
(tests/integration/test_aggregate_writer_real.py runs both on MariaDB).
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

import pymysql
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from searchsync.errors import AggregateExists, AggregateNotFound, AggregateStateConflict
from searchsync.events import decode
from searchsync.naming import IDENTIFIER
from searchsync.types import Operation
from searchsync.writer import AggregateTable
from searchsync.writer._drivers import run_plan
from searchsync.writer._plan import (
    Begun,
    Plan,
    Statement,
    begin_create,
    begin_hard_delete,
    begin_update,
    finish,
)

T0 = datetime(2030, 1, 1, 12, 0)
THING = AggregateTable("thing", "thing_row")

ids = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=128
).filter(lambda i: i.isprintable() and unicodedata.normalize("NFC", i) == i)
columns = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda c: c.lower() not in THING.owned
)
values = st.dictionaries(
    columns, st.one_of(st.integers(), st.text(), st.none()), max_size=6
).filter(lambda row: len({c.lower() for c in row}) == len(row))
revisions = st.integers(0, 2**62)


def play(plan: Plan[Any], answers: list[Any]) -> tuple[list[Statement], Any]:
    """Run `plan`, answering each fetching statement with the next of `answers`."""
    seen: list[Statement] = []
    pending = iter(answers)
    try:
        statement = next(plan)
        while True:
            seen.append(statement)
            statement = plan.send(next(pending) if statement.fetch else None)
    except StopIteration as done:
        return seen, done.value


def assert_well_formed(statements: list[Statement]) -> None:
    for statement in statements:
        assert statement.sql.count("%s") == len(statement.params), statement


@given(aggregate_id=ids, row=values, floor=st.one_of(st.none(), revisions))
def test_create_inserts_at_floor_plus_one(
    aggregate_id: str, row: dict[str, Any], floor: int | None
) -> None:
    statements, begun = play(
        begin_create(THING, aggregate_id, row, T0), [None, None if floor is None else (floor,)]
    )

    lock, floor_read, insert = statements
    assert lock.sql.endswith("FOR UPDATE") and lock.params == (aggregate_id,)
    assert floor_read.sql.endswith("FOR UPDATE")
    assert floor_read.params == ("thing", aggregate_id)
    revision = (floor or 0) + 1
    assert begun == Begun(revision, Operation.UPSERT)
    assert insert.sql.startswith("INSERT INTO `thing_row` (`id`, `revision`, `updated_at`")
    assert insert.params == (aggregate_id, revision, T0, *row.values())
    assert_well_formed(statements)


@given(aggregate_id=ids, row=values)
def test_create_of_an_existing_id_is_refused_before_any_write(
    aggregate_id: str, row: dict[str, Any]
) -> None:
    plan = begin_create(THING, aggregate_id, row, T0)
    assert next(plan).fetch
    with pytest.raises(AggregateExists):
        plan.send((3, None))


def test_create_losing_the_race_on_the_primary_key_is_refused() -> None:
    plan = begin_create(THING, "a", {"name": "x"}, T0)
    next(plan)
    plan.send(None)
    plan.send(None)  # now at the INSERT
    with pytest.raises(AggregateExists) as caught:
        plan.throw(pymysql.err.IntegrityError(1062, "Duplicate entry"))
    assert caught.value.aggregate_id == "a"
    other = begin_create(THING, "a", {"name": "x"}, T0)
    next(other)
    other.send(None)
    other.send(None)
    with pytest.raises(pymysql.err.IntegrityError):  # not a duplicate key: not a refusal
        other.throw(pymysql.err.IntegrityError(1048, "Column cannot be null"))


@given(aggregate_id=ids, row=values, current=revisions, deleted=st.booleans())
def test_update_raises_the_locked_revision_by_one(
    aggregate_id: str, row: dict[str, Any], current: int, deleted: bool
) -> None:
    statements, begun = play(
        begin_update(THING, aggregate_id, row, T0), [(current, T0 if deleted else None)]
    )

    lock, update = statements
    assert lock.sql.endswith("FOR UPDATE")
    assert begun == Begun(current + 1, Operation.UPSERT)
    assert update.sql.startswith("UPDATE `thing_row` SET `revision` = %s, `updated_at` = %s")
    assert "deleted_at" not in update.sql  # a soft-deleted row stays deleted
    assert update.params == (current + 1, T0, *row.values(), aggregate_id)
    assert_well_formed(statements)


@given(current=revisions, deleted=st.booleans(), was_deleted=st.booleans(), row=values)
def test_soft_delete_and_restore_change_the_state_or_refuse(
    current: int, deleted: bool, was_deleted: bool, row: dict[str, Any]
) -> None:
    plan = begin_update(THING, "a", row, T0, deleted=deleted)
    answer = (current, T0 if was_deleted else None)
    if deleted == was_deleted:
        next(plan)
        with pytest.raises(AggregateStateConflict):
            plan.send(answer)
        return
    statements, begun = play(plan, [answer])
    assert begun == Begun(current + 1, Operation.TOMBSTONE if deleted else Operation.UPSERT)
    assert statements[1].params == (current + 1, T0 if deleted else None, T0, *row.values(), "a")
    assert "`deleted_at` = %s" in statements[1].sql
    assert_well_formed(statements)


@given(current=revisions)
def test_hard_delete_records_its_revision_as_the_floor(current: int) -> None:
    statements, begun = play(begin_hard_delete(THING, "a", T0), [(current, None)])

    assert begun == Begun(current + 1, Operation.TOMBSTONE)
    delete, floor = statements[1:]
    assert delete.sql == "DELETE FROM `thing_row` WHERE `id` = %s"
    assert floor.sql.startswith("INSERT INTO search_revision_floor")
    assert "GREATEST(revision, VALUES(revision))" in floor.sql
    assert floor.params == ("thing", "a", current + 1, T0)
    assert_well_formed(statements)


@pytest.mark.parametrize(
    "plan",
    [
        lambda: begin_update(THING, "gone", {}, T0),
        lambda: begin_update(THING, "gone", {}, T0, deleted=True),
        lambda: begin_update(THING, "gone", {}, T0, deleted=False),
        lambda: begin_hard_delete(THING, "gone", T0),
    ],
)
def test_changes_of_a_missing_row_are_refused(plan: Any) -> None:
    started = plan()
    next(started)
    with pytest.raises(AggregateNotFound) as caught:
        started.send(None)
    assert (caught.value.aggregate_type, caught.value.aggregate_id) == ("thing", "gone")


@given(
    aggregate_id=ids,
    revision=st.integers(1, 2**62),
    operation=st.sampled_from(Operation),
    delete_row=st.booleans(),
)
def test_finish_appends_the_thin_event_of_the_change(
    aggregate_id: str, revision: int, operation: Operation, delete_row: bool
) -> None:
    statements, event_id = play(
        finish(THING, aggregate_id, Begun(revision, operation), T0, delete_row=delete_row), []
    )

    insert = statements[0]
    assert insert.sql.startswith("INSERT INTO search_outbox (event_id, aggregate_type,")
    assert insert.params[:5] == (event_id, "thing", aggregate_id, operation.value, revision)
    event = decode(insert.params[5].encode(), max_bytes=1 << 20, known_types={"thing"})
    assert (event.event_id, event.aggregate_id, event.operation, event.source_revision) == (
        event_id,
        aggregate_id,
        operation,
        revision,
    )
    assert insert.params[6:] == (T0, T0, T0)
    if delete_row:
        assert statements[1] == Statement(
            "DELETE FROM search_outbox WHERE event_id = %s", (event_id,)
        )
    assert len(statements) == (2 if delete_row else 1)
    assert_well_formed(statements)


@given(name=st.one_of(st.text(max_size=70), st.from_regex(IDENTIFIER, fullmatch=True)))
def test_table_and_column_names_must_be_identifiers(name: str) -> None:
    assume(name.lower() not in THING.owned)
    ok = IDENTIFIER.fullmatch(name) is not None
    for build in (
        lambda: AggregateTable("thing", name),
        lambda: AggregateTable("thing", "t", id_column=name),
        lambda: begin_update(THING, "a", {name: 1}, T0),
    ):
        if ok:
            build()
        else:
            with pytest.raises(ValueError):
                build()


@pytest.mark.parametrize("column", [*THING.owned, "Revision", "DELETED_AT"])
def test_columns_the_writer_owns_are_refused_in_values(column: str) -> None:
    with pytest.raises(ValueError, match="written by the writer"):
        begin_create(THING, "a", {column: 1}, T0)


@pytest.mark.parametrize("bad", ["", "x" * 129, "a\x1fb", "line\n", "e\u0301"])
def test_ids_the_consumer_would_refuse_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"1\.\.128 printable characters in Unicode NFC"):
        begin_update(THING, bad, {}, T0)


def test_a_column_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        begin_update(THING, "a", {"name": 1, "NAME": 2}, T0)


def test_the_owned_columns_must_differ() -> None:
    with pytest.raises(ValueError, match="must differ"):
        AggregateTable("thing", "t", id_column="revision")


def test_no_updated_at_column_means_none_is_written() -> None:
    bare = AggregateTable("thing", "thing_row", updated_at_column=None)
    statements, _ = play(begin_create(bare, "a", {"n": 1}, T0), [None, None])
    assert (
        statements[-1].sql == "INSERT INTO `thing_row` (`id`, `revision`, `n`) VALUES (%s, %s, %s)"
    )


class ScriptedCursor:
    """A PyMySQL cursor that fails the statements whose SQL starts with `fail_on`."""

    def __init__(self, fail_on: str, error: Exception) -> None:
        self.fail_on, self.error = fail_on, error
        self.executed: list[str] = []

    def execute(self, sql: str, params: tuple[Any, ...]) -> None:
        self.executed.append(sql)
        if sql.startswith(self.fail_on):
            raise self.error

    def fetchone(self) -> None:
        return None


def test_run_plan_throws_driver_errors_into_the_plan() -> None:
    cursor = ScriptedCursor("INSERT", pymysql.err.IntegrityError(1062, "Duplicate entry"))
    with pytest.raises(AggregateExists):
        run_plan(cursor, begin_create(THING, "a", {}, T0), "write thing 'a'")
    assert len(cursor.executed) == 3
