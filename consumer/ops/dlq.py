"""Operator work on the dead letters: read them (`inspect`) and send them back (`replay`).

Blocking library functions behind `searchsync dlq inspect` and `searchsync dlq replay`. Both read
up to the end offsets taken when they start, so they end even while dead letters keep coming.

Before the first dead letter the DLQ topic does not exist (the consumer's producer creates it on
first write, or an operator does): that is not an error, there is simply nothing to show or replay.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import confluent_kafka

from consumer.errors import ErrorCode, PoisonMessage, TransientError
from consumer.kafka.admin import AdminFactory, ConfluentKafkaAdmin, KafkaAdmin, Watermarks
from consumer.kafka.config import consumer_config
from consumer.kafka.producer import (
    DeliveryFailed,
    DeliveryTimeout,
    ProducerFactory,
    ProducerPort,
    acknowledged,
    produce_and_wait,
)
from consumer.stream.dlq import (
    DLQ_FORMAT,
    DLQ_FORMAT_HEADER,
    REPLAYED_FROM_HEADER,
    DlqRecord,
    decode_record,
)
from consumer.stream.retry import Deadline

__all__ = ["ConsumerFactory", "ConsumerPort", "ReplayReport", "inspect", "replay"]


class ConsumerPort(Protocol):
    """The slice of ``confluent_kafka.Consumer`` that inspect and replay use to read."""

    def assign(self, partitions: list[Any]) -> None: ...
    def poll(self, timeout: float) -> Any: ...
    def commit(self, *, offsets: list[Any], asynchronous: bool) -> Any: ...
    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerPort]


def _kafka_consumer(config: dict[str, Any]) -> ConsumerPort:
    return cast(ConsumerPort, confluent_kafka.Consumer(config))


def _admin(config: Mapping[str, Any], timeout_s: float) -> KafkaAdmin:
    return ConfluentKafkaAdmin(config, timeout_s=timeout_s)


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay did (or, with `dry_run`, would do)."""

    dry_run: bool
    scanned: int
    replayed: tuple[DlqRecord, ...]
    skipped: int  # read but not matching the filters


def inspect(
    config: Mapping[str, Any],
    topic: str,
    *,
    limit: int,
    from_beginning: bool,
    timeout_s: float = 30.0,
    admin_factory: AdminFactory | None = None,
    consumer_factory: ConsumerFactory | None = None,
) -> list[DlqRecord]:
    """Read up to `limit` dead letters without committing anything.

    `config` is the Kafka client settings (``KafkaSettings.client_config()``). With
    `from_beginning=True` the oldest dead letters come back; otherwise the newest ones (the tail of
    every partition, merged by timestamp). No topic yet means no dead letters: an empty list.
    """
    if limit < 1:
        return []
    admin = (admin_factory or (lambda c: _admin(c, timeout_s)))(config)
    if not admin.topic_exists(topic):
        return []
    ends = admin.watermarks(topic)
    starts = {p: m.low if from_beginning else max(m.low, m.high - limit) for p, m in ends.items()}
    reader_config = consumer_config(config, group_id=f"{topic}.inspect", partition_eof=True)
    consumer = (consumer_factory or _kafka_consumer)(reader_config)
    found: list[tuple[int, int, int, DlqRecord]] = []
    try:
        for message in _read_to_end(consumer, topic, starts, ends, timeout_s):
            record = _decode_message(message)
            found.append((message.timestamp()[1], message.partition(), message.offset(), record))
            if from_beginning and len(found) >= limit:
                break
    finally:
        consumer.close()
    if not from_beginning:
        found.sort(key=lambda item: item[:3])
        found = found[-limit:]
    return [item[3] for item in found]


