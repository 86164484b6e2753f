"""The Kafka admin contract (tests/contract) against `FakeAdmin`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import pytest

from tests.contract.kafka_admin_contract import KAFKA_ADMIN_CASES, KafkaBackend
from tests.fakes.kafka_admin import FakeTopics


class FakeKafkaBackend:
    def __init__(self) -> None:
        self.topics = FakeTopics()
        self.admin = self.topics.admin({})
        self._names = itertools.count(1)

    def fresh_name(self) -> str:
        return f"contract.{next(self._names)}"

    def topic(self, stamps: Sequence[Sequence[int]]) -> str:
        name = self.fresh_name()
        self.topics.topic(name, *([b"x"] * len(part) for part in stamps))
        for partition, part in enumerate(stamps):
            self.topics.stamps[(name, partition)] = list(part)
        return name

    @contextmanager
    def member(self, group: str, topic: str) -> Iterator[None]:
        self.topics.members[group] = [f"contract-member@/127.0.0.1 ({topic})"]
        try:
            yield
        finally:
            del self.topics.members[group]


@pytest.mark.parametrize("case", KAFKA_ADMIN_CASES, ids=lambda case: case.__name__)
def test_kafka_admin_contract_on_the_fake(case: Callable[[KafkaBackend], None]) -> None:
    case(FakeKafkaBackend())
