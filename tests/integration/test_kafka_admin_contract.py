"""The Kafka admin contract (tests/contract; there against the fake, in
tests/unit/test_kafka_admin_contract.py) through `ConfluentKafkaAdmin` on a real broker.

Every case makes its own uuid-named topics and groups; topics and groups are deleted afterwards.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import pytest
from confluent_kafka import Consumer, Producer

from tests.contract.kafka_admin_contract import KAFKA_ADMIN_CASES, KafkaBackend
from tests.integration.conftest import KAFKA
from tests.integration.kafkatools import TIMEOUT_S, fresh_topics, kafka_admin
from tests.timing import deadline as deadline_after

pytestmark = pytest.mark.integration


class RealKafkaBackend:
    def __init__(self, stack: ExitStack) -> None:
        self.admin = kafka_admin(KAFKA)
        self._stack = stack
        self._prefix = f"it.kadmin.{uuid.uuid4().hex[:12]}"
        self._count = 0
        self.names: list[str] = []

    def fresh_name(self) -> str:
        self._count += 1
        self.names.append(f"{self._prefix}.{self._count}")
        return self.names[-1]

    def topic(self, stamps: Sequence[Sequence[int]]) -> str:
        name = self.fresh_name()
        self._stack.enter_context(fresh_topics(KAFKA, [(name, len(stamps))]))
        producer = Producer({"bootstrap.servers": KAFKA})
        for partition, part in enumerate(stamps):
            for stamp in part:
                producer.produce(name, value=b"x", partition=partition, timestamp=stamp)
        assert producer.flush(TIMEOUT_S) == 0
        return name

    @contextmanager
    def member(self, group: str, topic: str) -> Iterator[None]:
        consumer = Consumer(
            {"bootstrap.servers": KAFKA, "group.id": group, "enable.auto.commit": False}
        )
        assigned: list[object] = []
        consumer.subscribe([topic], on_assign=lambda _c, parts: assigned.extend(parts))
        try:
            deadline = deadline_after(TIMEOUT_S)
            while not assigned:
                assert time.monotonic() < deadline, f"no assignment in {group} within {TIMEOUT_S}s"
                consumer.poll(0.2)
            yield
        finally:
            consumer.close()


@pytest.fixture
def backend() -> Iterator[RealKafkaBackend]:
    with ExitStack() as stack:
        real = RealKafkaBackend(stack)
        yield real
        for name in real.names:  # the groups; a topic's name is no group and answers False
            real.admin.delete_group(name)


@pytest.mark.parametrize("case", KAFKA_ADMIN_CASES, ids=lambda case: case.__name__)
def test_kafka_admin_contract_on_kafka(
    case: Callable[[KafkaBackend], None], backend: RealKafkaBackend
) -> None:
    case(backend)
