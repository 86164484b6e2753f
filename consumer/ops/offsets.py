"""The consumer group's Kafka offsets: where it stands, and moving it to replay history.

Library code behind `searchsync offsets show` and `searchsync offsets reset`. A reset is refused
while the group has active members: moving the offsets of a running group would be overwritten by
its next commit, or race its in-flight work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from consumer.config import Settings
from consumer.errors import InvalidRequest, OperationRefused
from consumer.kafka.admin import AdminFactory, ConfluentKafkaAdmin, KafkaAdmin


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


@dataclass(frozen=True, slots=True)
class ResetReport:
    group: str
    dry_run: bool
    active_members: tuple[str, ...]
    steps: tuple[ResetStep, ...]


def subscribed_topics(admin: KafkaAdmin, settings: Settings) -> list[str]:
    """The subscribed topics that exist now (a regex is matched against the cluster's topics)."""
    kafka = settings.kafka
    existing = admin.topics()
    if kafka.topic_regex is not None:
        pattern = re.compile(kafka.topic_regex)
        return sorted(t for t in existing if pattern.match(t))
    return [t for t in kafka.topics if t in existing]


def partition_offsets(
    admin: KafkaAdmin, settings: Settings, topics: Sequence[str]
) -> list[PartitionOffsets]:
    """Committed offset, watermarks and lag of every partition of `topics` for the group."""
    rows = []
    for topic in topics:
        marks = admin.watermarks(topic)
        committed = admin.committed(settings.kafka.group_id, [(topic, p) for p in marks])
        for partition, m in marks.items():
            offset = committed.get((topic, partition))
            if offset is not None:
                start = offset
            else:
                start = m.low if settings.kafka.auto_offset_reset == "earliest" else m.high
            rows.append(
                PartitionOffsets(topic, partition, offset, m.low, m.high, max(0, m.high - start))
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


def show(
    settings: Settings, *, admin_factory: AdminFactory = ConfluentKafkaAdmin
) -> list[PartitionOffsets]:
    """Committed offset, watermarks and lag of every subscribed partition for the group."""
    admin = admin_factory(settings.kafka.client_config())
    return partition_offsets(admin, settings, subscribed_topics(admin, settings))


def reset(
    settings: Settings,
    to: str | int,
    *,
    topic: str | None = None,
    partition: int | None = None,
    dry_run: bool,
    admin_factory: AdminFactory = ConfluentKafkaAdmin,
) -> ResetReport:
    """Move the group's offsets to `to` ("earliest", "latest" or an offset); plan only if dry_run.

    Raises `OperationRefused` while the group has active members (unless `dry_run`), and
    `InvalidRequest` for a partition or offset that does not exist.
    """
    group = settings.kafka.group_id
    admin = admin_factory(settings.kafka.client_config())
    rows = partition_offsets(admin, settings, subscribed_topics(admin, settings))
    steps = plan_reset(rows, to, topic=topic, partition=partition)
    members = admin.active_members(group)
    if members and not dry_run:
        raise OperationRefused(
            f"group {group} has {len(members)} active member(s) ({', '.join(members)}): "
            "stop every `searchsync run` of this group, wait for the session to expire, "
            "then reset again"
        )
    if not dry_run:
        failed = admin.alter_committed(group, {(s.topic, s.partition): s.target for s in steps})
        if failed:
            raise OperationRefused(
                "; ".join(f"{t}/{p}: {why}" for (t, p), why in sorted(failed.items()))
            )
    return ResetReport(group, dry_run, tuple(members), tuple(steps))
