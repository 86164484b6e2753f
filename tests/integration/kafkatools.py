"""Small Kafka helpers for integration tests: read a topic from "now" with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Message, TopicPartition


class TopicTail:
    """Assigned to every partition of `topic` at its current end, before the test writes anything.

    Reading from the end offsets taken up front (instead of `auto.offset.reset=latest` after a
    subscribe) cannot miss an event produced between the subscribe and the assignment.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"searchsync-test-tail-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )
        meta = self._consumer.list_topics(topic, timeout=10)
        partitions = meta.topics[topic].partitions
        assignment = []
        for p in partitions:
            tp = TopicPartition(topic, p)
            _low, high = self._consumer.get_watermark_offsets(tp, timeout=10)
            assignment.append(TopicPartition(topic, p, high))
        self._consumer.assign(assignment)

    def read_until(self, done: Callable[[list[Message]], bool], timeout: float) -> list[Message]:
        """Collect messages until `done(messages)` holds; fail at the deadline."""
        seen: list[Message] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self._consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    seen.append(m)
            if done(seen):
                return seen
        raise AssertionError(f"condition not met within {timeout}s; saw {len(seen)} messages")

    def close(self) -> None:
        self._consumer.close()
