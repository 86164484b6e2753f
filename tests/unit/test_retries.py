"""The retry queue: works wait by due time, and the waits of one cause can end at once."""

from __future__ import annotations

from searchsync.errors import ErrorCode
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.retries import RetryQueue
from searchsync.types import Operation, Position, ThinEvent

TOPIC = "t"


def _work(coalescer: Coalescer, aggregate_id: str, partition: int, offset: int) -> object:
    event = ThinEvent(f"e{offset}", "wiki_page", aggregate_id, Operation.UPSERT, 1)
    coalescer.add(event, Position(TOPIC, partition, offset))
    [work] = coalescer.take_ready(10)
    return work


def test_release_now_ends_only_the_waits_of_that_code_and_counts_stay_right() -> None:
    now = [0.0]
    coalescer = Coalescer(100, 1000)
    queue = RetryQueue(coalescer, lambda: now[0])
    fenced_a = _work(coalescer, "a", 0, 0)
    fenced_b = _work(coalescer, "b", 1, 1)
    other = _work(coalescer, "c", 0, 2)
    queue.schedule(fenced_a, 30.0, ErrorCode.SCHEMA_FENCED)  # type: ignore[arg-type]
    queue.schedule(fenced_b, 30.0, ErrorCode.SCHEMA_FENCED)  # type: ignore[arg-type]
    queue.schedule(other, 30.0, ErrorCode.ES_429)  # type: ignore[arg-type]
    assert queue.waiting(ErrorCode.SCHEMA_FENCED) == 2 and len(queue) == 3

    queue.drop({(TOPIC, 1)})  # b's partition was revoked (then dropped, as Assignment does)
    coalescer.drop_partition(TOPIC, 1)
    assert queue.waiting(ErrorCode.SCHEMA_FENCED) == 1 and len(queue) == 2

    assert queue.release_now(ErrorCode.SCHEMA_FENCED) == 1
    assert [w.key.aggregate_id for w in coalescer.take_ready(10)] == ["a"]
    assert queue.waiting(ErrorCode.SCHEMA_FENCED) == 0 and len(queue) == 1
    assert queue.release_now(ErrorCode.SCHEMA_FENCED) == 0

    queue.release_due()
    assert coalescer.take_ready(10) == []  # the 429 wait is not over yet
    now[0] = 30.0
    queue.release_due()
    assert [w.key.aggregate_id for w in coalescer.take_ready(10)] == ["c"]
    assert len(queue) == 0 and queue.waiting(ErrorCode.ES_429) == 0
