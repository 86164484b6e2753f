"""`searchsync dlq inspect` and `replay` as library code (`consumer.ops.dlq`), against fakes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaError
from kafka_fakes import FakeTopics

from consumer.errors import PoisonMessage, TransientError
from consumer.ops.dlq import inspect, replay
from consumer.stream.dlq import (
    DLQ_FORMAT,
    DLQ_FORMAT_HEADER,
    REPLAYED_FROM_HEADER,
    DlqRecord,
    encode,
)
from consumer.types import Operation, ThinEvent

DLQ = "searchsync.dlq"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
CLIENT = {"bootstrap.servers": "x:1"}


def _record(**changes: Any) -> DlqRecord:
    base = DlqRecord.for_message(
        topic="outbox.event.wiki_page",
        partition=1,
        offset=42,
        key=b"page-1",
        value=b'{"event_id": "e1"}',
        consumer_group="searchsync",
        error_code="ES_REJECTED",
        error_message="mapper_parsing_exception",
        attempts=3,
        first_failed_at=T0,
        last_failed_at=T0 + timedelta(seconds=30),
        event=ThinEvent("e1", "wiki_page", "page-1", Operation.UPSERT, 7),
        projection_schema_version=2,
    )
    return replace(base, **changes)


class Dlq(FakeTopics):
    """One DLQ topic in `FakeTopics`, with inspect and replay wired to its fakes."""

    @property
    def commits_of_replay(self) -> dict[int, int]:
        return {p: o for (_t, p), o in self.committed_by(f"{DLQ}.replay").items()}

    def replay(self, **kwargs: Any) -> Any:
        return replay(
            CLIENT,
            DLQ,
            admin_factory=self.admin,
            consumer_factory=self.consumer,
            producer_factory=self.producer,
            timeout_s=5.0,
            **{"dry_run": False, **kwargs},
        )

    def inspect(self, topic: str = DLQ, **kwargs: Any) -> list[DlqRecord]:
        return inspect(
            CLIENT, topic, admin_factory=self.admin, consumer_factory=self.consumer, **kwargs
        )


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
        _record(
            event_id=f"p{partition}-{i}",
            original_offset=100 * partition + i,
            original_partition=partition + 3,
            last_error_code=code,
            payload=f"payload {partition}/{i}".encode(),
        )
        for i in range(n)
    ]


def test_replay_reproduces_payload_key_and_partition_then_commits() -> None:
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
    assert dlq.commits_of_replay == {0: 2, 1: 1}
    assert dlq.consumers[0].config["group.id"] == "searchsync.dlq.replay"
    assert dlq.consumers[0].config["enable.auto.commit"] is False
    assert dlq.consumers[0].closed


def test_replay_resumes_from_its_commits() -> None:
    dlq = _dlq(_numbered(3, 0))
    assert len(dlq.replay(limit=2).replayed) == 2
    assert dlq.commits_of_replay == {0: 2}
    second = dlq.replay()
    assert [r.event_id for r in second.replayed] == ["p0-2"]
    assert dlq.replay().scanned == 0


def test_dry_run_neither_produces_nor_commits() -> None:
    dlq = _dlq(_numbered(2, 0))
    report = dlq.replay(dry_run=True)
    assert report.dry_run and [r.event_id for r in report.replayed] == ["p0-0", "p0-1"]
    assert dlq.producers == [] and dlq.commits_of_replay == {}


def test_filtered_replay_does_not_commit_past_a_skipped_record() -> None:
    records = _numbered(3, 0)
    records[1] = replace(records[1], last_error_code="TRUTH_LAGGING")
    dlq = _dlq(records, _numbered(1, 1))
    report = dlq.replay(error_code="ES_REJECTED")
    assert [r.event_id for r in report.replayed] == ["p0-0", "p1-0", "p0-2"]
    assert report.skipped == 1
    assert dlq.commits_of_replay == {
        0: 1,
        1: 1,
    }  # p0-2 was replayed but p0-1 is still owed a replay
    by_event = dlq.replay(dry_run=True, event_id="p0-1")
    assert [r.event_id for r in by_event.replayed] == ["p0-1"]


def test_failed_re_produce_stops_without_committing_that_record() -> None:
    dlq = _dlq(_numbered(2, 0))
    dlq.delivery_error = KafkaError(KafkaError._MSG_TIMED_OUT)
    with pytest.raises(TransientError) as caught:
        dlq.replay()
    assert caught.value.code == "REPLAY_FAILED"
    assert dlq.commits_of_replay == {}


def test_replay_refuses_a_foreign_record_instead_of_skipping_it() -> None:
    dlq = Dlq()
    dlq.topic(DLQ, [b"\x01\x02 not avro"])
    with pytest.raises(PoisonMessage) as caught:
        dlq.replay()
    assert caught.value.code == "BAD_DLQ_RECORD"
    assert "searchsync.dlq/0/0" in caught.value.message
    assert dlq.commits_of_replay == {}


def test_inspect_oldest_and_newest() -> None:
    dlq = _dlq(_numbered(3, 0), _numbered(3, 1))
    oldest = dlq.inspect(limit=2, from_beginning=True)
    assert [r.event_id for r in oldest] == ["p0-0", "p1-0"]
    newest = dlq.inspect(limit=2, from_beginning=False)
    assert [r.event_id for r in newest] == ["p0-2", "p1-2"]  # by timestamp, newest last
    everything = dlq.inspect(limit=100, from_beginning=True)
    assert len(everything) == 6
    assert dlq.commits == {}
    assert all(c.closed for c in dlq.consumers)
    assert dlq.consumers[0].config["group.id"] == f"{DLQ}.inspect"
    assert dlq.consumers[0].config["enable.partition.eof"] is True


def test_inspect_reads_only_what_the_retention_kept() -> None:
    dlq = _dlq(_numbered(4, 0))
    dlq.low[(DLQ, 0)] = 2  # offsets 0 and 1 were deleted by retention
    assert [r.event_id for r in dlq.inspect(limit=10, from_beginning=True)] == ["p0-2", "p0-3"]


def test_before_the_first_dead_letter_there_is_nothing_to_inspect_or_replay() -> None:
    dlq = _dlq(_numbered(1, 0))
    assert dlq.inspect("nope.dlq", limit=5, from_beginning=True) == []
    assert dlq.inspect("nope.dlq", limit=5, from_beginning=False) == []
    report = replay(
        CLIENT,
        "nope.dlq",
        dry_run=False,
        admin_factory=dlq.admin,
        consumer_factory=dlq.consumer,
        producer_factory=dlq.producer,
    )
    assert (report.scanned, report.replayed, report.skipped) == (0, (), 0)
    assert dlq.consumers == [] and dlq.producers == []  # nothing was even opened
