"""Reading the DLQ topic for the operator commands: a bounded scan, the decode, the ledger marks.
A scan reads up to the end offsets taken when it starts, so it ends even while dead letters keep
coming."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import confluent_kafka

from searchsync.clock import Deadline
from searchsync.dlq.record import DLQ_FORMAT_HEADER, DlqRecord, decode_record
from searchsync.dlq.replays import ReplayEntry
from searchsync.errors import ErrorCode, PoisonMessage, TransientError
from searchsync.kafka.admin import AdminFactory, ConfluentKafkaAdmin, Watermarks
from searchsync.kafka.config import consumer_config, routed


class ConsumerPort(Protocol):
    """The slice of ``confluent_kafka.Consumer`` that the DLQ commands use to read."""

    def assign(self, partitions: list[Any]) -> None: ...
    def poll(self, timeout: float) -> Any: ...
    def close(self) -> None: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerPort]


def kafka_consumer(config: dict[str, Any]) -> ConsumerPort:
    return cast(ConsumerPort, confluent_kafka.Consumer(routed(config)))


@dataclass(frozen=True, slots=True)
class DlqEntry:
    """One dead letter where it sits in the DLQ, with what the replay ledger says about it."""

    partition: int
    offset: int
    timestamp: datetime | None  # the Kafka message timestamp (when it was dead-lettered)
    record: DlqRecord
    replays: tuple[ReplayEntry, ...] = ()  # every replay of this dead letter, oldest first
    from_replay: ReplayEntry | None = None  # the replay whose message failed again into this one

    @property
    def replayed(self) -> bool:
        return bool(self.replays)


@dataclass(frozen=True, slots=True)
class DlqTopic:
    """A DLQ topic as the operator commands read it: the Kafka client settings
    (``KafkaSettings.client_config()``), the topic's name, the client factories, and how long a
    scan may take."""

    config: Mapping[str, Any]
    name: str
    admin_factory: AdminFactory = ConfluentKafkaAdmin
    consumer_factory: ConsumerFactory = kafka_consumer
    timeout_s: float = 30.0

    @contextmanager
    def scan(self, tail: int | None = None) -> Iterator[Iterator[DlqEntry] | None]:
        """The entries up to the high watermarks taken now, from the low ones (or the last `tail`
        of each partition), read by a reader that assigns partitions and never commits; None
        while the topic does not exist."""
        admin = self.admin_factory(self.config, timeout_s=self.timeout_s)
        if not admin.topic_exists(self.name):
            yield None
            return
        ends = admin.watermarks(self.name)
        starts = {p: m.low if tail is None else max(m.low, m.high - tail) for p, m in ends.items()}
        reader = consumer_config(self.config, group_id=f"{self.name}.inspect", partition_eof=True)
        consumer = self.consumer_factory(reader)
        try:
            yield map(_entry, _read_to_end(consumer, self.name, starts, ends, self.timeout_s))
        finally:
            consumer.close()


def mark_replays(entries: Sequence[DlqEntry], ledger: Sequence[ReplayEntry]) -> list[DlqEntry]:
    """`entries` with their replays and, for a dead letter of a replayed message, its origin;
    `ledger`: the replays of their DLQ topic."""
    by_position: dict[tuple[int, int], list[ReplayEntry]] = {}
    by_target: dict[tuple[str, int, int], ReplayEntry] = {}
    for replay in ledger:
        by_position.setdefault((replay.dlq_partition, replay.dlq_offset), []).append(replay)
        if replay.replayed_to_offset is not None:
            target = (replay.replayed_to_topic, replay.replayed_to_partition)
            by_target[(*target, replay.replayed_to_offset)] = replay
    marked = []
    for entry in entries:
        r = entry.record
        origin = by_target.get((r.original_topic, r.original_partition, r.original_offset))
        replays = tuple(by_position.get((entry.partition, entry.offset), ()))
        marked.append(replace(entry, replays=replays, from_replay=origin))
    return marked


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


def _entry(message: Any) -> DlqEntry:
    """The dead letter in `message`; PoisonMessage(BAD_DLQ_RECORD) naming where, if it is none."""
    _kind, millis = message.timestamp()
    stamp = None if millis is None or millis < 0 else datetime.fromtimestamp(millis / 1e3, UTC)
    marker = dict(message.headers() or []).get(DLQ_FORMAT_HEADER)
    try:
        record = decode_record(message.value() or b"", marker)
    except PoisonMessage as exc:
        where = f"{message.topic()}/{message.partition()}/{message.offset()}"
        raise PoisonMessage(ErrorCode.BAD_DLQ_RECORD, f"{where}: {exc.message}") from exc
    return DlqEntry(message.partition(), message.offset(), stamp, record)
