"""Small Kafka helpers for integration tests: end offsets, fresh topics, a topic's tail.

Offsets come from `searchsync.kafka.admin.ConfluentKafkaAdmin`, which waits (with a deadline) for
every partition's leader first: right after a topic is created, a broker may still answer
``NOT_LEADER_FOR_PARTITION``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from confluent_kafka import Consumer, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from searchsync.clock import Deadline
from searchsync.kafka.admin import ConfluentKafkaAdmin

from tests.timing import deadline as deadline_after

TIMEOUT_S = 30.0


def kafka_admin(bootstrap: str) -> ConfluentKafkaAdmin:
    return ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}, timeout_s=TIMEOUT_S)


def high_watermark(bootstrap: str, topic: str, partition: int) -> int:
    """The offset the next message of `topic`/`partition` will get."""
    return kafka_admin(bootstrap).watermarks(topic)[partition].high


@contextmanager
def fresh_topics(bootstrap: str, topics: Sequence[tuple[str, int]]) -> Iterator[None]:
    """Create `topics` (name, partitions), wait until every partition has a leader, delete after."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    created = client.create_topics(
        [NewTopic(name, num_partitions=n, replication_factor=1) for name, n in topics],
        operation_timeout=20,
    )
    for future in created.values():
        future.result(timeout=TIMEOUT_S)
    admin = kafka_admin(bootstrap)
    for name, _ in topics:
        admin.wait_for_leaders(name, Deadline(time.monotonic, TIMEOUT_S))
    try:
        yield
    finally:
        deleted = client.delete_topics([name for name, _ in topics], operation_timeout=20)
        for future in deleted.values():
            future.result(timeout=TIMEOUT_S)


class TopicTail:
    """Assigned to every partition of `topic` at its current end, before the test writes anything.

    Reading from the end offsets taken up front (instead of `auto.offset.reset=latest` after a
    subscribe) cannot miss an event produced between the subscribe and the assignment.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        marks = kafka_admin(bootstrap).watermarks(topic)
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"searchsync-test-tail-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )
        self._consumer.assign([TopicPartition(topic, p, m.high) for p, m in marks.items()])

    def read_until(self, done: Callable[[list[Message]], bool], timeout: float) -> list[Message]:
        """Collect messages until `done(messages)` holds; fail at the deadline."""
        seen: list[Message] = []
        deadline = deadline_after(timeout)
        while time.monotonic() < deadline:
            for m in self._consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    seen.append(m)
            if done(seen):
                return seen
        raise AssertionError(f"condition not met within {timeout}s; saw {len(seen)} messages")

    def close(self) -> None:
        self._consumer.close()
