"""The DLQ against a real broker: acknowledged send, inspect read-back, replay to the origin."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from searchsync.dlq.record import REPLAYED_FROM_HEADER, DlqProducer, DlqRecord
from searchsync.dlq.replay import inspect, replay
from searchsync.dlq.scan import DlqTopic
from searchsync.errors import TransientError
from searchsync.events import encode_json
from searchsync.kafka.admin import Watermarks
from searchsync.types import Operation, ThinEvent

from tests.fakes.replay_ledger import FakeReplayLedger
from tests.integration.kafkatools import fresh_topics, high_watermark, kafka_admin
from tests.timing import deadline as deadline_after

pytestmark = pytest.mark.integration

BOOTSTRAP = "127.0.0.1:9092"
CLIENT = {"bootstrap.servers": BOOTSTRAP}
T0 = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


@pytest.fixture
def topics() -> Iterator[tuple[str, str]]:
    """A fresh (original topic with 2 partitions, DLQ topic) pair, deleted afterwards."""
    suffix = uuid.uuid4().hex[:12]
    original, dlq = f"it.outbox.event.{suffix}", f"it.searchsync.{suffix}.dlq"
    with fresh_topics(BOOTSTRAP, [(original, 2), (dlq, 1)]):
        yield original, dlq


def _dead_letter(original: str, offset: int, partition: int = 1) -> DlqRecord:
    event = ThinEvent(f"evt-{offset}", "wiki_page", f"page-{offset}", Operation.UPSERT, offset + 1)
    return DlqRecord.for_message(
        topic=original,
        partition=partition,
        offset=offset,
        key=f"page-{offset}".encode(),
        value=encode_json(event),
        consumer_group="searchsync",
        error_code="ES_REJECTED",
        error_message="mapper_parsing_exception",
        attempts=5,
        first_failed_at=T0,
        last_failed_at=T0,
        event=event,
        projection_schema_version=1,
    )


def _high_watermark(topic: str, partition: int) -> int:
    return high_watermark(BOOTSTRAP, topic, partition)


def _read_all(topic: str, partitions: int, expected: int) -> list[Any]:
    """Every message of `topic` until `expected` arrived (deadline, not a sleep)."""
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"it-{uuid.uuid4().hex}"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: list[Any] = []
    deadline = deadline_after(30)
    try:
        while len(found) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                found.append(message)
    finally:
        consumer.close()
    return found


async def test_send_resolves_after_ack_and_inspect_reads_it_back(topics: tuple[str, str]) -> None:
    original, dlq = topics
    producer = DlqProducer({"bootstrap.servers": BOOTSTRAP}, topic=dlq)
    record = _dead_letter(original, offset=41)
    await producer.send(record, record.original_key)
    # Resolved means acknowledged with acks=all: the broker already has it, no waiting needed.
    assert _high_watermark(dlq, 0) == 1
    assert await producer.close(10) == 0

    [oldest] = inspect(DlqTopic(CLIENT, dlq), limit=10, from_beginning=True)
    [newest] = inspect(DlqTopic(CLIENT, dlq), limit=10, from_beginning=False)
    assert oldest.record == newest.record == record
    assert (oldest.partition, oldest.offset) == (0, 0) and oldest.timestamp is not None


async def test_oversized_dead_letter_is_a_transient_error(topics: tuple[str, str]) -> None:
    original, dlq = topics
    producer = DlqProducer({"bootstrap.servers": BOOTSTRAP, "message.max.bytes": 1000}, topic=dlq)
    record = replace(_dead_letter(original, offset=1), payload=b"x" * 5000)
    with pytest.raises(TransientError) as caught:
        await producer.send(record, None)
    assert caught.value.code == "DLQ_PRODUCE_FAILED"
    await producer.close(10)
    assert _high_watermark(dlq, 0) == 0


async def test_replay_reproduces_the_original_message_and_resumes(
    topics: tuple[str, str],
) -> None:
    original, dlq = topics
    producer = DlqProducer({"bootstrap.servers": BOOTSTRAP}, topic=dlq)
    poison = DlqRecord.for_message(
        topic=original,
        partition=0,
        offset=7,
        key=None,
        value=b"\xffnot json at all",
        consumer_group="searchsync",
        error_code="BAD_JSON",
        error_message="not valid JSON",
        attempts=1,
        first_failed_at=T0,
        last_failed_at=T0,
    )
    dead = [_dead_letter(original, offset=3), poison]
    for record in dead:
        await producer.send(record, record.original_key)
    assert await producer.close(10) == 0

    ledger = FakeReplayLedger()
    dry = replay(DlqTopic(CLIENT, dlq), ledger=ledger, dry_run=True)
    assert [e.record for e in dry.replayed] == dead
    assert _high_watermark(original, 0) == _high_watermark(original, 1) == 0

    first = replay(DlqTopic(CLIENT, dlq), ledger=ledger, dry_run=False, limit=1)
    assert [e.record for e in first.replayed] == [dead[0]]
    second = replay(DlqTopic(CLIENT, dlq), ledger=ledger, dry_run=False)  # the ledger has the first
    assert [e.record for e in second.replayed] == [dead[1]]
    assert replay(DlqTopic(CLIENT, dlq), ledger=ledger, dry_run=False).nothing_new
    # the broker's offsets of the re-produced messages are in the ledger
    assert sorted((e.replayed_to_partition, e.replayed_to_offset) for e in ledger.entries) == [
        (0, 0),
        (1, 0),
    ]

    messages = _read_all(original, partitions=2, expected=2)
    got = {(m.partition(), m.key(), m.value()) for m in messages}
    assert got == {(1, b"page-3", dead[0].payload), (0, None, poison.payload)}
    origins = sorted(dict(m.headers())[REPLAYED_FROM_HEADER] for m in messages)
    assert origins == [f"{dlq}/0/0".encode(), f"{dlq}/0/1".encode()]


def test_before_the_first_dead_letter_there_is_nothing_to_inspect_or_replay() -> None:
    missing = f"it.missing.{uuid.uuid4().hex}.dlq"
    assert inspect(DlqTopic(CLIENT, missing), limit=10, from_beginning=True) == []
    assert inspect(DlqTopic(CLIENT, missing), limit=10, from_beginning=False) == []
    report = replay(DlqTopic(CLIENT, missing), ledger=FakeReplayLedger(), dry_run=False)
    assert (report.scanned, report.replayed, report.skipped) == (0, (), 0)
    assert not kafka_admin(BOOTSTRAP).topic_exists(missing)  # looking did not create it


def test_watermarks_of_a_topic_just_created(topics: tuple[str, str]) -> None:
    original, dlq = topics
    admin = kafka_admin(BOOTSTRAP)
    assert admin.watermarks(original) == {0: Watermarks(0, 0), 1: Watermarks(0, 0)}
    assert admin.watermarks(dlq) == {0: Watermarks(0, 0)}


async def test_offsets_for_times_and_committed_offsets(topics: tuple[str, str]) -> None:
    original, dlq = topics
    producer = DlqProducer(CLIENT, topic=dlq)
    for offset in range(3):
        await producer.send(_dead_letter(original, offset), None)
    assert await producer.close(10) == 0
    admin = kafka_admin(BOOTSTRAP)
    assert admin.offsets_for_times(dlq, 0) == {0: 0}  # every message is newer: the first one
    far_future = int(time.time() * 1000) + 3_600_000
    assert admin.offsets_for_times(dlq, far_future) == {0: 3}  # none that recent: the end
    group = f"it-group-{uuid.uuid4().hex[:8]}"
    assert admin.committed(group, [(dlq, 0)]) == {(dlq, 0): None}
    assert admin.alter_committed(group, {(dlq, 0): 2}) == {}
    assert admin.committed(group, [(dlq, 0)]) == {(dlq, 0): 2}
    assert admin.active_members(group) == []


def _kcat(kcat: str, topic: str) -> str:
    """Every message of `topic` as kcat prints it: headers, a tab, the value."""
    return subprocess.run(
        [kcat, "-C", "-b", BOOTSTRAP, "-t", topic, "-o", "beginning", "-e", "-q",
         "-f", "%h\\t%s\\n"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip


async def test_kcat_shows_a_dead_letter_as_readable_json(topics: tuple[str, str]) -> None:
    """The ecosystem's tools read dead letters as they are: `kcat -C` prints their fields."""
    original, dlq = topics
    producer = DlqProducer(CLIENT, topic=dlq)
    record = _dead_letter(original, offset=7)
    await producer.send(record, record.original_key)
    assert await producer.close(10) == 0
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is missing: deploy/install.sh installs Debian's kcat package"
    (line,) = _kcat(kcat, dlq).splitlines()
    headers, value = line.split("\t", 1)
    assert "searchsync-dlq-format=json-v1" in headers
    letter = json.loads(value)
    assert letter["event_id"] == "evt-7" and letter["aggregate_id"] == "page-7"
    assert letter["source_revision"] == 8 and letter["operation"] == "UPSERT"
    assert letter["last_error_code"] == "ES_REJECTED" and letter["attempts"] == 5
    assert letter["first_failed_at"] == "2026-03-04T05:06:07.123456Z"
    assert (letter["original_topic"], letter["original_partition"]) == (original, 1)
    assert letter["original_offset"] == 7 and letter["projection_schema_version"] == 1
    assert json.loads(letter["payload"])["aggregate_id"] == "page-7"  # the original value, as text
