"""In-memory stand-ins for confluent-kafka's clients and for the `KafkaAdmin` port.

- `FakeProducer`: holds every delivery until the test releases it (or acknowledges at once).
- `FakeTopics`: topics held in memory, with group commits; it hands out a `FakeAdmin`
  (`searchsync.kafka.admin.KafkaAdmin`) and `FakeConsumer`s (`searchsync.ops.dlq.ConsumerPort`) that
  all see the same data, plus `FakeProducer`s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError
from searchsync.dlq.record import DlqRecord
from searchsync.kafka.admin import Watermarks
from searchsync.types import Operation, ThinEvent, TopicPartition


@dataclass
class Produced:
    topic: str
    value: bytes | None
    key: bytes | None
    headers: list[tuple[str, bytes]] | None
    partition: int
    on_delivery: Callable[[Any, Any], None] | None


FIRST_PRODUCED_OFFSET = 1_000_000


@dataclass(frozen=True)
class Delivered:
    """The message a delivery report names: offsets count per (topic, partition) from
    `FIRST_PRODUCED_OFFSET`, above any original offset a test gives a dead letter."""

    _topic: str
    _partition: int
    _offset: int

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset


@dataclass
class FakeProducer:
    """Holds every delivery until the test releases it; poll() runs released callbacks."""

    config: dict[str, Any]
    produced: list[Produced] = field(default_factory=list)
    fail_produce: BaseException | None = None
    auto_ack: Any = None  # set to an error (or "ok") to deliver on the next poll without waiting
    polls: int = 0
    settled: int = 0
    _released: list[tuple[int, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        partition: int = -1,
        headers: list[tuple[str, bytes]] | None = None,
        on_delivery: Callable[[Any, Any], None] | None = None,
    ) -> None:
        if self.fail_produce is not None:
            raise self.fail_produce
        with self._lock:
            self.produced.append(Produced(topic, value, key, headers, partition, on_delivery))
            if self.auto_ack is not None:
                err = None if isinstance(self.auto_ack, str) else self.auto_ack
                self._released.append((len(self.produced) - 1, err))

    def release(self, index: int, err: Any = None) -> None:
        with self._lock:
            self._released.append((index, err))
        self._wake.set()

    def poll(self, timeout: float = -1) -> int:
        with self._lock:
            ready, self._released = self._released, []
            self.polls += 1
        for index, err in ready:
            produced = self.produced[index]
            assert produced.on_delivery is not None
            earlier = sum(
                1
                for p in self.produced[:index]
                if (p.topic, p.partition) == (produced.topic, produced.partition)
            )
            offset = FIRST_PRODUCED_OFFSET + earlier
            produced.on_delivery(err, Delivered(produced.topic, produced.partition, offset))
            with self._lock:
                self.settled += 1
        if not ready:
            self._wake.wait(timeout)
            self._wake.clear()
        return len(ready)

    def flush(self, timeout: float = -1) -> int:
        self.poll(0)
        with self._lock:
            return len(self.produced) - self.settled


EOF_ERROR = SimpleNamespace(code=lambda: KafkaError._PARTITION_EOF)


@dataclass
class FakeMessage:
    _topic: str
    _partition: int
    _offset: int
    _value: bytes | None
    _headers: list[tuple[str, bytes]] | None = None
    _error: Any = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers

    def error(self) -> Any:
        return self._error

    def timestamp(self) -> tuple[int, int]:
        return (1, self._offset * 10 + self._partition)


@dataclass
class FakeTopics:
    """Topics as lists of (value, headers) per partition; committed offsets per (group, tp)."""

    logs: dict[str, dict[int, list[tuple[bytes, list[tuple[str, bytes]]]]]] = field(
        default_factory=dict
    )
    commits: dict[tuple[str, TopicPartition], int] = field(default_factory=dict)
    low: dict[TopicPartition, int] = field(
        default_factory=dict
    )  # first offset still held (default 0)
    members: dict[str, list[str]] = field(default_factory=dict)
    consumers: list[FakeConsumer] = field(default_factory=list)
    producers: list[FakeProducer] = field(default_factory=list)
    admin_configs: list[Mapping[str, Any]] = field(default_factory=list)
    altered: list[tuple[str, dict[TopicPartition, int]]] = field(default_factory=list)
    deleted_groups: list[str] = field(default_factory=list)
    delivery_error: Any = None
    fail_with: BaseException | None = None  # every admin call raises it

    def topic(self, name: str, *partitions: list[bytes], headers: Any = ()) -> None:
        self.logs[name] = {
            p: [(value, list(headers)) for value in values] for p, values in enumerate(partitions)
        }

    def admin(self, config: Mapping[str, Any]) -> FakeAdmin:
        self.admin_configs.append(config)
        return FakeAdmin(self)

    def consumer(self, config: dict[str, Any]) -> FakeConsumer:
        self.consumers.append(FakeConsumer(self, config))
        return self.consumers[-1]

    def producer(self, config: dict[str, Any]) -> FakeProducer:
        fake = FakeProducer(config, auto_ack=self.delivery_error or "ok")
        self.producers.append(fake)
        return fake

    def committed_by(self, group: str) -> dict[TopicPartition, int]:
        return {tp: o for (g, tp), o in self.commits.items() if g == group}


class FakeAdmin:
    """`KafkaAdmin` over `FakeTopics`."""

    def __init__(self, topics: FakeTopics) -> None:
        self._t = topics

    def _check(self) -> None:
        if self._t.fail_with is not None:
            raise self._t.fail_with

    def topics(self) -> list[str]:
        self._check()
        return sorted(self._t.logs)

    def topic_exists(self, topic: str) -> bool:
        self._check()
        return topic in self._t.logs

    def watermarks(self, topic: str) -> dict[int, Watermarks]:
        self._check()
        return {
            p: Watermarks(self._t.low.get((topic, p), 0), len(log))
            for p, log in self._t.logs[topic].items()
        }

    def committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        self._check()
        return {tp: self._t.commits.get((group, tp)) for tp in partitions}

    def offsets_for_times(self, topic: str, timestamp_ms: int) -> dict[int, int]:
        """As `FakeMessage.timestamp` stamps them: offset o of partition p at 10*o + p ms."""
        self._check()
        found = {}
        for p, log in self._t.logs[topic].items():
            later = [o for o in range(len(log)) if 10 * o + p >= timestamp_ms]
            found[p] = later[0] if later else len(log)
        return found

    def active_members(self, group: str) -> list[str]:
        self._check()
        return list(self._t.members.get(group, []))

    def alter_committed(
        self, group: str, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, str]:
        self._check()
        self._t.altered.append((group, dict(offsets)))
        for tp, offset in offsets.items():
            self._t.commits[(group, tp)] = offset
        return {}

    def delete_group(self, group: str) -> bool:
        self._check()
        if self._t.members.get(group):
            raise RuntimeError(f"group {group} has active members")
        mine = [key for key in self._t.commits if key[0] == group]
        for key in mine:
            del self._t.commits[key]
        self._t.deleted_groups.append(group)
        return bool(mine)


class FakeConsumer:
    """Reads `FakeTopics` from an assignment; commits go to the config's group."""

    def __init__(self, topics: FakeTopics, config: dict[str, Any]) -> None:
        self._t = topics
        self.config = config
        self.queue: list[FakeMessage] = []
        self.closed = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        streams = []
        for tp in partitions:
            log = self._t.logs[tp.topic][tp.partition]
            stream = [
                FakeMessage(tp.topic, tp.partition, o, log[o][0], log[o][1])
                for o in range(tp.offset, len(log))
            ]
            eof = FakeMessage(tp.topic, tp.partition, -1, None, None, EOF_ERROR)
            streams.append([*stream, eof])
        while any(streams):  # interleave partitions like a real consumer might
            for stream in streams:
                if stream:
                    self.queue.append(stream.pop(0))

    def poll(self, timeout: float) -> FakeMessage | None:
        return self.queue.pop(0) if self.queue else None

    def commit(self, *, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert asynchronous is False
        for tp in offsets:
            self._t.commits[(self.config["group.id"], (tp.topic, tp.partition))] = tp.offset

    def close(self) -> None:
        self.closed = True


DLQ_T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
"""When `dead_letter()`'s record first failed."""


def dead_letter(**changes: Any) -> DlqRecord:
    """A sample dead letter of page-1 from outbox.event.wiki_page/1/42; `changes` override."""
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
        first_failed_at=DLQ_T0,
        last_failed_at=DLQ_T0 + timedelta(seconds=30),
        event=ThinEvent("e1", "wiki_page", "page-1", Operation.UPSERT, 7),
        projection_schema_version=2,
    )
    return replace(base, **changes)
