"""A partition whose committed offset lies below the log start is blocked, never skipped
(docs/design.md, invariant 14): checked on assignment and on librdkafka's out-of-range error,
over the fake confluent consumer of `test_intake`. No broker is needed."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from confluent_kafka import OFFSET_BEGINNING
from searchsync.kafka.gaps import RECOVERY, GapBoard, HistoryGap
from searchsync.observability.metrics import Metrics
from test_intake import TOPIC, TP0, TP1, _intake

COOPERATIVE = {
    "group.id": "g",
    "partition.assignment.strategy": "cooperative-sticky",
    "auto.offset.reset": "error",
}


class Observer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    def set_blocked(
        self, topic: str, partition: int, missing: int | None, *, lineage: bool = False
    ) -> None:
        self.calls.append((topic, partition, missing))


async def test_a_partition_below_the_log_start_is_blocked_and_the_others_are_read() -> None:
    intake, consumer, _listener, log = await _intake({TP1: 6}, config=COOPERATIVE)
    consumer.committed_at = {TP0: 3, TP1: 5}
    consumer.log_start = {TP0: 10, TP1: 0}
    consumer.assign([TP0, TP1])
    await intake.consume(10, 0.0)
    # only TP1 is assigned, at its committed offset; TP0 is held but never fetched
    assert consumer.local == [("assign", [(TP1, 5)])]
    assert log == [f"assigned {[TP1]}"]
    board = intake.guard.board
    assert board.blocked() == [HistoryGap(TOPIC, 0, 3, 10)]
    [reason] = board.reasons()
    assert f"{TOPIC}[0] blocked" in reason and "7 record(s)" in reason
    assert "--accept-gap" in reason and "searchsync rebuild" in reason

    consumer.revoke([TP0, TP1])
    await intake.consume(10, 0.0)
    # librdkafka never assigned TP0: the rest is unassigned by the intake, the pipeline drains TP1
    assert consumer.local[-1] == ("unassign", [(TP1, -1001)])
    assert log[1:] == [
        f"revoking {[TP1]}",
        "drained",
        f"commit {[(TP1, 6)]}",
        f"revoked {[TP1]} lost=False",
    ]
    assert board.blocked() == []  # its new owner says it again
    consumer.assignment = []
    await intake.close()


async def test_a_partition_never_committed_starts_where_the_setting_says() -> None:
    intake, consumer, _listener, log = await _intake({}, config=COOPERATIVE)
    consumer.committed_at = {TP1: 5}
    consumer.assign([TP0, TP1])
    await intake.consume(10, 0.0)
    assert consumer.local == [("assign", [(TP0, OFFSET_BEGINNING), (TP1, 5)])]
    assert log == [f"assigned {[TP0, TP1]}"]
    assert intake.guard.board.blocked() == []
    consumer.assignment = []
    await intake.close()


async def test_without_a_gap_librdkafka_keeps_its_own_assignment() -> None:
    intake, consumer, _listener, log = await _intake({})
    consumer.committed_at = {TP0: 4}
    consumer.assign([TP0])
    await intake.consume(10, 0.0)
    assert consumer.local == []
    assert log == [f"assigned {[TP0]}"]
    consumer.assignment = []
    await intake.close()


def _reset_error(offset: int) -> SimpleNamespace:
    return SimpleNamespace(topic=lambda: TOPIC, partition=lambda: 0, offset=lambda: offset)


async def test_an_out_of_range_position_below_the_log_start_blocks_and_none_starts_fresh() -> None:
    intake, consumer, _listener, _log = await _intake({}, config=COOPERATIVE)
    consumer.log_start = {TP0: 50}
    intake.guard.out_of_range(consumer, _reset_error(40))  # retention overtook a lagging reader
    assert intake.guard.board.blocked() == [HistoryGap(TOPIC, 0, 40, 50)]
    assert consumer.sought == []
    intake.guard.board.release([TP0])
    intake.guard.out_of_range(consumer, _reset_error(-1001))  # no committed offset at all
    assert intake.guard.board.blocked() == []
    assert consumer.sought == [(TP0, OFFSET_BEGINNING)]
    await intake.close()


def test_the_board_logs_a_gap_once_and_shows_it_until_released(
    caplog: pytest.LogCaptureFixture,
) -> None:
    observer = Observer()
    board = GapBoard(observer)
    gap = HistoryGap(TOPIC, 1, 100, 250)
    with caplog.at_level(logging.ERROR, logger="searchsync.kafka.gaps"):
        board.block(gap)
        board.block(gap)
    [record] = caplog.records
    assert "150 record(s)" in record.getMessage() and RECOVERY in record.getMessage()
    assert board.blocked() == [gap]
    board.release([TP0, TP1])
    assert observer.calls == [(TOPIC, 1, 150), (TOPIC, 1, 150), (TOPIC, 1, None)]
    assert board.blocked() == []


def test_the_blocked_gauges_show_the_gap_and_vanish_when_released() -> None:
    metrics = Metrics()
    metrics.set_blocked(TOPIC, 3, 42)
    text = metrics.render().decode()
    assert f'searchsync_partition_blocked{{partition="3",topic="{TOPIC}"}} 1.0' in text
    assert f'searchsync_partition_gap_records{{partition="3",topic="{TOPIC}"}} 42.0' in text
    metrics.set_blocked(TOPIC, 3, None)
    assert 'partition="3"' not in metrics.render().decode()
