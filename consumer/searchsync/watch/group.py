"""The consumer group as the broker sees it: members, lag and the oldest unfinished event, from
`KafkaAdmin` and a group-less reader that never commits (`KafkaPeek`), never joining the group."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka

from searchsync.clock import Deadline
from searchsync.config import Settings
from searchsync.dlq.scan import ConsumerFactory, kafka_consumer
from searchsync.kafka.admin import KafkaAdmin
from searchsync.kafka.config import consumer_config
from searchsync.ops.offsets import partition_offsets
from searchsync.types import TopicPartition


@dataclass(frozen=True, slots=True)
class PartitionView:
    """One partition: its lag, and the age in seconds of the message at the group's next offset
    (None when nothing is unfinished, or it could not be read in ``exporter.peek_timeout_s``)."""

    topic: str
    partition: int
    lag: int
    oldest_age_s: float | None


@dataclass(frozen=True, slots=True)
class GroupView:
    group: str
    members: int
    partitions: tuple[PartitionView, ...]

    @property
    def lag(self) -> int:
        """Events on the broker the group has not finished."""
        return sum(p.lag for p in self.partitions)

    @property
    def oldest_age_s(self) -> float:
        """Age of the oldest unfinished event over every partition: 0.0 when nothing is
        unfinished, NaN when events wait but none of their timestamps could be read."""
        known = [p.oldest_age_s for p in self.partitions if p.oldest_age_s is not None]
        return max(known, default=math.nan if self.lag else 0.0)


class KafkaPeek:
    """Reads Kafka timestamps (ms) of messages at given offsets with one group-less reader, kept
    for the life of the exporter."""

    def __init__(
        self,
        config: Mapping[str, Any],
        group: str,
        *,
        timeout_s: float,
        factory: ConsumerFactory | None = None,
    ) -> None:
        reader = consumer_config(config, group_id=f"{group}.exporter", partition_eof=True)
        self._consumer = (factory or kafka_consumer)(reader)
        self._timeout_s = timeout_s

    def timestamps(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The timestamp of the first message at or after each offset; missing when none came
        in time."""
        if not offsets:
            return {}
        self._consumer.assign(
            [confluent_kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        )
        found: dict[TopicPartition, int] = {}
        deadline = Deadline(time.monotonic, self._timeout_s)
        waiting = set(offsets)
        while waiting and not deadline.expired():
            message = self._consumer.poll(min(0.5, max(0.01, deadline.remaining())))
            if message is None:
                continue
            tp = (message.topic(), message.partition())
            if tp in waiting:
                waiting.discard(tp)
                if message.error() is None:
                    found[tp] = int(message.timestamp()[1])
        return found

    def close(self) -> None:
        self._consumer.close()


def observe_group(
    admin: KafkaAdmin, settings: Settings, peek: KafkaPeek, *, now_ms: int
) -> GroupView:
    """The group's members, and each subscribed partition's lag and oldest unfinished event."""
    group = settings.kafka.group_id
    members = len(admin.active_members(group))
    rows = partition_offsets(admin, settings)
    stamps = peek.timestamps({(r.topic, r.partition): r.high - r.lag for r in rows if r.lag})
    ages = {tp: max(0.0, (now_ms - stamp) / 1000) for tp, stamp in stamps.items()}
    views = (
        PartitionView(r.topic, r.partition, r.lag, ages.get((r.topic, r.partition))) for r in rows
    )
    return GroupView(group, members, tuple(views))
