"""`searchsync dlq inspect` and `replay` as library code (`searchsync.dlq.replay`) on fakes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaError
from searchsync.dlq.record import (
    DLQ_FORMAT,
    DLQ_FORMAT_HEADER,
    REPLAYED_FROM_HEADER,
    DlqRecord,
    encode,
)
from searchsync.dlq.replay import DlqFilter, inspect, parse_utc, replay
from searchsync.dlq.scan import DlqEntry, DlqTopic
from searchsync.dlq.summary import DlqSummary, ReplayOutcome, summary
from searchsync.errors import InvalidRequest, PoisonMessage, TransientError

from tests.fakes.kafka_admin import FakeTopics
from tests.fakes.kafka_clients import FIRST_PRODUCED_OFFSET
from tests.fakes.replay_ledger import FakeReplayLedger
from tests.unit.dlq_samples import DLQ_T0, dead_letter

DLQ = "searchsync.dlq"
T0 = DLQ_T0
T1 = datetime(2026, 2, 1, tzinfo=UTC)
EPOCH = datetime.fromtimestamp(0, UTC)  # the fakes stamp offset o at 10*o + partition ms
CLIENT = {"bootstrap.servers": "x:1"}


class Dlq(FakeTopics):
    """One DLQ topic in `FakeTopics`, with inspect, summary and replay wired to its fakes and an
    in-memory replay ledger."""

    def __init__(self) -> None:
        super().__init__()
        self.ledger = FakeReplayLedger()

    def replay(self, **kwargs: Any) -> Any:
        filters = {k: kwargs.pop(k) for k in ("error_code", "event_id") if k in kwargs}
        if filters:
            kwargs["selection"] = DlqFilter(**filters)
        return replay(
            self.dlq(DLQ, timeout_s=5.0),
            ledger=self.ledger,
            producer_factory=self.producer,
            clock=lambda: T1,
            **{"dry_run": False, **kwargs},
        )

    def inspect(self, topic: str = DLQ, **kwargs: Any) -> list[DlqEntry]:
        return inspect(self.dlq(topic), **kwargs)

    def summary(self) -> DlqSummary:
        return summary(self.dlq(DLQ), ledger=self.ledger)

    def dlq(self, topic: str, timeout_s: float = 30.0) -> DlqTopic:
        return DlqTopic(CLIENT, topic, self.admin, self.consumer, timeout_s)


def _dlq(*partitions: list[DlqRecord]) -> Dlq:
    dlq = Dlq()
    dlq.topic(
        DLQ,
        *[[encode(r) for r in records] for records in partitions],
        headers=[(DLQ_FORMAT_HEADER, DLQ_FORMAT)],
    )
    return dlq


def _numbered(n: int, partition: int, code: str = "ES_REJECTED") -> list[DlqRecord]:
    return [
        dead_letter(
            event_id=f"p{partition}-{i}",
            original_offset=100 * partition + i,
            original_partition=partition + 3,
            last_error_code=code,
            payload=f"payload {partition}/{i}".encode(),
        )
        for i in range(n)
    ]


def test_replay_reproduces_payload_key_and_partition_and_records_each_in_the_ledger() -> None:
    dlq = _dlq(_numbered(2, 0), _numbered(1, 1))
    report = dlq.replay()
    assert report.scanned == 3 and report.skipped == 0 and not report.dry_run
    (producer,) = dlq.producers
    assert producer.config["acks"] == "all" and producer.config["enable.idempotence"] is True
    sent = {(p.topic, p.partition, p.key, p.value) for p in producer.produced}
    assert sent == {
        ("outbox.event.wiki_page", 3, b"page-1", b"payload 0/0"),
        ("outbox.event.wiki_page", 3, b"page-1", b"payload 0/1"),
        ("outbox.event.wiki_page", 4, b"page-1", b"payload 1/0"),
    }
    origins = sorted(dict(p.headers or [])[REPLAYED_FROM_HEADER] for p in producer.produced)
    assert origins == [b"searchsync.dlq/0/0", b"searchsync.dlq/0/1", b"searchsync.dlq/1/0"]
    rows = dlq.ledger.replays(DLQ)
    assert sorted((r.dlq_partition, r.dlq_offset) for r in rows) == [(0, 0), (0, 1), (1, 0)]
    assert {r.run_id for r in rows} == {report.run_id} and all(r.replayed_at == T1 for r in rows)
    by_event = {r.event_id: r for r in rows}
    assert by_event["p1-0"].replayed_to_topic == "outbox.event.wiki_page"
    assert by_event["p1-0"].replayed_to_partition == 4
    assert by_event["p1-0"].source_revision == 7 and by_event["p1-0"].error_code == "ES_REJECTED"
    assert dlq.commits == {}  # the ledger, not a consumer group, says what was replayed
    assert dlq.consumers[0].config["enable.auto.commit"] is False
    assert dlq.consumers[0].closed


def test_the_same_selection_again_replays_nothing_unless_again() -> None:
    dlq = _dlq(_numbered(2, 0))
    assert len(dlq.replay(error_code="ES_REJECTED").replayed) == 2
    second = dlq.replay(error_code="ES_REJECTED")
    assert second.replayed == () and second.nothing_new
    assert [e.offset for e in second.already_replayed] == [0, 1]
    assert all(len(e.replays) == 1 for e in second.already_replayed)
    assert len(dlq.producers[1].produced) == 0
    third = dlq.replay(error_code="ES_REJECTED", again=True)
    assert [e.offset for e in third.replayed] == [0, 1] and not third.nothing_new
    assert len(dlq.ledger.replays(DLQ)) == 4


def test_replay_resumes_after_a_limit_and_picks_up_new_dead_letters() -> None:
    dlq = _dlq(_numbered(3, 0))
    assert len(dlq.replay(limit=2).replayed) == 2
    second = dlq.replay()
    assert [e.record.event_id for e in second.replayed] == ["p0-2"]
    assert len(second.already_replayed) == 2
    dlq.logs[DLQ][0].append((encode(dead_letter(event_id="new")), []))
    assert [e.record.event_id for e in dlq.replay().replayed] == ["new"]


def test_dry_run_neither_produces_nor_records() -> None:
    dlq = _dlq(_numbered(2, 0))
    report = dlq.replay(dry_run=True)
    assert report.dry_run and [e.record.event_id for e in report.replayed] == ["p0-0", "p0-1"]
    assert dlq.producers == [] and dlq.ledger.entries == []


def test_a_filtered_replay_leaves_skipped_records_replayable_and_does_not_repeat_its_own() -> None:
    records = _numbered(3, 0)
    records[1] = replace(records[1], last_error_code="TRUTH_LAGGING")
    dlq = _dlq(records, _numbered(1, 1))
    report = dlq.replay(error_code="ES_REJECTED")
    assert sorted(e.record.event_id or "" for e in report.replayed) == ["p0-0", "p0-2", "p1-0"]
    assert report.skipped == 1
    assert dlq.ledger.entries[0].selection == {"error_code": "ES_REJECTED"}
    rest = dlq.replay()  # unfiltered: only the one the first replay skipped
    assert [e.record.event_id for e in rest.replayed] == ["p0-1"]
    assert len(rest.already_replayed) == 3


def test_filters_by_type_id_and_time() -> None:
    records = [
        dead_letter(event_id="a", aggregate_type="article", last_failed_at=T0),
        dead_letter(event_id="b", aggregate_id="page-2", last_failed_at=T0 + timedelta(hours=1)),
        dead_letter(event_id="c", last_failed_at=T0 + timedelta(hours=2)),
    ]
    dlq = _dlq(records)

    def picked(**filters: Any) -> list[str | None]:
        entries = dlq.inspect(limit=10, from_beginning=True, selection=DlqFilter(**filters))
        return [e.record.event_id for e in entries]

    assert picked(aggregate_type="article") == ["a"]
    assert picked(aggregate_id="page-2") == ["b"]
    assert picked(since=T0 + timedelta(hours=1)) == ["b", "c"]
    assert picked(until=T0 + timedelta(hours=1)) == ["a"]
    assert picked(aggregate_type="wiki_page", aggregate_id="page-1") == ["c"]
    newest = dlq.inspect(limit=1, from_beginning=False, selection=DlqFilter(aggregate_id="page-1"))
    assert [e.record.event_id for e in newest] == ["c"]
    report = dlq.replay(selection=DlqFilter(since=T0 + timedelta(minutes=30)))
    assert [e.record.event_id for e in report.replayed] == ["b", "c"]
    assert dlq.ledger.entries[0].selection == {"since": "2026-01-02T03:34:05.678901+00:00"}


def test_a_time_filter_needs_a_time_zone_and_an_order() -> None:
    assert parse_utc("2026-11-30T12:00:00Z") == datetime(2026, 11, 30, 12, tzinfo=UTC)
    with pytest.raises(InvalidRequest, match="no time zone"):
        parse_utc("2026-11-30T12:00:00")
    with pytest.raises(InvalidRequest, match="ISO-8601"):
        parse_utc("yesterday")
    with pytest.raises(InvalidRequest, match="not before"):
        DlqFilter(since=T0, until=T0)


def test_failed_re_produce_stops_without_recording_that_record() -> None:
    dlq = _dlq(_numbered(2, 0))
    dlq.delivery_error = KafkaError(KafkaError._MSG_TIMED_OUT)
    with pytest.raises(TransientError) as caught:
        dlq.replay()
    assert caught.value.code == "REPLAY_FAILED"
    assert dlq.ledger.entries == []


def test_replay_refuses_a_foreign_record_instead_of_skipping_it() -> None:
    dlq = Dlq()
    dlq.topic(DLQ, [b"\x01\x02 not avro"])
    with pytest.raises(PoisonMessage) as caught:
        dlq.replay()
    assert caught.value.code == "BAD_DLQ_RECORD"
    assert "searchsync.dlq/0/0" in caught.value.message
    assert dlq.ledger.entries == []


def test_inspect_marks_replayed_records_and_dead_letters_of_a_replay() -> None:
    dlq = _dlq(_numbered(2, 0))
    dlq.replay(event_id="p0-0")
    [row] = dlq.ledger.entries
    assert row.replayed_to_offset == FIRST_PRODUCED_OFFSET  # as the delivery report said
    again = replace(
        _numbered(1, 0)[0],
        original_partition=row.replayed_to_partition,
        original_offset=FIRST_PRODUCED_OFFSET,
    )
    dlq.logs[DLQ][0].append((encode(again), []))
    entries = dlq.inspect(limit=10, from_beginning=True, ledger=dlq.ledger)
    assert [e.replayed for e in entries] == [True, False, False]
    assert entries[0].replays == (row,)
    assert [e.from_replay for e in entries] == [None, None, row]


def test_summary_counts_and_replay_outcomes() -> None:
    records = _numbered(3, 0)
    records[2] = replace(records[2], last_error_code="PROJECTION_ERROR", aggregate_type=None)
    records[1] = replace(records[1], aggregate_id="page-2", last_failed_at=T0 + timedelta(days=1))
    dlq = _dlq(records)
    dlq.replay(error_code="ES_REJECTED")  # p0-0 (page-1) and p0-1 (page-2), both revision 7
    rows = {r.event_id: r for r in dlq.ledger.entries}
    dlq.ledger.indexed[("wiki_page", "page-1")] = 7  # the consumer indexed page-1 at 7
    dlq.ledger.indexed[("wiki_page", "page-2")] = 6  # page-2 not yet
    result = dlq.summary()
    assert result.exists and result.total == 3
    assert result.by_code == {"ES_REJECTED": 2, "PROJECTION_ERROR": 1}
    assert result.by_type == {"wiki_page": 2, "(unknown)": 1}
    assert result.oldest_failed_at == T0 + timedelta(seconds=30)
    assert result.newest_failed_at == T0 + timedelta(days=1)
    assert result.oldest_timestamp is not None and result.newest_timestamp is not None
    assert result.oldest_timestamp < result.newest_timestamp
    assert result.replayed == 2 and result.from_replays == 0
    outcome = {s.replay.event_id: s.outcome for s in result.replays}
    assert outcome == {"p0-0": ReplayOutcome.INDEXED, "p0-1": ReplayOutcome.PENDING}
    # page-2's replayed message fails again: a new dead letter at the replay's position
    target = rows["p0-1"]
    again = replace(
        records[1],
        original_topic=target.replayed_to_topic,
        original_partition=target.replayed_to_partition,
        original_offset=target.replayed_to_offset or 0,
    )
    dlq.logs[DLQ][0].append((encode(again), []))
    result = dlq.summary()
    by_event = {s.replay.event_id: s for s in result.replays}
    assert by_event["p0-1"].outcome is ReplayOutcome.DEAD_LETTERED_AGAIN
    assert by_event["p0-1"].dead_letter == (0, 3)
    assert result.from_replays == 1 and result.outcomes["dead_lettered_again"] == 1
    assert result.as_json()["replay_outcomes"] == {
        "indexed": 1,
        "dead_lettered_again": 1,
        "pending": 0,
        "unknown": 0,
    }


def test_summary_without_an_offset_falls_back_to_the_event_id_after_the_replay() -> None:
    dlq = _dlq(_numbered(1, 0))
    dlq.replay()
    [row] = dlq.ledger.entries
    dlq.ledger.entries = [replace(row, replayed_to_offset=None, replayed_at=EPOCH)]
    dlq.logs[DLQ][0].append((encode(_numbered(1, 0)[0]), []))  # same event id, later
    [status] = dlq.summary().replays
    assert status.outcome is ReplayOutcome.DEAD_LETTERED_AGAIN


def test_summary_before_the_first_dead_letter() -> None:
    result = Dlq().summary()
    assert not result.exists and result.total == 0 and result.replays == ()
    assert result.as_json()["by_code"] == {}


def test_inspect_oldest_and_newest() -> None:
    dlq = _dlq(_numbered(3, 0), _numbered(3, 1))
    oldest = dlq.inspect(limit=2, from_beginning=True)
    assert [e.record.event_id for e in oldest] == ["p0-0", "p1-0"]
    newest = dlq.inspect(limit=2, from_beginning=False)
    assert [e.record.event_id for e in newest] == ["p0-2", "p1-2"]  # by timestamp, newest last
    everything = dlq.inspect(limit=100, from_beginning=True)
    assert len(everything) == 6
    assert dlq.commits == {}
    assert all(c.closed for c in dlq.consumers)
    assert dlq.consumers[0].config["group.id"] == f"{DLQ}.inspect"
    assert dlq.consumers[0].config["enable.partition.eof"] is True


def test_inspect_reads_only_what_the_retention_kept() -> None:
    dlq = _dlq(_numbered(4, 0))
    dlq.low[(DLQ, 0)] = 2  # offsets 0 and 1 were deleted by retention
    kept = dlq.inspect(limit=10, from_beginning=True)
    assert [e.record.event_id for e in kept] == ["p0-2", "p0-3"]


def test_before_the_first_dead_letter_there_is_nothing_to_inspect_or_replay() -> None:
    dlq = _dlq(_numbered(1, 0))
    assert dlq.inspect("nope.dlq", limit=5, from_beginning=True) == []
    assert dlq.inspect("nope.dlq", limit=5, from_beginning=False) == []
    report = replay(
        dlq.dlq("nope.dlq"), ledger=dlq.ledger, dry_run=False, producer_factory=dlq.producer
    )
    assert (report.scanned, report.replayed, report.skipped) == (0, (), 0)
    assert dlq.consumers == [] and dlq.producers == []  # nothing was even opened
