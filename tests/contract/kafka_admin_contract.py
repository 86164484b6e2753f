"""The `KafkaAdmin` contract.

Every case takes a `KafkaBackend` and runs unchanged against the fake (tests/unit) and a real
broker (tests/integration). Message timestamps are the cases' own, set when a topic is made.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import pytest
from confluent_kafka import KafkaError, KafkaException
from searchsync.kafka.admin import KafkaAdmin, Watermarks

T0 = 1_700_000_000_000  # ms; the first message's timestamp


class KafkaBackend(Protocol):
    """A Kafka cluster under test: the port plus a way to make topics and group members."""

    admin: KafkaAdmin

    def fresh_name(self) -> str:
        """A topic or group name no other case uses."""
        ...

    def topic(self, stamps: Sequence[Sequence[int]]) -> str:
        """A new topic with one partition per entry of `stamps`: partition p holds one message
        per timestamp (ms) in `stamps[p]`, in that order."""
        ...

    def member(self, group: str, topic: str) -> AbstractContextManager[None]:
        """A consumer of `topic` that has joined `group` while the context is open."""
        ...


def topics_lists_a_new_topic_and_asking_creates_none(h: KafkaBackend) -> None:
    topic = h.topic([[T0], []])
    assert topic in h.admin.topics()
    assert h.admin.topic_exists(topic)
    missing = h.fresh_name()
    assert not h.admin.topic_exists(missing)
    assert missing not in h.admin.topics()


def watermarks_cover_every_partition(h: KafkaBackend) -> None:
    topic = h.topic([[T0, T0 + 1, T0 + 2], []])
    assert h.admin.watermarks(topic) == {0: Watermarks(0, 3), 1: Watermarks(0, 0)}


def committed_is_none_until_altered(h: KafkaBackend) -> None:
    topic = h.topic([[T0, T0 + 1, T0 + 2], [T0]])
    group = h.fresh_name()
    both = [(topic, 0), (topic, 1)]
    assert h.admin.committed(group, both) == {(topic, 0): None, (topic, 1): None}
    assert h.admin.committed(group, []) == {}
    assert h.admin.alter_committed(group, {(topic, 0): 2}) == {}
    assert h.admin.committed(group, both) == {(topic, 0): 2, (topic, 1): None}
    assert h.admin.alter_committed(group, {(topic, 0): 1, (topic, 1): 1}) == {}
    assert h.admin.committed(group, both) == {(topic, 0): 1, (topic, 1): 1}


def offsets_for_times_finds_the_first_message_at_or_after(h: KafkaBackend) -> None:
    topic = h.topic([[T0, T0 + 1000, T0 + 2000], [T0 + 500]])
    at = h.admin.offsets_for_times
    assert at(topic, T0 - 1) == {0: 0, 1: 0}
    assert at(topic, T0) == {0: 0, 1: 0}
    assert at(topic, T0 + 600) == {0: 1, 1: 1}  # partition 1: every message older, the end
    assert at(topic, T0 + 1000) == {0: 1, 1: 1}
    assert at(topic, T0 + 10_000) == {0: 3, 1: 1}


def active_members_while_a_member_consumes(h: KafkaBackend) -> None:
    topic = h.topic([[T0]])
    group = h.fresh_name()
    assert h.admin.active_members(group) == []
    with h.member(group, topic):
        assert len(h.admin.active_members(group)) == 1
        with pytest.raises(KafkaException) as refused:
            h.admin.delete_group(group)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    assert h.admin.active_members(group) == []


def delete_group_drops_its_offsets(h: KafkaBackend) -> None:
    topic = h.topic([[T0, T0 + 1]])
    group = h.fresh_name()
    assert h.admin.delete_group(group) is False
    assert h.admin.alter_committed(group, {(topic, 0): 1}) == {}
    assert h.admin.delete_group(group) is True
    assert h.admin.committed(group, [(topic, 0)]) == {(topic, 0): None}
    assert h.admin.delete_group(group) is False


KAFKA_ADMIN_CASES: list[Callable[[KafkaBackend], None]] = [
    topics_lists_a_new_topic_and_asking_creates_none,
    watermarks_cover_every_partition,
    committed_is_none_until_altered,
    offsets_for_times_finds_the_first_message_at_or_after,
    active_members_while_a_member_consumes,
    delete_group_drops_its_offsets,
]
