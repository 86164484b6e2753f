"""The DLQ against a real broker: acknowledged send, inspect read-back, replay to the origin."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from consumer.errors import ConfigError, TransientError
from consumer.events import encode_json
from consumer.stream.dlq import REPLAYED_FROM_HEADER, DlqProducer, DlqRecord, inspect, replay
from consumer.types import Operation, ThinEvent

pytestmark = pytest.mark.integration

BOOTSTRAP = "127.0.0.1:9092"
T0 = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


@pytest.fixture
def topics() -> Iterator[tuple[str, str]]:
    """A fresh (original topic with 2 partitions, DLQ topic) pair, deleted afterwards."""
    suffix = uuid.uuid4().hex[:12]
    original, dlq = f"it.outbox.event.{suffix}", f"it.searchsync.{suffix}.dlq"
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    created = admin.create_topics(
        [NewTopic(original, num_partitions=2, replication_factor=1), NewTopic(dlq, 1, 1)],
        operation_timeout=20,
    )
    for future in created.values():
        future.result(timeout=30)
    _wait_for_metadata(admin, [original, dlq])
    yield original, dlq
    for future in admin.delete_topics([original, dlq], operation_timeout=20).values():
        future.result(timeout=30)


def _wait_for_metadata(admin: AdminClient, names: list[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=5).topics
        if all(name in listed and listed[name].error is None for name in names):
            return
        time.sleep(0.1)
    raise AssertionError(f"topics {names} never appeared in metadata")


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
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"it-{uuid.uuid4().hex}"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        return int(high)
    finally:
        consumer.close()


def _read_all(topic: str, partitions: int, expected: int) -> list[Any]:
    """Every message of `topic` until `expected` arrived (deadline, not a sleep)."""
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"it-{uuid.uuid4().hex}"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    found: list[Any] = []
    deadline = time.monotonic() + 30
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

    assert inspect(BOOTSTRAP, dlq, limit=10, from_beginning=True) == [record]
    assert inspect(BOOTSTRAP, dlq, limit=10, from_beginning=False) == [record]


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

    dry = replay(BOOTSTRAP, dlq, dry_run=True)
    assert dry.replayed == tuple(dead)
    assert _high_watermark(original, 0) == _high_watermark(original, 1) == 0

    first = replay(BOOTSTRAP, dlq, dry_run=False, limit=1)
    assert first.replayed == (dead[0],)
    second = replay(BOOTSTRAP, dlq, dry_run=False)  # resumes after the committed first record
    assert second.replayed == (dead[1],)
    assert replay(BOOTSTRAP, dlq, dry_run=False).scanned == 0

    messages = _read_all(original, partitions=2, expected=2)
    got = {(m.partition(), m.key(), m.value()) for m in messages}
    assert got == {(1, b"page-3", dead[0].payload), (0, None, poison.payload)}
    origins = sorted(dict(m.headers())[REPLAYED_FROM_HEADER] for m in messages)
    assert origins == [f"{dlq}/0/0".encode(), f"{dlq}/0/1".encode()]


def test_inspect_of_a_missing_topic_fails_loudly() -> None:
    with pytest.raises(ConfigError):
        inspect(BOOTSTRAP, f"it.missing.{uuid.uuid4().hex}", limit=1, from_beginning=True)