def replay(
    config: Mapping[str, Any],
    dlq_topic: str,
    *,
    dry_run: bool,
    event_id: str | None = None,
    error_code: str | None = None,
    limit: int | None = None,
    timeout_s: float = 30.0,
    admin_factory: AdminFactory | None = None,
    consumer_factory: ConsumerFactory | None = None,
    producer_factory: ProducerFactory | None = None,
) -> ReplayReport:
    """Re-produce dead letters' original payload and key to their original topic and partition.

    Reads the DLQ with the consumer group ``<dlq_topic>.replay`` from its committed offsets and
    commits a dead letter only after its re-produce was acknowledged, so an interrupted replay
    resumes where it stopped. Records skipped by a filter are not committed past (per partition),
    so a later unfiltered replay still sees them; replaying twice is harmless because the consumer
    writes with external versions. Do not run two replays of one DLQ at the same time.
    """
    empty = ReplayReport(dry_run=dry_run, scanned=0, replayed=(), skipped=0)
    group = f"{dlq_topic}.replay"
    admin = (admin_factory or (lambda c: _admin(c, timeout_s)))(config)
    if not admin.topic_exists(dlq_topic):
        return empty
    ends = admin.watermarks(dlq_topic)
    committed = admin.committed(group, [(dlq_topic, p) for p in ends])
    starts = {
        p: min(max(committed.get((dlq_topic, p)) or 0, m.low), m.high) for p, m in ends.items()
    }
    consumer = (consumer_factory or _kafka_consumer)(
        consumer_config(config, group_id=group, partition_eof=True)
    )
    producer = None if dry_run else acknowledged(config, producer_factory)
    replayed: list[DlqRecord] = []
    scanned = skipped = 0
    held: set[int] = set()  # partitions with a skipped record: commits stop there
    try:
        for message in _read_to_end(consumer, dlq_topic, starts, ends, timeout_s):
            scanned += 1
            record = _decode_message(message)
            wanted = (event_id is None or record.event_id == event_id) and (
                error_code is None or record.last_error_code == error_code
            )
            if not wanted:
                skipped += 1
                held.add(message.partition())
                continue
            replayed.append(record)
            if producer is not None:
                _replay_one(consumer, producer, message, record, dlq_topic, held, timeout_s)
            if limit is not None and len(replayed) >= limit:
                break
    finally:
        consumer.close()
        if producer is not None:
            producer.flush(timeout_s)
    return ReplayReport(dry_run=dry_run, scanned=scanned, replayed=tuple(replayed), skipped=skipped)


def _replay_one(
    consumer: ConsumerPort,
    producer: ProducerPort,
    message: Any,
    record: DlqRecord,
    dlq_topic: str,
    held: set[int],
    timeout_s: float,
) -> None:
    """Re-produce one dead letter, then commit past it unless its partition is held."""
    origin = f"{dlq_topic}/{message.partition()}/{message.offset()}"
    try:
        produce_and_wait(
            producer,
            record.original_topic,
            record.payload,
            record.original_key,
            partition=record.original_partition,
            headers=[(REPLAYED_FROM_HEADER, origin.encode())],
            timeout_s=timeout_s,
        )
    except DeliveryTimeout as exc:
        raise TransientError(ErrorCode.REPLAY_TIMEOUT, f"no acknowledgement for {origin}") from exc
    except DeliveryFailed as exc:
        raise TransientError(ErrorCode.REPLAY_FAILED, f"{origin}: {exc}") from exc
    if message.partition() not in held:
        position = confluent_kafka.TopicPartition(
            dlq_topic, message.partition(), message.offset() + 1
        )
        consumer.commit(offsets=[position], asynchronous=False)


def _read_to_end(
    consumer: ConsumerPort,
    topic: str,
    starts: Mapping[int, int],
    ends: Mapping[int, Watermarks],
    timeout_s: float,
) -> Iterator[Any]:
    """Yield the messages between `starts` and the high watermarks in `ends`, then stop."""
    pending = {p: ends[p].high for p, start in starts.items() if start < ends[p].high}
    if not pending:
        return
    consumer.assign([confluent_kafka.TopicPartition(topic, p, starts[p]) for p in pending])
    deadline = Deadline(time.monotonic, timeout_s)
    while pending:
        if deadline.expired():
            unread = sorted(pending)
            raise TransientError(
                ErrorCode.DLQ_READ_TIMEOUT, f"{topic}: partitions {unread} not read to end"
            )
        message = consumer.poll(timeout=0.5)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                pending.pop(message.partition(), None)
                continue
            raise TransientError(ErrorCode.DLQ_READ_FAILED, str(error))
        partition, offset = message.partition(), message.offset()
        if partition not in pending:
            continue
        if offset + 1 >= pending[partition]:
            del pending[partition]
        yield message


def _decode_message(message: Any) -> DlqRecord:
    headers = dict(message.headers() or [])
    marker = headers.get(DLQ_FORMAT_HEADER)
    where = f"{message.topic()}/{message.partition()}/{message.offset()}"
    if marker is not None and marker != DLQ_FORMAT:
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"{where}: unsupported DLQ format {marker!r}")
    try:
        return decode_record(message.value() or b"")
    except PoisonMessage as exc:
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"{where}: {exc.message}") from exc
