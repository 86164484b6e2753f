"""`ConfluentKafkaAdmin` over a fake AdminClient: the leader wait and the leadership retries."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from searchsync.errors import TransientError
from searchsync.kafka.admin import ConfluentKafkaAdmin, Watermarks

TOPIC = "searchsync.dlq"


class FakeClock:
    """Time moves only when the admin sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds


class FakeAdminClient:
    """Leaders appear after `leaderless_rounds` metadata calls; offsets fail `not_leader` times."""

    def __init__(self, *, leaderless_rounds: int = 0, not_leader: int = 0) -> None:
        self.leaderless_rounds = leaderless_rounds
        self.not_leader = not_leader
        self.metadata_calls = 0
        self.ends = {0: (3, 9), 1: (0, 4)}

    def list_topics(self, timeout: float) -> Any:
        self.metadata_calls += 1
        leader = -1 if self.metadata_calls <= self.leaderless_rounds else 1
        partitions = {p: SimpleNamespace(leader=leader, error=None) for p in self.ends}
        return SimpleNamespace(topics={TOPIC: SimpleNamespace(error=None, partitions=partitions)})

    def list_offsets(self, wanted: dict[TopicPartition, Any], **_: Any) -> dict[Any, Any]:
        out = {}
        for tp, spec in wanted.items():
            future: Future[Any] = Future()
            if self.not_leader > 0:
                self.not_leader -= 1
                future.set_exception(
                    KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))
                )
            else:
                low, high = self.ends[tp.partition]
                offset = low if "EARLIEST" in repr(spec).upper() else high
                future.set_result(SimpleNamespace(offset=offset))
            out[tp] = future
        return out


def _admin(client: FakeAdminClient, clock: FakeClock, timeout_s: float = 5.0) -> Any:
    return ConfluentKafkaAdmin(
        {}, timeout_s=timeout_s, client_factory=lambda _c: client, clock=clock, sleep=clock.sleep
    )


def test_watermarks_wait_for_every_partitions_leader_first() -> None:
    client, clock = FakeAdminClient(leaderless_rounds=3), FakeClock()
    assert _admin(client, clock).watermarks(TOPIC) == {0: Watermarks(3, 9), 1: Watermarks(0, 4)}
    assert client.metadata_calls == 4 and clock.sleeps == 3


def test_not_leader_answers_are_asked_again() -> None:
    client, clock = FakeAdminClient(not_leader=3), FakeClock()
    assert _admin(client, clock).watermarks(TOPIC) == {0: Watermarks(3, 9), 1: Watermarks(0, 4)}
    assert clock.sleeps >= 1


def test_a_leader_that_never_comes_is_a_transient_error_at_the_deadline() -> None:
    client, clock = FakeAdminClient(leaderless_rounds=10**9), FakeClock()
    with pytest.raises(TransientError) as caught:
        _admin(client, clock, timeout_s=2.0).watermarks(TOPIC)
    assert caught.value.code == "KAFKA_NO_LEADER" and "no leader" in caught.value.message
    assert clock.now == pytest.approx(2.0)


def test_not_leader_past_the_deadline_is_a_transient_error() -> None:
    client, clock = FakeAdminClient(not_leader=10**9), FakeClock()
    with pytest.raises(TransientError) as caught:
        _admin(client, clock, timeout_s=1.0).watermarks(TOPIC)
    assert caught.value.code == "KAFKA_NO_LEADER"


def test_other_errors_are_not_retried() -> None:
    client, clock = FakeAdminClient(), FakeClock()

    def refuse(*_: Any, **__: Any) -> Any:
        future: Future[Any] = Future()
        future.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
        return {TopicPartition(TOPIC, 0): future}

    client.list_offsets = refuse  # type: ignore[method-assign]
    with pytest.raises(KafkaException):
        _admin(client, clock).watermarks(TOPIC)
    assert clock.sleeps == 0


class _GroupDeleter:
    def __init__(self, error: int | None) -> None:
        self.error = error
        self.asked: list[list[str]] = []

    def delete_consumer_groups(self, groups: list[str], **_: Any) -> dict[str, Future[Any]]:
        self.asked.append(groups)
        future: Future[Any] = Future()
        if self.error is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(self.error)))
        return {groups[0]: future}


def test_delete_group_says_whether_the_group_existed() -> None:
    clock = FakeClock()
    for error, want in ((None, True), (KafkaError.GROUP_ID_NOT_FOUND, False)):
        client = _GroupDeleter(error)
        admin = ConfluentKafkaAdmin({}, client_factory=lambda _c, c=client: c, clock=clock)
        assert admin.delete_group("g.rebuild.v2") is want
        assert client.asked == [["g.rebuild.v2"]]


def test_delete_group_of_a_group_with_members_raises() -> None:
    client = _GroupDeleter(KafkaError.NON_EMPTY_GROUP)
    admin = ConfluentKafkaAdmin({}, client_factory=lambda _c: client)
    with pytest.raises(KafkaException):
        admin.delete_group("g")
