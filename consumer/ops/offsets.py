"""The consumer group's Kafka offsets: where it stands, and moving it to replay history.

Library code behind `searchsync offsets show` and `searchsync offsets reset`. A reset is refused
while the group has active members: moving the offsets of a running group would be overwritten by
its next commit, or race its in-flight work.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from consumer.config import Settings
from consumer.errors import InvalidRequest, OperationRefused

KAFKA_TIMEOUT_S: Final = 15.0
_ACTIVE_STATES: Final = frozenset({"STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING"})

Factory = Callable[[Settings], Any]


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One partition as the group sees it. `committed` is None when the group never committed;
    `lag` then counts from where the group would start (``auto_offset_reset``)."""

    topic: str
    partition: int
    committed: int | None
    low: int
    high: int
    lag: int


@dataclass(frozen=True, slots=True)
class ResetStep:
    topic: str
    partition: int
    current: int | None
    target: int


def subscribed_topics(consumer: Any, settings: Settings) -> list[str]:
    """The subscribed topics that exist now (a regex is matched against the cluster's topics)."""
    kafka = settings.kafka
    metadata = consumer.list_topics(timeout=KAFKA_TIMEOUT_S)
    if kafka.topic_regex is not None:
        pattern = re.compile(kafka.topic_regex)
        return sorted(t for t in metadata.topics if pattern.match(t))
    return [t for t in kafka.topics if t in metadata.topics]


def partition_offsets(
    consumer: Any, settings: Settings, topics: Sequence[str]
) -> list[PartitionOffsets]:
    """Committed offset, watermarks and lag of every partition of `topics` for the group.

    `consumer` is a ``confluent_kafka.Consumer`` built with the group's id (it never subscribes,
    so it does not join the group).
    """
    from confluent_kafka import TopicPartition

    metadata = consumer.list_topics(timeout=KAFKA_TIMEOUT_S)
    wanted = [TopicPartition(t, p) for t in topics for p in sorted(metadata.topics[t].partitions)]
    if not wanted:
        return []
    committed = consumer.committed(wanted, timeout=KAFKA_TIMEOUT_S)
    rows = []
    for position in committed:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(position.topic, position.partition), timeout=KAFKA_TIMEOUT_S
        )
        offset = position.offset if position.offset >= 0 else None
        if offset is not None:
            start = offset
        else:
            start = low if settings.kafka.auto_offset_reset == "earliest" else high
        rows.append(
            PartitionOffsets(
                position.topic, position.partition, offset, low, high, max(0, high - start)
            )
        )
    return sorted(rows, key=lambda r: (r.topic, r.partition))


def plan_reset(
    rows: Sequence[PartitionOffsets],
    to: str | int,
    *,
    topic: str | None = None,
    partition: int | None = None,
) -> list[ResetStep]:
    """Where each selected partition's offset goes; an offset outside [low, high] is refused."""
    selected = [
        r
        for r in rows
        if (topic is None or r.topic == topic) and (partition is None or r.partition == partition)
    ]
    if not selected:
        where = f"topic {topic}" if topic is not None else "the subscribed topics"
        which = f" partition {partition}" if partition is not None else ""
        raise InvalidRequest(f"no such partition: {where}{which}")
    steps = []
    for r in selected:
        if to == "earliest":
            target = r.low
        elif to == "latest":
            target = r.high
        elif isinstance(to, int) and r.low <= to <= r.high:
            target = to
        else:
            raise InvalidRequest(
                f"offset {to} is outside {r.topic}/{r.partition}'s range [{r.low}, {r.high}]"
            )
        steps.append(ResetStep(r.topic, r.partition, r.committed, target))
    return steps


def group_consumer(settings: Settings) -> Any:
    from confluent_kafka import Consumer

    kafka = settings.kafka
    return Consumer(
        {
            **kafka.client_config(),
            "group.id": kafka.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )


def admin_client(settings: Settings) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(settings.kafka.client_config())


def active_members(admin: Any, group: str) -> list[str]:
    """Client ids of the group's members; empty when nobody is consuming."""
    described = admin.describe_consumer_groups([group], request_timeout=KAFKA_TIMEOUT_S)
    description = described[group].result()
    members = [f"{m.client_id}@{m.host}" for m in description.members]
    state = getattr(description.state, "name", str(description.state))
    if not members and state in _ACTIVE_STATES:
        members = [f"(group state {state})"]
    return members


@dataclass(frozen=True, slots=True)
class ResetReport:
    group: str
    dry_run: bool
    active_members: tuple[str, ...]
    steps: tuple[ResetStep, ...]


def show(
    settings: Settings, *, consumer_factory: Factory = group_consumer
) -> list[PartitionOffsets]:
    """Committed offset, watermarks and lag of every subscribed partition for the group."""
    consumer = consumer_factory(settings)
    try:
        return partition_offsets(consumer, settings, subscribed_topics(consumer, settings))
    finally:
        consumer.close()


def reset(
    settings: Settings,
    to: str | int,
    *,
    topic: str | None = None,
    partition: int | None = None,
    dry_run: bool,
    consumer_factory: Factory = group_consumer,
    admin_factory: Factory = admin_client,
) -> ResetReport:
    """Move the group's offsets to `to` ("earliest", "latest" or an offset); plan only if dry_run.

    Raises `OperationRefused` while the group has active members (unless `dry_run`), and
    `InvalidRequest` for a partition or offset that does not exist.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    group = settings.kafka.group_id
    steps = plan_reset(
        show(settings, consumer_factory=consumer_factory), to, topic=topic, partition=partition
    )
    admin = admin_factory(settings)
    members = active_members(admin, group)
    if members and not dry_run:
        raise OperationRefused(
            f"group {group} has {len(members)} active member(s) ({', '.join(members)}): "
            "stop every `searchsync run` of this group, wait for the session to expire, "
            "then reset again"
        )
    if not dry_run:
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(s.topic, s.partition, s.target) for s in steps]
        )
        futures = admin.alter_consumer_group_offsets([request], request_timeout=KAFKA_TIMEOUT_S)
        for position in futures[group].result().topic_partitions:
            if position.error is not None:
                raise OperationRefused(
                    f"{position.topic}/{position.partition}: {position.error.str()}"
                )
    return ResetReport(group, dry_run, tuple(members), tuple(steps))
