"""The `StateRecorder` (``search_projection_state``) contract: each case takes a
`ProjectionStateWorld` and runs unchanged against `FakeProjectionState`
(tests/unit/test_mysql_contracts.py) and `ProjectionStateWriter` on MariaDB
(tests/integration/test_mysql_contracts_real.py). Times are explicit (`StateUpdate.at`, naive UTC
as the columns hold them), so no case depends on a clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from searchsync.errors import MAX_ERROR_MESSAGE
from searchsync.mysql.projection_state import StateUpdate

from tests.fakes.projection_state import FakeProjectionState, ProjectionState

TYPE = "contract_state"
T0 = datetime(2026, 3, 1, 12, 0, 0)


def failing(state: ProjectionState) -> bool:
    """The last outcome recorded was an error."""
    if state.last_error_at is None:
        return False
    return state.last_success_at is None or state.last_error_at > state.last_success_at


class ProjectionStateWorld(Protocol):
    state: FakeProjectionState  # or a recorder with the same read of the rows
    prefix: str
    """Every aggregate id a case writes starts with it."""


class FakeProjectionStateWorld:
    def __init__(self, prefix: str = "c-") -> None:
        self.state = FakeProjectionState()
        self.prefix = prefix


def success(key: str, revision: int, digest: str, *, version: int = 1, at: int = 0) -> StateUpdate:
    return StateUpdate(
        TYPE, key, revision, revision, version, digest * 64, at=T0 + timedelta(seconds=at)
    )


def failure(key: str, revision: int, code: str, message: str, *, at: int = 0) -> StateUpdate:
    return StateUpdate(
        TYPE, key, revision, error_code=code, error_message=message, at=T0 + timedelta(seconds=at)
    )


async def contract_a_success_is_read_back(w: ProjectionStateWorld) -> None:
    key = w.prefix + "a"
    await w.state.record([success(key, 3, "c", version=2, at=1)])
    state = (await w.state.read(TYPE, [key, w.prefix + "none"]))[key]
    assert (state.aggregate_type, state.aggregate_id) == (TYPE, key)
    assert (state.source_revision, state.indexed_revision) == (3, 3)
    assert (state.projection_schema_version, state.projection_hash) == (2, "c" * 64)
    assert state.last_success_at == T0 + timedelta(seconds=1)
    assert state.last_error_code is None and not failing(state)
    assert await w.state.read(TYPE, [w.prefix + "none"]) == {}
    assert await w.state.read(TYPE, []) == {}


async def contract_revisions_never_go_down(w: ProjectionStateWorld) -> None:
    key = w.prefix + "b"
    await w.state.record([success(key, 5, "e", at=1)])
    await w.state.record([success(key, 4, "d", at=2)])  # stale: only last_success_at moves
    await w.state.record([StateUpdate(TYPE, key, 2)])  # seen, lower
    state = (await w.state.read(TYPE, [key]))[key]
    assert (state.source_revision, state.indexed_revision, state.projection_hash) == (
        5,
        5,
        "e" * 64,
    )
    assert state.last_success_at == T0 + timedelta(seconds=2)
    await w.state.record([StateUpdate(TYPE, key, 9)])  # seen, higher
    state = (await w.state.read(TYPE, [key]))[key]
    assert (state.source_revision, state.indexed_revision) == (9, 5)


async def contract_the_same_revision_with_a_new_schema_replaces_the_hash(
    w: ProjectionStateWorld,
) -> None:
    key = w.prefix + "s"
    await w.state.record([success(key, 4, "a", version=1)])
    await w.state.record([success(key, 4, "b", version=2, at=1)])
    state = (await w.state.read(TYPE, [key]))[key]
    assert (state.projection_schema_version, state.projection_hash) == (2, "b" * 64)


async def contract_errors_are_history_and_cut_to_the_column(w: ProjectionStateWorld) -> None:
    key = w.prefix + "e"
    await w.state.record([success(key, 2, "b", at=1)])
    await w.state.record([failure(key, 3, "ES_429", "x" * 5000, at=2)])
    state = (await w.state.read(TYPE, [key]))[key]
    assert failing(state) and state.last_error_code == "ES_429"
    assert state.last_error_message == "x" * MAX_ERROR_MESSAGE
    assert state.last_error_at == T0 + timedelta(seconds=2)
    assert (state.source_revision, state.indexed_revision) == (3, 2)
    await w.state.record([success(key, 3, "c", at=3)])
    state = (await w.state.read(TYPE, [key]))[key]
    assert not failing(state) and state.last_error_code == "ES_429"  # kept as history
    assert state.indexed_revision == 3


async def contract_one_call_applies_many_in_order(w: ProjectionStateWorld) -> None:
    keys = [w.prefix + f"m{n}" for n in range(5)]
    batch = [success(k, n + 1, "a", at=1) for n, k in enumerate(keys)]
    batch += [success(keys[0], 7, "f", at=2), success(keys[0], 6, "e", at=3)]
    await w.state.record(batch)
    await w.state.record([])
    states = await w.state.read(TYPE, [*keys, keys[0]])
    assert sorted(states) == sorted(keys)
    assert (states[keys[0]].indexed_revision, states[keys[0]].projection_hash) == (7, "f" * 64)
    assert states[keys[0]].last_success_at == T0 + timedelta(seconds=3)
    assert [states[k].indexed_revision for k in keys[1:]] == [2, 3, 4, 5]


PROJECTION_STATE_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_a_success_is_read_back,
    contract_revisions_never_go_down,
    contract_the_same_revision_with_a_new_schema_replaces_the_hash,
    contract_errors_are_history_and_cut_to_the_column,
    contract_one_call_applies_many_in_order,
]
