"""In-memory stand-ins for confluent-kafka's producer and consumer.

- `FakeProducer`: holds every delivery until the test releases it (or acknowledges at once).
- `FakeConsumer` (`searchsync.dlq.scan.ConsumerPort`): reads a `Log`
  (`tests.fakes.kafka_admin.FakeTopics`) from an assignment and commits to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

from confluent_kafka import KafkaError
from searchsync.types import TopicPartition


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
    _timestamp_ms: int = 0

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
        return (1, self._timestamp_ms)  # 1: TIMESTAMP_CREATE_TIME


class Log(Protocol):
    """What a `FakeConsumer` reads and commits to (`tests.fakes.kafka_admin.FakeTopics`)."""

    logs: dict[str, dict[int, list[tuple[bytes, list[tuple[str, bytes]]]]]]
    commits: dict[tuple[str, TopicPartition], int]

    def timestamp_ms(self, tp: TopicPartition, offset: int) -> int: ...


class FakeConsumer:
    """Reads a `Log` from an assignment; commits go to the config's group."""

    def __init__(self, topics: Log, config: dict[str, Any]) -> None:
        self._t = topics
        self.config = config
        self.queue: list[FakeMessage] = []
        self.closed = False

    def assign(self, partitions: list[TopicPartition]) -> None:
        streams = []
        for tp in partitions:
            log = self._t.logs[tp.topic][tp.partition]
            stream = [
                FakeMessage(
                    tp.topic,
                    tp.partition,
                    o,
                    log[o][0],
                    log[o][1],
                    _timestamp_ms=self._t.timestamp_ms((tp.topic, tp.partition), o),
                )
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
