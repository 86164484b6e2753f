"""On the real broker: a partition paused by backpressure, revoked, and assigned back to the same
member is fetched again once the pipeline resumes what it still believes paused. librdkafka
keeps a pause across a revoke, so `KafkaIntake` resumes partitions on their way out; without it
the partition was never fetched again (found by the fault suite, tests/faults seed 21)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from searchsync.kafka.intake import KafkaIntake
from searchsync.types import TopicPartition

from tests.integration.conftest import KAFKA
from tests.timing import deadline as deadline_after

pytestmark = [pytest.mark.integration]


class Owned:
    def __init__(self) -> None:
        self.partitions: set[TopicPartition] = set()

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self.partitions |= set(partitions)

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        self.partitions -= set(partitions)


def _config(group: str) -> dict[str, object]:
    return {
        "bootstrap.servers": KAFKA,
        "group.id": group,
        "partition.assignment.strategy": "cooperative-sticky",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
    }


async def test_a_paused_partition_assigned_back_is_fetched_again() -> None:
    topic, group = f"it-pause-{uuid.uuid4().hex[:8]}", f"it-pause-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": KAFKA})  # kept alive until the future resolves
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    owned = Owned()
    a = KafkaIntake(_config(group), [topic], owned, revoke_timeout_s=10)
    await a.start()
    b = Consumer(_config(group))
    try:
        deadline = deadline_after(60)
        while len(owned.partitions) < 3:
            assert time.monotonic() < deadline, "the first member never got all 3 partitions"
            await a.consume(10, 0.2)
        paused = set(owned.partitions)
        await a.pause(sorted(paused))  # backpressure: every assigned partition
        b.subscribe([topic])
        while not b.assignment():  # the second member joins: a partition moves to it
            assert time.monotonic() < deadline, "the second member got nothing"
            await a.consume(10, 0.1)
            await asyncio.to_thread(b.poll, 0.1)
        moved = {(tp.topic, tp.partition) for tp in b.assignment()}
        paused -= moved  # what the pipeline forgets on revoke
        await asyncio.to_thread(b.close)
        while len(owned.partitions) < 3:  # ... and comes back when it leaves
            assert time.monotonic() < deadline, "the moved partition never came back"
            await a.consume(10, 0.2)
        await a.resume(sorted(paused))  # the pressure is gone: resume what it believes paused
        producer = Producer({"bootstrap.servers": KAFKA})
        for p in range(3):
            producer.produce(topic, partition=p, value=b"x")
        assert producer.flush(30) == 0
        fetched: set[int] = set()
        while len(fetched) < 3 and time.monotonic() < deadline + 30:
            fetched |= {m.partition for m in await a.consume(10, 0.2)}
        assert fetched == {0, 1, 2}, f"moved and back: {moved}, fetched: {fetched}"
    finally:
        await a.close()
