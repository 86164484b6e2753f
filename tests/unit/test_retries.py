"""The retry schedule: works wait by due time, and the waits of one cause can end at once."""

from __future__ import annotations

import random

from searchsync.errors import ErrorCode
from searchsync.kafka.intake import RawMessage
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.stream.work_state import WorkState
from searchsync.types import Operation, ThinEvent

TOPIC = "t"


def _work(state: WorkState, aggregate_id: str, partition: int, offset: int) -> Work:
    event = ThinEvent(f"e{offset}", "wiki_page", aggregate_id, Operation.UPSERT, 1)
    state.admit([(RawMessage(TOPIC, partition, offset, None, b"", None), event)])
    [work] = state.take(10)
    return work


def test_release_now_ends_only_the_waits_of_that_code_and_counts_stay_right() -> None:
    now = [0.0]
    retry = RetryPolicy(1.0, 30.0, 3, 0.0, random.Random(0))
    state = WorkState(max_in_flight=100, max_queued=1000, retry=retry, clock=lambda: now[0])
    state.assign([(TOPIC, 0), (TOPIC, 1)])
    fenced_a = _work(state, "a", 0, 0)
    fenced_b = _work(state, "b", 1, 1)
    other = _work(state, "c", 0, 2)
    state.retry(fenced_a, 30.0, ErrorCode.SCHEMA_FENCED, systemic=True)
    state.retry(fenced_b, 30.0, ErrorCode.SCHEMA_FENCED, systemic=True)
    state.retry(other, 30.0, ErrorCode.ES_429, systemic=True)
    assert state.waiting(ErrorCode.SCHEMA_FENCED) == 2 and state.waiting(ErrorCode.ES_429) == 1

    state.revoke({(TOPIC, 1)})  # b's partition was revoked: its retry and its events dropped
    assert state.waiting(ErrorCode.SCHEMA_FENCED) == 1 and state.waiting(ErrorCode.ES_429) == 1

    assert state.release_now([ErrorCode.SCHEMA_FENCED]) == 1
    assert [w.key.aggregate_id for w in state.take(10)] == ["a"]
    assert state.waiting(ErrorCode.SCHEMA_FENCED) == 0 and state.waiting(ErrorCode.ES_429) == 1
    assert state.release_now([ErrorCode.SCHEMA_FENCED]) == 0

    state.release_due()
    assert state.take(10) == []  # the 429 wait is not over yet
    now[0] = 30.0
    state.release_due()
    assert [w.key.aggregate_id for w in state.take(10)] == ["c"]
    assert state.waiting(ErrorCode.ES_429) == 0
