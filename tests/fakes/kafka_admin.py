"""The `KafkaAdmin` fake (`FakeAdmin`) over `FakeTopics`, a Kafka cluster in memory.

`FakeTopics` holds topics and group commits; the admins, `FakeConsumer`s and `FakeProducer`s it
hands out all see the same data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from searchsync.kafka.admin import Watermarks
from searchsync.types import TopicPartition

from tests.fakes.kafka_clients import FakeConsumer, FakeProducer


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
    admin_timeouts: list[float | None] = field(default_factory=list)  # each admin's timeout_s
    altered: list[tuple[str, dict[TopicPartition, int]]] = field(default_factory=list)
    commit_metadata: dict[tuple[str, TopicPartition], str] = field(default_factory=dict)
    deleted_groups: list[str] = field(default_factory=list)
    stamps: dict[TopicPartition, list[int]] = field(default_factory=dict)  # see timestamp_ms
    delivery_error: Any = None
    fail_with: BaseException | None = None  # every admin call raises it
    ids: dict[str, str] = field(default_factory=dict)  # topic ids (default: "id-<topic>")

    def topic(self, name: str, *partitions: list[bytes], headers: Any = ()) -> None:
        self.logs[name] = {
            p: [(value, list(headers)) for value in values] for p, values in enumerate(partitions)
        }

    def timestamp_ms(self, tp: TopicPartition, offset: int) -> int:
        """A message's timestamp: as `stamps` gives it, else 10 * offset + partition ms."""
        given = self.stamps.get(tp)
        return given[offset] if given is not None else 10 * offset + tp[1]

    def admin(self, config: Mapping[str, Any], *, timeout_s: float | None = None) -> FakeAdmin:
        self.admin_configs.append(config)
        self.admin_timeouts.append(timeout_s)
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

    def topic_ids(self, topics: Sequence[str]) -> dict[str, str]:
        self._check()
        return {t: self._t.ids.get(t, f"id-{t}") for t in topics if t in self._t.logs}

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
        self._check()
        found = {}
        for p, log in self._t.logs[topic].items():
            stamp = self._t.timestamp_ms
            later = [o for o in range(len(log)) if stamp((topic, p), o) >= timestamp_ms]
            found[p] = later[0] if later else len(log)
        return found

    def active_members(self, group: str) -> list[str]:
        self._check()
        return list(self._t.members.get(group, []))

    def alter_committed(
        self,
        group: str,
        offsets: Mapping[TopicPartition, int],
        metadata: Mapping[TopicPartition, str] | None = None,
    ) -> dict[TopicPartition, str]:
        self._check()
        self._t.altered.append((group, dict(offsets)))
        self._t.commit_metadata.update({(group, tp): m for tp, m in (metadata or {}).items()})
        for tp, offset in offsets.items():
            self._t.commits[(group, tp)] = offset
        return {}

    def delete_group(self, group: str) -> bool:
        self._check()
        if self._t.members.get(group):
            raise KafkaException(KafkaError(KafkaError.NON_EMPTY_GROUP, f"{group} has members"))
        mine = [key for key in self._t.commits if key[0] == group]
        for key in mine:
            del self._t.commits[key]
        self._t.deleted_groups.append(group)
        return bool(mine)
